package io.lobstream.ingest.replay;

import io.lobstream.schema.LobStreamConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.Arrays;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** A replay meets a command whose schema the registry does not have: was it dead-lettered, or is the registry wrong? */
class DeadLetterLogTest {
    private static final RuntimeException NOT_FOUND = new IllegalStateException("schema 99 not found");
    /** The hash of the key {@link #command} gives its records. */
    private static final int NO_KEY = Arrays.hashCode(new byte[0]);

    private static ConsumerRecord<byte[], byte[]> command(long offset, long timestamp) {
        return command(offset, timestamp, new byte[0]);
    }

    private static ConsumerRecord<byte[], byte[]> command(long offset, long timestamp, TimestampType type) {
        return command(offset, timestamp, type, new byte[0]);
    }

    private static ConsumerRecord<byte[], byte[]> command(long offset, long timestamp, byte[] value) {
        return command(offset, timestamp, TimestampType.LOG_APPEND_TIME, value);
    }

    private static ConsumerRecord<byte[], byte[]> command(long offset, long timestamp, TimestampType type, byte[] value) {
        return new ConsumerRecord<>("lob.commands", 3, offset, timestamp, type, 0, value.length, new byte[0], value,
                new RecordHeaders(), Optional.empty());
    }

    @Test
    void aCommandTheWriterDeadLetteredIsSkipped() {
        DeadLetterLog letters = new DeadLetterLog(Set.of(7L), Map.of(), new long[]{0}, 100, false);
        assertThatCode(() -> letters.requireLetter(command(7, 1_000), "http://r", NOT_FOUND)).doesNotThrowAnyException();
    }

    @Test
    void aCommandWithoutALetterWhileLettersOfItsTimeAreKeptStopsTheReplay() {
        DeadLetterLog letters = new DeadLetterLog(Set.of(7L), Map.of(), new long[]{500}, 100, false);
        assertThatThrownBy(() -> letters.requireLetter(command(8, 1_000), "http://r", NOT_FOUND)).isInstanceOf(IOException.class)
                .hasMessageContaining("lob.commands-3 offset 8").hasMessageContaining("http://r").hasMessageContaining("did not dead-letter");
    }

    /** On a dead-letter topic that compacts, a missing letter still stops the replay; its error names compaction too. */
    @Test
    void aMissingLetterOnACompactedTopicStopsTheReplayNamingCompaction() {
        DeadLetterLog letters = new DeadLetterLog(Set.of(7L), Map.of(), new long[]{500}, 100, false, DeadLetterLog.FROM_START,
                Optional.of("compact"));
        assertThatThrownBy(() -> letters.requireLetter(command(8, 1_000), "http://r", NOT_FOUND)).isInstanceOf(IOException.class)
                .hasMessageContaining("has no dead letter").hasMessageContaining("compaction took its letter")
                .hasMessageContaining("cleanup.policy=compact");
        assertThat(letters.compaction()).contains("compact");
        DeadLetterLog whole = new DeadLetterLog(Set.of(7L), Map.of(), new long[16], 100, true, DeadLetterLog.FROM_START,
                Optional.of("compact,delete"));
        assertThatThrownBy(() -> whole.requireLetterIfElsewhere(command(8, 1_000), 5, 16)).isInstanceOf(IOException.class)
                .hasMessageContaining("has no dead letter").hasMessageContaining("cleanup.policy=compact,delete");
    }

    @Test
    void aCommandOlderThanEveryLetterKeptCannotBeToldAndIsSkipped() {
        DeadLetterLog letters = new DeadLetterLog(Set.of(), Map.of(), new long[]{5_000}, 100, false);
        assertThatCode(() -> letters.requireLetter(command(8, 1_000), "http://r", NOT_FOUND)).doesNotThrowAnyException();
        DeadLetterLog allExpired = new DeadLetterLog(Set.of(), Map.of(), new long[]{Long.MAX_VALUE}, 100, false);
        assertThatCode(() -> allExpired.requireLetter(command(8, 1_000), "http://r", NOT_FOUND)).doesNotThrowAnyException();
    }

