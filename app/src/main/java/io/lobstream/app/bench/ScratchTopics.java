package io.lobstream.app.bench;

import io.lobstream.app.DataDirs;
import io.lobstream.schema.LobStreamConfig;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.errors.TopicExistsException;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

/**
 * The topics {@code bench pipeline}'s plain-Kafka phases write, on the embedded broker whose data directory is
 * {@code dataDir}: made before the phases (a topic used right after creation fails over leadership), deleted when the
 * disk needs the room or, the rest, after the pipeline's drain (deleted files give their pages back), and their files
 * removed when the run ends.
 */
final class ScratchTopics {
    private final Path dataDir;
    private final int partitions;
    /** Those not deleted yet, in the order they were made. */
    private final List<String> live = new ArrayList<>();
    /** All that were made, or asked for: their files are removed at the end. */
    private final List<String> made = new ArrayList<>();

    /**
     * @param dataDir    the bench's data directory; the broker's log directory is {@code kafka} in it
     * @param partitions of each topic: as many as the pipeline's
     */
    ScratchTopics(Path dataDir, int partitions) {
        this.dataDir = dataDir;
        this.partitions = partitions;
    }

    /**
     * A scratch topic named {@code name} after the topic prefix of {@code cfg}, every partition with a leader, keeping
     * its newest {@code bytes} (deleted segments leave the disk within seconds); counted as made before it is asked for,
     * so that its files are removed at the end even if this or a later creation fails.
     */
    String create(LobStreamConfig cfg, String name, long bytes) throws Exception {
        String topic = cfg.get(LobStreamConfig.TOPIC_PREFIX) + name;
        live.add(topic);
        made.add(topic);
        try (Admin admin = admin(cfg)) {
            int replication = cfg.get(LobStreamConfig.REPLICATION);
            NewTopic scratch = new NewTopic(topic, Optional.of(partitions), replication < 1 ? Optional.empty() : Optional.of((short) replication))
                    .configs(Map.of(TopicConfig.RETENTION_BYTES_CONFIG, Long.toString(Math.max(1, bytes / partitions)),
                            TopicConfig.FILE_DELETE_DELAY_MS_CONFIG, "1000"));
            if (admin.listTopics().names().get().contains(topic)) {
                // left by a run on this --data-dir that failed before it deleted its scratch topics: its records would be read
                admin.deleteTopics(List.of(topic)).all().get();
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (true) {
                try {
                    admin.createTopics(List.of(scratch)).all().get();
                    break;
                } catch (ExecutionException e) {
                    if (!(e.getCause() instanceof TopicExistsException) || System.nanoTime() > deadline) {
                        throw e;
                    }
                    Thread.sleep(200); // the one just deleted is still being removed
                }
            }
            KafkaTools.awaitLeaders(admin, List.of(topic), Duration.ofSeconds(60));
        }
        return topic;
    }

    void delete(LobStreamConfig cfg, String topic) throws Exception {
        try (Admin admin = admin(cfg)) {
            admin.deleteTopics(List.of(topic)).all().get();
        }
        live.remove(topic);
    }

    /** Deletes those not deleted yet, and returns them. */
    List<String> deleteAll(LobStreamConfig cfg) throws Exception {
        List<String> deleted = List.copyOf(live);
        for (String topic : deleted) {
            delete(cfg, topic);
        }
        return deleted;
    }

    /** Those not deleted yet, in the order they were made. */
    List<String> live() {
        return List.copyOf(live);
    }

    /** The size of a topic's files in the broker's log directory. */
    long bytes(String topic) throws IOException {
        Path logDir = dataDir.resolve("kafka");
        if (!Files.isDirectory(logDir)) {
            return 0;
        }
        try (var files = Files.walk(logDir)) {
            return files.filter(f -> f.getParent() != null && isPartitionDir(f.getParent(), topic))
                    .filter(Files::isRegularFile).mapToLong(f -> f.toFile().length()).sum();
        }
    }

    /** Waits (up to two minutes) until the broker has removed the files of the deleted {@code topics}. */
    void awaitRemoved(List<String> topics, BenchOutput out) throws InterruptedException {
        long t = System.nanoTime();
        long deadline = t + TimeUnit.MINUTES.toNanos(2);
        boolean removed;
        while (!(removed = removed(topics)) && System.nanoTime() < deadline) {
            Thread.sleep(500);
        }
        out.note(String.format(removed ? "deleted topics' files removed by the broker after %.0f s"
                : "deleted topics' files still there after %.0f s: measured anyway", (System.nanoTime() - t) / 1e9));
    }

    private boolean removed(List<String> topics) {
        try {
            for (String topic : topics) {
                if (bytes(topic) > 0) {
                    return false;
                }
            }
            return true;
        } catch (IOException | UncheckedIOException e) { // a directory the broker removed while it was walked
            return false;
        }
    }

    /**
     * Removes the files of every topic made, once the broker has stopped. The run deletes its topics, but the broker
     * removes a deleted topic's files only about 5 s later (log.segment.delete.delay.ms), after the bench may have stopped it:
     * in a kept --data-dir they would stay, tens of GB of a dead topic. So they go here (the directories Kafka renamed
     * {@code <topic>-<partition>.<id>-delete}, or the topic's own if its deletion never ran). Never throws: it runs in a
     * finally, and must not hide what the run threw.
     */
    void removeFiles() {
        Path logDir = dataDir.resolve("kafka");
        if (!Files.isDirectory(logDir)) {
            return;
        }
        for (String topic : made) {
            try (var entries = Files.list(logDir)) {
                entries.filter(p -> isPartitionDir(p, topic)).forEach(DataDirs::deleteTree);
            } catch (IOException | RuntimeException e) {
                System.err.println("bench pipeline: could not remove the scratch topic's files under " + logDir + ": " + e);
            }
        }
    }

    /** Whether the disk of the data directory holds {@code bytes} more (a phase's data, scratch or not), and 2 GB to spare. */
    boolean room(double bytes) throws IOException {
        return Files.getFileStore(dataDir).getUsableSpace() > bytes + 2e9;
    }

    /**
     * Whether {@code dir} is one of {@code topic}'s partitions in the broker's log directory: {@code <topic>-<partition>},
     * or {@code <topic>-<partition>.<id>-delete} once deleted (not {@code <topic>-again-0}, another topic's).
     */
    private static boolean isPartitionDir(Path dir, String topic) {
        return dir.getFileName().toString().matches(Pattern.quote(topic) + "-\\d+(\\..+-delete)?");
    }

    private static Admin admin(LobStreamConfig cfg) {
        return Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, cfg.bootstrap()));
    }
}
