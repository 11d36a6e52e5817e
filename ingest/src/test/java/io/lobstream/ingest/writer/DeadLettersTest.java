package io.lobstream.ingest.writer;

import io.lobstream.schema.DeadLetterTopic;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.processor.api.RecordMetadata;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.Optional;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/** What a dead letter carries: the original and why; never more than a broker with default limits takes. */
class DeadLettersTest {
    private static final Optional<RecordMetadata> ORIGIN = Optional.of(new RecordMetadata() {
        @Override
        public String topic() {
            return "lob.commands";
        }

        @Override
        public int partition() {
            return 3;
        }

        @Override
        public long offset() {
            return 42;
        }
    });

    @Test
    void aLetterCarriesTheOriginalWithWhyAndWhereFrom() {
        Headers own = new RecordHeaders().add("lob.write", bytes("w-1"));
        Record<Object, Object> letter = DeadLetters.letter(new Record<>(bytes("doc"), bytes("value"), 7L, own), ORIGIN, "invalid", "because");

        assertThat((byte[]) letter.key()).isEqualTo(bytes("doc"));
        assertThat((byte[]) letter.value()).isEqualTo(bytes("value"));
        assertThat(letter.timestamp()).isEqualTo(7L);
        assertThat(header(letter, "lob.write")).isEqualTo("w-1");
        assertThat(header(letter, DeadLetterTopic.KIND)).isEqualTo("invalid");
        assertThat(header(letter, DeadLetterTopic.REASON)).isEqualTo("because");
        assertThat(header(letter, DeadLetterTopic.ORIGIN_TOPIC)).isEqualTo("lob.commands");
        assertThat(header(letter, DeadLetterTopic.ORIGIN_PARTITION)).isEqualTo("3");
        assertThat(header(letter, DeadLetterTopic.ORIGIN_OFFSET)).isEqualTo("42");
        assertThat(letter.headers().lastHeader(DeadLetterTopic.VALUE_DROPPED)).isNull();
        // the same under Kafka Streams' own names (KIP-1034), as its dead letters carry them
        assertThat(header(letter, "__streams.errors.exception")).isEqualTo("io.lobstream.store.index.Rejection: invalid");
        assertThat(header(letter, "__streams.errors.message")).isEqualTo("because");
        assertThat(header(letter, "__streams.errors.topic")).isEqualTo("lob.commands");
        assertThat(header(letter, "__streams.errors.partition")).isEqualTo("3");
        assertThat(header(letter, "__streams.errors.offset")).isEqualTo("42");
    }

    /** A record just under Kafka's 1 MiB on lob.commands: its letter would be over it, refused at every try. */
    @Test
    void aValueThatWouldTakeTheLetterPastTheLimitStaysOnLobCommands() {
        Record<Object, Object> letter = DeadLetters.letter(new Record<>(bytes("doc"), new byte[1_040_000], 7L, new RecordHeaders()), ORIGIN,
                "crc-mismatch", "the value's CRC32C does not match");

        assertThat(letter.value()).isNull();
        assertThat(header(letter, DeadLetterTopic.VALUE_DROPPED)).isEqualTo("1040000");
        assertThat((byte[]) letter.key()).as("kept: a client matches its letters by key and offset").isEqualTo(bytes("doc"));
        assertThat(header(letter, DeadLetterTopic.ORIGIN_OFFSET)).isEqualTo("42");
    }

    @Test
    void aKeyPastTheLimitGoesToo() {
        Record<Object, Object> letter = DeadLetters.letter(new Record<>(new byte[1_100_000], bytes("v"), 7L, new RecordHeaders()), ORIGIN,
                "invalid", "a lobId over 65,535 bytes");

        assertThat(letter.key()).isNull();
        assertThat(letter.value()).isNull();
        assertThat(header(letter, DeadLetterTopic.KEY_DROPPED)).isEqualTo("1100000");
        assertThat(DeadLetters.BY_ORIGIN.partitions("lob.commands.dlq", null, null, letter.headers(), 8))
                .as("on its command's partition still, where a replay of it looks").contains(Set.of(3));
    }