    /**
     * A command whose key hashes to another partition of the topic as it is now: dead-lettered (a producer's own
     * partitioner), or not decided yet, it is refused as the writer refuses it; applied by the writer, it was judged when
     * the topic had fewer partitions, and a replay that refused it would lose its LOB without a word.
     */
    @Test
    void aCommandOfAnotherPartitionTheWriterAppliedStopsTheReplay() {
        // co-partitioned, 16 each: the letter of a command whose key hashes elsewhere may be in any partition
        DeadLetterLog onePartition = new DeadLetterLog(Set.of(7L), Map.of(), new long[16], 100, false);
        assertThat(onePartition.settled(command(7, 1_000))).as("its letter is where the writer sends it").isTrue();
        assertThatCode(() -> onePartition.requireLetterIfElsewhere(command(7, 1_000), 5, 16)).doesNotThrowAnyException();
        assertThat(onePartition.settled(command(8, 1_000))).isFalse();
        assertThatThrownBy(() -> onePartition.requireLetterIfElsewhere(command(8, 1_000), 5, 16))
                .isInstanceOf(IllegalStateException.class);
        DeadLetterLog letters = new DeadLetterLog(Set.of(7L), Map.of(), new long[16], 100, true);
        assertThatCode(() -> letters.requireLetterIfElsewhere(command(7, 1_000), 5, 16)).doesNotThrowAnyException();
        assertThatCode(() -> letters.requireLetterIfElsewhere(command(100, 1_000), 5, 16)).doesNotThrowAnyException();
        assertThatThrownBy(() -> letters.requireLetterIfElsewhere(command(8, 1_000), 5, 16)).isInstanceOf(IOException.class)
                .hasMessageContaining("lob.commands-3 offset 8: its key hashes to partition 5 of the 16")
                .hasMessageContaining("Partitions were added");
    }

    /** A command past the writer group's committed offset is not decided yet: no letter proves anything. */
    @Test
    void aCommandTheWriterHasNotDecidedYetIsSkipped() {
        DeadLetterLog letters = new DeadLetterLog(Set.of(), Map.of(), new long[]{0}, 8, false);
        assertThatCode(() -> letters.requireLetter(command(8, 1_000), "http://r", NOT_FOUND)).doesNotThrowAnyException();
    }

    /**
     * The writer could not decode the command at 7 (a schema not registered yet, an op it did not know), and refused the
     * one at 10 as over its lob.value.max.bytes then: a replay that decodes them now, or has a higher limit, refuses them as
     * the writer did, with its kind and reason; one past what the writer has decided, another command at that offset (a
     * log made anew), or a refusal that depends on the tablespace alone (8), it judges itself.
     */
    @Test
    void aCommandTheWriterRefusedForItsReleaseOrSettingsIsRefusedByItsLetter() {
        byte[] value = {0, 0, 0, 0, 42, 1, 2};
        DeadLetterLog.Letter letter = new DeadLetterLog.Letter("undecodable", "cannot decode a LobCommand: no op X", NO_KEY, value.length,
                DeadLetterLog.Letter.crc32c(value));
        DeadLetterLog.Letter sentWithoutValue = new DeadLetterLog.Letter("undecodable", "r", NO_KEY, value.length, -1); // too large to carry
        DeadLetterLog.Letter tooLarge = new DeadLetterLog.Letter("too-large", "x would be 7 bytes, over lob.value.max.bytes 5",
                NO_KEY, value.length, DeadLetterLog.Letter.crc32c(value));
        DeadLetterLog letters = new DeadLetterLog(Set.of(7L, 8L, 9L, 10L, 120L),
                Map.of(7L, letter, 9L, sentWithoutValue, 10L, tooLarge, 120L, letter), new long[]{0}, 100, false);
        assertThat(letters.refusedAt(command(7, 1_000, value))).contains(letter);
        assertThat(letters.refusedAt(command(7, 1_000, new byte[]{0, 0, 0, 0, 42, 1, 3}))).isEmpty();
        assertThat(letters.refusedAt(command(8, 1_000, value))).isEmpty(); // another kind: the replay finds it itself
        assertThat(letters.refusedAt(command(9, 1_000, new byte[]{1, 2, 3, 4, 5, 6, 7}))).map(DeadLetterLog.Letter::reason).contains("r");
        assertThat(letters.refusedAt(command(9, 1_000, new byte[]{1, 2, 3}))).isEmpty();
        assertThat(letters.refusedAt(command(10, 1_000, value))).map(DeadLetterLog.Letter::kind).contains("too-large");
        assertThat(letters.refusedAt(command(120, 1_000, value))).isEmpty();
        DeadLetterLog otherKey = new DeadLetterLog(Set.of(9L), Map.of(9L, new DeadLetterLog.Letter("too-large", "r", NO_KEY + 1, value.length, -1)),
                new long[]{0}, 100, false);
        assertThat(otherKey.refusedAt(command(9, 1_000, value))).as("a letter without its value: key and length must match").isEmpty();
        assertThat(DeadLetterLog.FOLLOWED).doesNotContain("crc-mismatch", "upload", "out-of-range", "not-found", "id-conflict");
    }

