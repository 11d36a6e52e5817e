package io.lobstream.ingest.replay;

import io.lobstream.ingest.writer.DeadLetters;
import io.lobstream.schema.LobStreamConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * Which commands of one partition of {@code lob.commands} the writer dead-lettered, as far as
 * {@code lob.commands.dlq} still says: what a replay asks when a command names a schema the
 * registry does not have. The writer dead-letters such a command too, so a replay that finds no
 * letter for it is reading another registry than the writer did (restored from an older backup,
 * or the wrong one), and would leave out commands the writer applied.
 */
final class DeadLetterLog {
    private static final Logger log = LoggerFactory.getLogger(DeadLetterLog.class);
    private static final Duration READ_TIMEOUT = Duration.ofMinutes(2);

    private final Set<Long> offsets;
    private final long keptSince;

    /** @param keptSince the time of the oldest letter kept, 0 when retention deleted none, Long.MAX_VALUE when it deleted all */
    DeadLetterLog(Set<Long> offsets, long keptSince) {
        this.offsets = offsets;
        this.keptSince = keptSince;
    }

    /** Reads the whole dead-letter topic once, keeping the letters of {@code commands}. */
    static DeadLetterLog read(LobStreamConfig config, TopicPartition commands) throws IOException {
        Map<String, Object> p = config.clientConfig(ConsumerConfig.configNames());
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        String topic = config.topics().deadLetters();
        Set<Long> offsets = new HashSet<>();
        long keptSince = Long.MAX_VALUE;
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            List<TopicPartition> partitions = consumer.partitionsFor(topic).stream()
                    .map(i -> new TopicPartition(topic, i.partition())).collect(Collectors.toList());
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            Map<TopicPartition, Long> end = consumer.endOffsets(partitions);
            if (consumer.beginningOffsets(partitions).values().stream().allMatch(o -> o == 0)) {
                keptSince = 0; // retention has deleted nothing: every letter the writer sent is there
            }
            long deadline = System.nanoTime() + READ_TIMEOUT.toNanos();
            while (partitions.stream().anyMatch(tp -> consumer.position(tp) < end.get(tp))) {
                if (System.nanoTime() > deadline) {
                    throw new IOException("cannot read " + topic + " to its end within " + READ_TIMEOUT.toSeconds() + " s");
                }
                for (ConsumerRecord<byte[], byte[]> letter : consumer.poll(Duration.ofMillis(500))) {
                    if (letter.timestamp() >= 0) {
                        keptSince = Math.min(keptSince, letter.timestamp());
                    }
                    if (commands.topic().equals(header(letter, DeadLetters.ORIGIN_TOPIC))
                            && Integer.toString(commands.partition()).equals(header(letter, DeadLetters.ORIGIN_PARTITION))) {
                        String offset = header(letter, DeadLetters.ORIGIN_OFFSET);
                        if (offset.matches("\\d{1,18}")) {
                            offsets.add(Long.parseLong(offset));
                        }
                    }
                }
            }
        } catch (RuntimeException e) {
            throw new IOException("cannot read the dead letters of " + commands + " from " + topic + ": " + e, e);
        }
        return new DeadLetterLog(offsets, keptSince);
    }

    /**
     * Returns if the writer dead-lettered {@code command}, which names a schema the registry at {@code registry} does not
     * have, or if its letter would have expired by now (nobody can tell then: it is taken for dead-lettered, with a
     * warning); throws otherwise: this registry is not the one the writer read (restored from an older backup, or
     * another), and a replay going on would leave out commands the writer applied.
     */
    void requireLetter(ConsumerRecord<?, ?> command, String registry, RuntimeException undecodable) throws IOException {
        if (offsets.contains(command.offset())) {
            return;
        }
        String where = command.topic() + "-" + command.partition() + " offset " + command.offset();
        if (command.timestamp() >= 0 && command.timestamp() >= keptSince) {
            throw new IOException(where + " names a schema the registry at " + registry + " does not have, and the writer did "
                    + "not dead-letter it: the writer read another registry, or this one lost schemas since (restored from an older "
                    + "backup?). Replay against the writer's registry. (" + undecodable.getMessage() + ")");
        }
        log.warn("{} names a schema the registry at {} does not have; the dead letters of its time have expired, so whether "
                + "the writer applied it cannot be told: skipped, as dead-lettered", where, registry);
    }

    /** The last value of {@code name}: a letter copies its original's headers first, a letter's own come after them. */
    private static String header(ConsumerRecord<?, ?> record, String name) {
        Header h = record.headers().lastHeader(name);
        return h == null ? "" : new String(h.value(), StandardCharsets.UTF_8);
    }
}