    /** A letter goes to the partition numbered as its command's (of as many), or by Kafka's partitioner without an origin. */
    @Test
    void aLetterGoesToItsCommandsPartition() {
        Record<Object, Object> letter = DeadLetters.letter(new Record<>(bytes("doc"), bytes("v"), 7L, new RecordHeaders()), ORIGIN,
                "invalid", "why");
        assertThat(DeadLetters.BY_ORIGIN.partitions("lob.commands.dlq", letter.key(), letter.value(), letter.headers(), 8)).contains(Set.of(3));
        assertThat(DeadLetters.BY_ORIGIN.partitions("lob.commands.dlq", letter.key(), letter.value(), letter.headers(), 2)).contains(Set.of(1));
        Record<Object, Object> unknown = DeadLetters.letter(new Record<>(bytes("doc"), bytes("v"), 7L,
                new RecordHeaders().add(DeadLetterTopic.ORIGIN_PARTITION, bytes("5"))), Optional.empty(), "invalid", "why");
        assertThat(DeadLetters.BY_ORIGIN.partitions("lob.commands.dlq", unknown.key(), unknown.value(), unknown.headers(), 8))
                .as("a forged origin is not the letter's").isEmpty();
    }

    /**
     * Headers named like the letter's own, forged on a command: they used to be kept as the letter's, so a letter of a
     * few MB went to a producer that refuses it, and the task failed at that record at every try, for good.
     */
    @Test
    void headersNamedLikeTheLettersOwnAreNotTakenFromTheOriginal() {
        Headers forged = new RecordHeaders().add("lob.dlq.pad", new byte[2_000_000]).add(DeadLetterTopic.ORIGIN_OFFSET, bytes("999"))
                .add("__streams.errors.offset", bytes("999")).add("lob.write", bytes("w-9")).add("junk", new byte[600_000]).add("junk", new byte[600_000]);
        Record<Object, Object> letter = DeadLetters.letter(new Record<>(bytes("doc"), bytes("v"), 7L, forged), ORIGIN, "undecodable", "x");

        assertThat(letter.headers().lastHeader("lob.dlq.pad")).isNull();
        assertThat(letter.headers().headers(DeadLetterTopic.ORIGIN_OFFSET)).hasSize(1);
        assertThat(header(letter, DeadLetterTopic.ORIGIN_OFFSET)).isEqualTo("42");
        assertThat(letter.headers().headers("__streams.errors.offset")).hasSize(1);
        assertThat(header(letter, "__streams.errors.offset")).isEqualTo("42");
        assertThat(header(letter, "lob.write")).as("kept: its client learns the write was dead-lettered").isEqualTo("w-9");
        int bytes = 0;
        for (var h : letter.headers()) {
            bytes += h.key().length() + h.value().length;
        }
        assertThat(bytes).isLessThan(DeadLetters.MAX_LETTER_BYTES);
    }

    @Test
    void theOriginalsOwnHeadersGoLastWhenTheyAloneWouldPassTheLimit() {
        Headers own = new RecordHeaders().add("junk", new byte[1_100_000]);
        Record<Object, Object> letter = DeadLetters.letter(new Record<>(bytes("doc"), bytes("v"), 7L, own), ORIGIN, "invalid", "why");

        assertThat(letter.headers().lastHeader("junk")).isNull();
        assertThat(header(letter, DeadLetterTopic.KIND)).isEqualTo("invalid");
        assertThat(header(letter, DeadLetterTopic.ORIGIN_OFFSET)).isEqualTo("42");
        assertThat(header(letter, "__streams.errors.offset")).isEqualTo("42");
    }

    @Test
    void aLongReasonIsCut() {
        String reason = "x".repeat(70_000);
        Record<Object, Object> letter = DeadLetters.letter(new Record<>(bytes("doc"), bytes("v"), 7L, new RecordHeaders()), ORIGIN,
                "invalid", reason);

        assertThat(header(letter, DeadLetterTopic.REASON)).hasSize(DeadLetters.MAX_REASON_CHARS + 3).startsWith("xxx").endsWith("...");
    }

    private static String header(Record<Object, Object> r, String key) {
        return new String(r.headers().lastHeader(key).value(), StandardCharsets.UTF_8);
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
