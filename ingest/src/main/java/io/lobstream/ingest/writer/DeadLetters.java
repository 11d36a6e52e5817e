package io.lobstream.ingest.writer;

import io.lobstream.client.LobClient;
import io.lobstream.schema.DeadLetterTopic;
import io.lobstream.store.index.Rejection;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.streams.processor.StreamPartitioner;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.processor.api.RecordMetadata;

import java.nio.charset.StandardCharsets;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;

/**
 * Sends a record the writer cannot apply to the dead-letter topic: the original key and bytes
 * untouched, the reason and origin in headers ({@link DeadLetterTopic}). It is part of the task's transaction, so a
 * record is either applied or dead-lettered, once.
 */
public final class DeadLetters {
    static final String SINK = "dead-letters";
    /**
     * The most a dead letter carries, key, value and headers together: under Kafka's default limits
     * (a producer's max.request.size and a topic's max.message.bytes, 1 MiB), with room for the
     * batch's own bytes. A record just under the limit on lob.commands would otherwise make a dead
     * letter over it, which the broker refuses: the task would fail at every try, and the partition
     * stop for good. Over it, the original's value (and a key too long) stay where the origin headers
     * say: on lob.commands, which keeps every record (a reclaim's, up to 16 MiB, on lob.reclaim, for
     * its retention).
     */
    static final int MAX_LETTER_BYTES = 1_000_000;
    /** The longest reason a dead letter carries (one can quote a lobId of 64 KiB). */
    static final int MAX_REASON_CHARS = 1024;

    /**
     * Puts each letter on the dead-letter partition numbered as its origin's ({@code lob.commands} and {@code lob.reclaim}
     * have the same partitions), where a replay of that partition looks for it ({@code DeadLetterLog}). By key, as Kafka
     * would, a letter too big to keep its key would land on any partition, and the replay stop for want of it; so would
     * the letters of a producer that partitions {@code lob.commands} its own way.
     */
    static final StreamPartitioner<Object, Object> BY_ORIGIN = new StreamPartitioner<>() {
        @Override
        public Optional<Set<Integer>> partitions(String topic, Object key, Object value, Headers headers, int numPartitions) {
            OptionalInt origin = DeadLetterTopic.originPartition(headers);
            return origin.isPresent() ? Optional.of(Set.of(origin.getAsInt() % numPartitions)) : Optional.empty();
        }

        @Override
        public Optional<Set<Integer>> partitions(String topic, Object key, Object value, int numPartitions) {
            return Optional.empty(); // (Kafka Streams asks the one above)
        }
    };

    private DeadLetters() {
    }

    static void send(ProcessorContext<Object, Object> context, Record<byte[], byte[]> record, String kind, String reason,
                     WriterMetrics metrics) {
        context.forward(letter(record, context.recordMetadata(), kind, reason), SINK);
        metrics.deadLettered(kind, context.recordMetadata().map(RecordMetadata::topic).orElse("unknown"));
    }

    /**
     * The dead letter of {@code record}: its key and value, its headers, then why and where from. Headers of the original
     * named like the letter's own ({@code lob.dlq.*}, {@code __streams.errors.*}) are left out: no command of LobStream's
     * carries them ({@code redrive} strips them), and forged ones could not be told from the letter's, nor be dropped to
     * keep it under the limit.
     */
    static Record<Object, Object> letter(Record<byte[], byte[]> record, Optional<RecordMetadata> origin, String kind, String reason) {
        Headers headers = new RecordHeaders();
        for (Header h : record.headers()) {
            if (!DeadLetterTopic.isLetters(h.key())) {
                headers.add(h);
            }
        }
        byte[] why = bytes(reason.length() <= MAX_REASON_CHARS ? reason : reason.substring(0, MAX_REASON_CHARS) + "...");
        headers.add(DeadLetterTopic.KIND, bytes(kind));
        headers.add(DeadLetterTopic.REASON, why);
        headers.add(DeadLetterTopic.STREAMS_EXCEPTION, bytes(Rejection.class.getName() + ": " + kind));
        headers.add(DeadLetterTopic.STREAMS_MESSAGE, why);
        if (origin.isPresent()) {
            byte[] topic = bytes(origin.get().topic());
            byte[] partition = bytes(Integer.toString(origin.get().partition()));
            byte[] offset = bytes(Long.toString(origin.get().offset()));
            headers.add(DeadLetterTopic.ORIGIN_TOPIC, topic);
            headers.add(DeadLetterTopic.ORIGIN_PARTITION, partition);
            headers.add(DeadLetterTopic.ORIGIN_OFFSET, offset);
            headers.add(DeadLetterTopic.STREAMS_TOPIC, topic);
            headers.add(DeadLetterTopic.STREAMS_PARTITION, partition);
            headers.add(DeadLetterTopic.STREAMS_OFFSET, offset);
        }
        byte[] key = record.key();
        byte[] value = record.value();
        if (length(key) + length(value) + length(headers) > MAX_LETTER_BYTES) {
            headers.add(DeadLetterTopic.VALUE_DROPPED, bytes(Integer.toString(length(value))));
            value = null;
            if (length(key) + length(headers) > MAX_LETTER_BYTES) {
                headers.add(DeadLetterTopic.KEY_DROPPED, bytes(Integer.toString(length(key))));
                key = null;
            }
            if (length(headers) > MAX_LETTER_BYTES) { // the original's own headers: only the letter's, and its write's id, are kept
                Headers own = new RecordHeaders();
                Header write = headers.lastHeader(LobClient.WRITE_HEADER);
                if (write != null && length(write.value()) <= MAX_REASON_CHARS) {
                    own.add(write); // the client that sent it learns it was dead-lettered
                }
                for (Header h : headers) {
                    if (DeadLetterTopic.isLetters(h.key())) {
                        own.add(h);
                    }
                }
                headers = own;
            }
        }
        return new Record<>(key, value, record.timestamp(), headers);
    }

    private static int length(byte[] b) {
        return b == null ? 0 : b.length;
    }

    private static int length(Headers headers) {
        int n = 0;
        for (Header h : headers) {
            n += h.key().length() * 3 + length(h.value()) + 10; // a UTF-8 char takes 3 bytes at most; varints
        }
        return n;
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
