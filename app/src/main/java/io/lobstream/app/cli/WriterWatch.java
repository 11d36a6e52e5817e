package io.lobstream.app.cli;

import io.lobstream.ingest.writer.DeadLetters;
import io.lobstream.schema.LobStreamConfig;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * What the writer did with the commands of one CLI run, seen in Kafka alone: the writer group's
 * committed offsets and the dead-letter topic.
 *
 * <p>The writer applies a command (or dead-letters it) and commits its offset in one
 * transaction, so once the group's committed offset of the command's partition is past the
 * command, the outcome is final and visible: a dead letter of it is then readable
 * ({@code read_committed}), and no dead letter means it was applied. The run's records carry a
 * header ({@link #TAG}) that their dead letters keep, which tells them from other producers'.
 * The dead-letter topic is read from the moment the watch opens, before anything is sent.
 */
final class WriterWatch implements AutoCloseable {
    /** Header on every record a CLI run sends: the run's id. */
    static final String TAG = "lob.cli.run";

    /** Why the writer did not apply a command. */
    record DeadLetter(String kind, String reason) {
    }

    private final String run;
    private final String commandsTopic;
    private final String writerGroup;
    private final KafkaConsumer<byte[], byte[]> deadLetters;
    private final Admin admin;

    /** @param run the value of {@link #TAG} on this run's records */
    WriterWatch(LobStreamConfig config, String run) {
        this.run = run;
        this.commandsTopic = config.topics().commands();
        this.writerGroup = config.get(LobStreamConfig.APPLICATION_ID);
        Map<String, Object> c = config.clientConfig(ConsumerConfig.configNames());
        c.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        c.put(ConsumerConfig.CLIENT_ID_CONFIG, "lobstream-cli-" + run);
        this.deadLetters = new KafkaConsumer<>(c, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        Admin a = null;
        try {
            String topic = config.topics().deadLetters();
            List<TopicPartition> parts = deadLetters.partitionsFor(topic, Duration.ofSeconds(30)).stream()
                    .map(p -> new TopicPartition(topic, p.partition())).toList();
            if (parts.isEmpty()) {
                throw new IllegalStateException("no topic " + topic + " on " + config.bootstrap()
                        + ": has a writer node run against this cluster (it creates the topics)?");
            }
            deadLetters.assign(parts);
            deadLetters.seekToEnd(parts);
            parts.forEach(deadLetters::position); // resolve "end" now, before anything is sent
            a = Admin.create(config.clientConfig(AdminClientConfig.configNames()));
        } catch (RuntimeException e) {
            deadLetters.close(Duration.ZERO);
            throw e;
        }
        this.admin = a;
    }

    /** Polls up to {@code wait} for a dead letter of this run's records. */
    Optional<DeadLetter> deadLetter(Duration wait) {
        for (ConsumerRecord<byte[], byte[]> r : deadLetters.poll(wait)) {
            if (run.equals(header(r, TAG)) && commandsTopic.equals(header(r, DeadLetters.ORIGIN_TOPIC))) {
                return Optional.of(new DeadLetter(header(r, DeadLetters.KIND), header(r, DeadLetters.REASON)));
            }
        }
        return Optional.empty();
    }

    /** Reads the dead-letter topic up to its end now; the first dead letter of this run's records, if any. */
    Optional<DeadLetter> drainDeadLetters() {
        Map<TopicPartition, Long> end = deadLetters.endOffsets(deadLetters.assignment());
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        Optional<DeadLetter> found = Optional.empty();
        while (found.isEmpty() && System.nanoTime() < deadline
                && end.entrySet().stream().anyMatch(e -> deadLetters.position(e.getKey()) < e.getValue())) {
            found = deadLetter(Duration.ofMillis(100));
        }
        return found;
    }

    /** Whether the writer group has committed past {@code offset} of {@code partition} of lob.commands. */
    boolean committedPast(int partition, long offset) throws InterruptedException {
        TopicPartition tp = new TopicPartition(commandsTopic, partition);
        try {
            Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(
                            Map.of(writerGroup, new ListConsumerGroupOffsetsSpec().topicPartitions(List.of(tp))))
                    .partitionsToOffsetAndMetadata(writerGroup).get(5, TimeUnit.SECONDS);
            OffsetAndMetadata o = committed.get(tp);
            return o != null && o.offset() > offset;
        } catch (ExecutionException | TimeoutException e) {
            return false; // asked again on the next round
        }
    }

    String writerGroup() {
        return writerGroup;
    }

    private static String header(ConsumerRecord<?, ?> r, String name) {
        Header h = r.headers().lastHeader(name);
        return h == null ? null : new String(h.value(), StandardCharsets.UTF_8);
    }

    @Override
    public void close() {
        admin.close(Duration.ofSeconds(5));
        deadLetters.close(Duration.ofSeconds(5));
    }
}
