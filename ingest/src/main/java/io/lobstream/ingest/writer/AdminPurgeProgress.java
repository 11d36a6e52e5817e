package io.lobstream.ingest.writer;

import io.lobstream.schema.LobStreamConfig;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * {@link PurgeProgress} from the admin client: every {@code lob.undo.resend.interval.ms} a
 * thread of the node reads each undo-history partition's last stable offset and the purge
 * group's committed offset. When the committed offset has reached the end offset seen at the
 * previous check, every undo record committed before that check has been consumed; that time is
 * published one check later, once the reclaims committed with those offsets have had an
 * interval to reach the writer.
 */
public final class AdminPurgeProgress implements PurgeProgress, AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(AdminPurgeProgress.class);
    private static final Duration CALL_TIMEOUT = Duration.ofSeconds(10);

    private record Sample(long atMillis, long endOffset) {
    }

    private final Admin admin;
    private final String undoTopic;
    private final String purgeGroup;
    private final int partitions;
    private final ScheduledExecutorService thread;
    /** Per partition: the end offset at the last check (touched by the check thread only). */
    private final Map<Integer, Sample> lastSample = new HashMap<>();
    /** Per partition: the time established at the last check, to be published at the next (check thread only). */
    private final Map<Integer, Long> established = new HashMap<>();
    private final Map<Integer, Long> published = new ConcurrentHashMap<>();

    public AdminPurgeProgress(LobStreamConfig config, int partitions) {
        this.admin = Admin.create(config.clientConfig(AdminClientConfig.configNames()));
        this.undoTopic = config.topics().undoHistory();
        this.purgeGroup = config.get(LobStreamConfig.PURGE_GROUP);
        this.partitions = partitions;
        long every = config.get(LobStreamConfig.UNDO_RESEND_INTERVAL_MS);
        this.thread = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "purge-progress");
            t.setDaemon(true);
            return t;
        });
        thread.scheduleWithFixedDelay(this::check, every, every, TimeUnit.MILLISECONDS);
    }

    @Override
    public long consumedBefore(int partition) {
        return published.getOrDefault(partition, Long.MIN_VALUE);
    }

    private void check() {
        try {
            long now = System.currentTimeMillis();
            Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
            for (int p = 0; p < partitions; p++) {
                latest.put(new TopicPartition(undoTopic, p), OffsetSpec.latest());
            }
            Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> ends =
                    admin.listOffsets(latest, new ListOffsetsOptions(IsolationLevel.READ_COMMITTED))
                            .all().get(CALL_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(purgeGroup)
                    .partitionsToOffsetAndMetadata().get(CALL_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            for (int p = 0; p < partitions; p++) {
                TopicPartition tp = new TopicPartition(undoTopic, p);
                Long before = established.remove(p);
                if (before != null) {
                    published.put(p, before);
                }
                Sample previous = lastSample.get(p);
                OffsetAndMetadata c = committed.get(tp);
                if (previous != null && c != null && c.offset() >= previous.endOffset()) {
                    established.put(p, previous.atMillis());
                }
                ListOffsetsResult.ListOffsetsResultInfo end = ends.get(tp);
                if (end != null) {
                    lastSample.put(p, new Sample(now, end.offset()));
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Exception e) {
            // nothing is published meanwhile that was not true before: the next check tries again
            log.debug("purge progress of group {} on {} not read: {}", purgeGroup, undoTopic, e.toString());
        }
    }

    @Override
    public void close() {
        thread.shutdownNow();
        admin.close(Duration.ofSeconds(1));
    }
}
