package io.lobstream.schema;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;

import java.nio.charset.StandardCharsets;
import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * {@code lob.commands.dlq} as its readers see it: the headers the writer adds to a dead letter (the original's key,
 * value and headers are kept as they were), and how far a reader must read to see every letter the writer group has
 * committed past. The contract between the writer that sends letters and the clients, replay and {@code redrive} that
 * read them.
 */
public final class DeadLetterTopic {
    /** What the names of the headers a dead letter adds begin with. */
    public static final String OWN = "lob.dlq.";
    /** Header: why the record was not applied, for people. */
    public static final String REASON = "lob.dlq.reason";
    /**
     * What the reason of an {@code invalid} letter says of a record on another partition than its key's (a producer's own
     * partitioner): {@code redrive} leaves those, which would land after their LOB's newer commands.
     */
    public static final String OFF_ITS_PARTITION = " belongs to partition ";
    /** Header: the kind of problem, for programs ({@code undecodable}, {@code invalid}, ...: README, Bad input). */
    public static final String KIND = "lob.dlq.kind";
    /** Headers: where the record was read from. */
    public static final String ORIGIN_TOPIC = "lob.dlq.topic";
    public static final String ORIGIN_PARTITION = "lob.dlq.partition";
    public static final String ORIGIN_OFFSET = "lob.dlq.offset";
    /** Header: the original value's length, on a dead letter sent without it (too large to carry). */
    public static final String VALUE_DROPPED = "lob.dlq.value.dropped";
    /** Header: the original key's length, on a dead letter sent without it. */
    public static final String KEY_DROPPED = "lob.dlq.key.dropped";

    /**
     * What the names begin with of the headers Kafka Streams' own dead letters carry (KIP-1034,
     * {@code errors.dead.letter.queue.topic.name}), which a letter carries too, so that tools made for those read it:
     * the origin, the reason as the message, and as the exception the kind, {@code io.lobstream.store.index.Rejection: KIND}.
     * There is no stack trace: nothing was thrown.
     */
    public static final String STREAMS_ERRORS = "__streams.errors.";
    public static final String STREAMS_EXCEPTION = "__streams.errors.exception";
    public static final String STREAMS_MESSAGE = "__streams.errors.message";
    public static final String STREAMS_TOPIC = "__streams.errors.topic";
    public static final String STREAMS_PARTITION = "__streams.errors.partition";
    public static final String STREAMS_OFFSET = "__streams.errors.offset";

    private DeadLetterTopic() {
    }

    /** Whether {@code headerKey} names a header a dead letter adds ({@link #OWN} or {@link #STREAMS_ERRORS}). */
    public static boolean isLetters(String headerKey) {
        return headerKey.startsWith(OWN) || headerKey.startsWith(STREAMS_ERRORS);
    }

    /**
     * The end of each of {@code partitions} of the dead-letter topic, records of open transactions included: what a
     * reader must read up to, with {@code read_committed}, to see every letter of the commands the writer group has
     * committed past so far. Not the committed end: a transaction's commit markers reach its partitions one by one, so
     * its offset commit can be visible while its letter is not yet; the letter was appended before the commit began,
     * so it lies below this end, and a {@code read_committed} consumer gets past that end only once it is decided.
     */
    public static Map<TopicPartition, Long> uncommittedEnd(Admin admin, Collection<TopicPartition> partitions)
            throws ExecutionException, InterruptedException, TimeoutException {
        Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
        partitions.forEach(tp -> latest.put(tp, OffsetSpec.latest()));
        Map<TopicPartition, Long> end = new HashMap<>();
        admin.listOffsets(latest, new ListOffsetsOptions(IsolationLevel.READ_UNCOMMITTED)).all().get(10, TimeUnit.SECONDS)
                .forEach((tp, info) -> end.put(tp, info.offset()));
        return end;
    }

    /** The last value of header {@code name} of {@code r}, a letter or a command, as text; null without one. */
    public static String header(ConsumerRecord<?, ?> r, String name) {
        return header(r.headers(), name);
    }

    private static String header(Headers headers, String name) {
        Header h = headers.lastHeader(name);
        return h == null || h.value() == null ? null : new String(h.value(), StandardCharsets.UTF_8);
    }

    /** A letter's {@link #ORIGIN_PARTITION}; none where it lacks one or it is no partition (a letter made by hand, or elsewhere). */
    public static OptionalInt originPartition(Headers letter) {
        String p = header(letter, ORIGIN_PARTITION);
        return p != null && p.matches("\\d{1,9}") ? OptionalInt.of(Integer.parseInt(p)) : OptionalInt.empty();
    }

    /** A letter's {@link #ORIGIN_OFFSET}; none where it lacks one or it is no offset. */
    public static OptionalLong originOffset(Headers letter) {
        String o = header(letter, ORIGIN_OFFSET);
        return o != null && o.matches("\\d{1,18}") ? OptionalLong.of(Long.parseLong(o)) : OptionalLong.empty();
    }
}