    /**
     * A letter goes to the dead-letter partition numbered as its command's (earlier releases: its key's): the retention
     * of those partitions is the one that counts.
     */
    @Test
    void theLettersPartitionIsTheCommandsOrEarlierTheKeys() {
        int keysPartition = org.apache.kafka.common.utils.Utils.toPositive(org.apache.kafka.common.utils.Utils.murmur2(new byte[0])) % 8;
        assertThat(keysPartition).as("the test's key must not fall on the command's partition").isNotEqualTo(3);
        for (int trimmed : new int[]{3, keysPartition}) {
            long[] kept = new long[8];
            kept[trimmed] = 5_000; // trimmed past the command's time; the others keep everything
            DeadLetterLog letters = new DeadLetterLog(Set.of(), Map.of(), kept, 100, false);
            assertThatCode(() -> letters.requireLetter(command(8, 1_000), "http://r", NOT_FOUND)).as("partition %d", trimmed)
                    .doesNotThrowAnyException();
        }
        DeadLetterLog keptAll = new DeadLetterLog(Set.of(), Map.of(), new long[8], 100, false);
        assertThatThrownBy(() -> keptAll.requireLetter(command(8, 1_000), "http://r", NOT_FOUND)).isInstanceOf(IOException.class);
    }

    /**
     * A catch-up reads the letters from a while before its first command's time, when the broker stamped it: those of the
     * commands stamped since, give or take the skew of two brokers' clocks. A command stamped by a producer, or earlier,
     * needs the letters read from the start.
     */
    @Test
    void lettersReadFromTheFirstCommandsTimeCoverOnlyCommandsTheBrokerStampedSince() {
        long t = 1_800_000_000_000L;
        long since = DeadLetterLog.since(command(7, t));
        assertThat(since).isEqualTo(t - DeadLetterLog.BEFORE_FIRST.toMillis());
        assertThat(DeadLetterLog.since(command(7, t, TimestampType.CREATE_TIME))).isEqualTo(DeadLetterLog.FROM_START);
        assertThat(DeadLetterLog.since(command(7, 1_000))).as("no time before it to read from").isEqualTo(DeadLetterLog.FROM_START);
        DeadLetterLog bounded = new DeadLetterLog(Set.of(), Map.of(), new long[]{0}, 100, false, since, Optional.empty());
        long edge = since + DeadLetterLog.SKEW.toMillis();
        assertThat(bounded.covers(command(8, t))).isTrue();
        assertThat(bounded.covers(command(8, edge))).isTrue();
        assertThat(bounded.covers(command(8, edge - 1))).as("its letter may be stamped before the bound").isFalse();
        assertThat(bounded.covers(command(8, t, TimestampType.CREATE_TIME))).as("a producer's clock says nothing").isFalse();
        assertThat(new DeadLetterLog(Set.of(), Map.of(), new long[]{0}, 100, false).covers(command(8, 0, TimestampType.CREATE_TIME)))
                .as("read from the start").isTrue();
    }

    /**
     * A node that closes stops its catch-ups' replays; one reading the dead letters, here from a broker that does not
     * answer, ends in the admin call it waits in (30 s otherwise), as a stopped replay does.
     */
    @Test
    void aStopEndsTheReadInTheKafkaCallItWaitsIn() throws Exception {
        int closedPort;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            closedPort = s.getLocalPort();
        }
        LobStreamConfig config = new LobStreamConfig(Map.of("bootstrap.servers", "127.0.0.1:" + closedPort));
        ReplayStop stop = new ReplayStop();
        AtomicReference<Thread> thread = new AtomicReference<>();
        ExecutorService reader = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "dead-letter-read");
            thread.set(t);
            return t;
        });
        try {
            Future<DeadLetterLog> read = reader.submit(() -> DeadLetterLog.read(config, new TopicPartition("lob.commands", 3), 0, Long.MAX_VALUE,
                    DeadLetterLog.FROM_START, stop));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (!waitingOnKafka(thread.get()) && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            assertThat(waitingOnKafka(thread.get())).as("the read waits for the admin's answer").isTrue();
            stop.ask();
            assertThatThrownBy(() -> read.get(20, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
                    .cause().isInstanceOf(InterruptedIOException.class)
                    .hasMessage("reading the dead letters of lob.commands-3 stopped in a call to Kafka");
        } finally {
            reader.shutdownNow();
        }
    }

    /** Whether {@code t} waits on a Kafka client's future: the admin's answer, which no broker gives here. */
    private static boolean waitingOnKafka(Thread t) {
        return t != null && t.getState() == Thread.State.TIMED_WAITING
                && Arrays.stream(t.getStackTrace()).anyMatch(f -> f.getClassName().endsWith("KafkaFutureImpl"));
    }
}
