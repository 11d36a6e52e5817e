package io.lobstream.ingest.writer;

import io.lobstream.schema.LobStreamConfig;
import io.lobstream.schema.LobStreamConfig.ClientKind;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * {@link PurgeProgress} from the admin client. Every {@code lob.undo.resend.interval.ms} a thread
 * of the node reads, for each partition: the purge group's committed offset on
 * {@code lob.undo-history}, then the end offsets (high watermarks: every record written, committed
 * or not) of {@code lob.undo-history} and {@code lob.reclaim}, then the writer group's committed
 * offset on {@code lob.reclaim}. A read_committed consumer's position passes a high watermark only
 * once every transaction below it is decided and every committed record below it consumed.
 *
 * <ol>
 * <li>Each check samples (its start time, the undo-history end offset).</li>
 * <li>A sample whose end offset the purge group's committed offset has reached says: every undo
 * record committed before that time has been consumed. Purge commits its offsets in the
 * transaction of the reclaim records it made from them, so those reclaims are all below the
 * {@code lob.reclaim} end offset read after it.</li>
 * <li>That time is published once the writer group's committed offset on {@code lob.reclaim} has
 * reached that end offset: the writer has applied every reclaim those undo records gave. A
 * version whose undo record was committed before that time and that is still pending was
 * consumed without a reclaim ({@link UndoResender} allows for how late that commit may be).</li>
 * </ol>
 * Offsets that move backwards (a topic recreated, a group reset), or a clock set back, forget what was known.
 */
public final class AdminPurgeProgress implements PurgeProgress, AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(AdminPurgeProgress.class);
    private static final long CALL_TIMEOUT_MS = 10_000;
    private static final long WARN_EVERY_MS = 60_000;

    private final Admin admin;
    private final String undoTopic;
    private final String reclaimTopic;
    private final String purgeGroup;
    private final String writerGroup;
    private final int partitions;
    private final ScheduledExecutorService thread;
    private final Map<Integer, PartitionProgress> progress = new HashMap<>(); // the check thread's
    private final Map<Integer, Long> published = new ConcurrentHashMap<>();
    /**
     * Per partition, undo records the purge group has not consumed yet, as the last check read them: replaced whole by
     * each check, so a partition the last check could not read (or a check that failed) shows NaN, not an old figure
     * that would hold a lag alert off while purge stalls.
     */
    private volatile Map<Integer, Double> purgeLag = Map.of();
    private long lastWarning;
    private volatile ClusterAnswer answer;

    /**
     * How the node's last check of the cluster went, for {@code /status}: Kafka Streams reads RUNNING through an outage,
     * its clients retrying, and nothing else on the node says the cluster stopped answering.
     *
     * @param answeredAtMillis when a check last had every answer (wall clock; -1: none has yet)
     * @param lastError        why the last check failed; null if it did not
     * @param everyMs          how often the node checks
     */
    public record ClusterAnswer(long answeredAtMillis, String lastError, long everyMs) {
    }

    /** How the node's last check of the cluster went. */
    public ClusterAnswer lastAnswer() {
        return answer;
    }

    /**
     * @param meters where to register {@code lob_purge_lag_records{partition}}, which each check updates, and
     *               {@code lob_purge_behind_seconds{partition}}, from what it published last
     */
    public AdminPurgeProgress(LobStreamConfig config, int partitions, MeterRegistry meters) {
        this.admin = Admin.create(config.clientConfig(ClientKind.ADMIN));
        this.undoTopic = config.topics().undoHistory();
        this.reclaimTopic = config.topics().reclaim();
        this.purgeGroup = config.get(LobStreamConfig.PURGE_GROUP);
        this.writerGroup = config.get(LobStreamConfig.APPLICATION_ID);
        this.partitions = partitions;
        long every = config.get(LobStreamConfig.UNDO_RESEND_INTERVAL_MS);
        this.answer = new ClusterAnswer(-1, null, every);
        this.thread = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "purge-progress");
            t.setDaemon(true);
            return t;
        });
        for (int p = 0; p < partitions; p++) {
            int partition = p;
            // NaN until a check has read it, and whenever the last check could not
            Gauge.builder("lob_purge_lag_records", () -> purgeLag.getOrDefault(partition, Double.NaN)).tag("partition", Integer.toString(p))
                    .description("Undo records of the partition the purge group has not consumed (last stable offset of "
                            + undoTopic + " minus the group's committed offset or the log's start, whichever is later), as of "
                            + "the last check (lob.undo.resend.interval.ms)")
                    .register(meters);
            Gauge.builder("lob_purge_behind_seconds", () -> behindSeconds(partition)).tag("partition", Integer.toString(p))
                    .description("At most how old the partition's oldest undo record not yet purged is: every one committed "
                            + "before then has been consumed by purge and its reclaim applied by the writer. In steps of "
                            + "lob.undo.resend.interval.ms (one to three of them when purge keeps up); compare with the retention.ms "
                            + "of " + undoTopic + ". Before purge has consumed what the node's first check found: 0 without purge lag, "
                            + "NaN with some (after a restart while purge stalls too: alert on NaN with lob_purge_lag_records above 0)")
                    .register(meters);
        }
        // the first check at once: /status's kafka says within seconds of a start whether the cluster answers the node
        thread.scheduleWithFixedDelay(this::check, 0, every, TimeUnit.MILLISECONDS);
    }

    @Override
    public long consumedBefore(int partition) {
        return published.getOrDefault(partition, Long.MIN_VALUE);
    }

    /**
     * Grows with the wall clock while checks fail or purge stalls: an alert on it needs no check to succeed. Nothing
     * published yet: 0 where the last check found no purge lag (a partition with no undo record, which purge never had
     * to consume, showed NaN for ever), NaN where it found some or could not read it.
     */
    private double behindSeconds(int partition) {
        Long before = published.get(partition);
        if (before == null) {
            return purgeLag.getOrDefault(partition, Double.NaN) == 0 ? 0 : Double.NaN;
        }
        return Math.max(0, System.currentTimeMillis() - before) / 1000.0;
    }

    private void check() {
        Map<Integer, Double> lag = new HashMap<>();
        try {
            long now = System.currentTimeMillis();
            long nowNanos = System.nanoTime();
            Map<TopicPartition, OffsetAndMetadata> purged = committed(purgeGroup);
            Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
            for (int p = 0; p < partitions; p++) {
                latest.put(new TopicPartition(undoTopic, p), OffsetSpec.latest());
                latest.put(new TopicPartition(reclaimTopic, p), OffsetSpec.latest());
            }
            Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> ends =
                    admin.listOffsets(latest, new ListOffsetsOptions(IsolationLevel.READ_UNCOMMITTED)).all()
                            .get(CALL_TIMEOUT_MS, TimeUnit.MILLISECONDS);
            Map<TopicPartition, OffsetAndMetadata> applied = committed(writerGroup);
            PurgeLag.read(admin, undoTopic, partitions, purged, CALL_TIMEOUT_MS).forEach((p, l) -> lag.put(p, (double) l));
            for (int p = 0; p < partitions; p++) {
                TopicPartition undo = new TopicPartition(undoTopic, p);
                TopicPartition reclaim = new TopicPartition(reclaimTopic, p);
                if (ends.get(undo) == null || ends.get(reclaim) == null) {
                    continue;
                }
                long before = progress.computeIfAbsent(p, k -> new PartitionProgress())
                        .advance(now, nowNanos, offset(purged.get(undo)), ends.get(undo).offset(), ends.get(reclaim).offset(),
                                offset(applied.get(reclaim)));
                if (before == Long.MIN_VALUE) {
                    published.remove(p);
                } else {
                    published.put(p, before);
                }
            }
            answer = new ClusterAnswer(now, null, answer.everyMs());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException | RuntimeException e) {
            lag.clear(); // a lag not read now is unknown: NaN
            answer = new ClusterAnswer(answer.answeredAtMillis(), e instanceof TimeoutException
                    ? "no answer within " + CALL_TIMEOUT_MS / 1000 + " s" : TaskRetries.messages(e), answer.everyMs());
            // nothing new is published meanwhile; the next check tries again
            long now = System.currentTimeMillis();
            if (now - lastWarning >= WARN_EVERY_MS) {
                lastWarning = now;
                log.warn("cannot read how far purge group {} has consumed {} (undo records it lost are not produced again "
                        + "meanwhile): {}", purgeGroup, undoTopic, e.toString());
            }
        } finally {
            purgeLag = lag;
        }
    }

    private Map<TopicPartition, OffsetAndMetadata> committed(String group)
            throws InterruptedException, ExecutionException, TimeoutException {
        return admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get(CALL_TIMEOUT_MS, TimeUnit.MILLISECONDS);
    }

    private static long offset(OffsetAndMetadata om) {
        return om == null ? -1 : om.offset();
    }

    @Override
    public void close() {
        thread.shutdownNow();
        try {
            thread.awaitTermination(2, TimeUnit.SECONDS); // a check in flight, before its admin client goes
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        admin.close(Duration.ofSeconds(1));
    }

    /** One partition's steps (package-private for its test). */
    static final class PartitionProgress {
        /** Samples kept: purge may be this many checks behind and still be followed. */
        static final int SAMPLES = 64;

        /**
         * A wall clock that advanced this much less than the monotonic one since the last check was set back. Well below
         * the re-send's slack (the transaction timeout and 5 s: a smaller step misleads nothing), and well above a pause
         * between the two clocks' reads (a GC), which would forget what was known for nothing.
         */
        static final long CLOCK_STEP_MS = 5000;

        private record Sample(long atMillis, long atNanos, long undoEnd) {
        }

        /** Undo records committed before {@code consumedBefore} have been consumed; their reclaims are below {@code reclaimEnd}. */
        private record Consumed(long consumedBefore, long reclaimEnd) {
        }

        private final Deque<Sample> samples = new ArrayDeque<>();
        private final Deque<Consumed> consumed = new ArrayDeque<>();
        private long published = Long.MIN_VALUE;

        /**
         * One check, read in this order: {@code purgedTo} (the purge group's committed offset, -1 if none), {@code undoEnd},
         * {@code reclaimEnd} (end offsets), {@code appliedTo} (the writer group's committed offset on lob.reclaim, -1
         * if none); {@code now} (the wall clock) and {@code nowNanos} (System.nanoTime) were taken before them all.
         *
         * @return what to publish: the consumedBefore time, or {@link Long#MIN_VALUE}
         */
        long advance(long now, long nowNanos, long purgedTo, long undoEnd, long reclaimEnd, long appliedTo) {
            // purgedTo was read before undoEnd, so it cannot pass it unless the topic was recreated; appliedTo was read
            // after reclaimEnd, and may pass it
            boolean backwards = (!samples.isEmpty() && undoEnd < samples.peekLast().undoEnd()) || purgedTo > undoEnd
                    || (!consumed.isEmpty() && reclaimEnd < consumed.peekLast().reclaimEnd())
                    // the host's clock stepped back (less than the wall clock shows, by the monotonic one): versions
                    // superseded since are stamped before samples whose end offsets their undo records come after, and would be
                    // taken for consumed, and produced again, once purge passed them
                    || (!samples.isEmpty() && now - samples.peekLast().atMillis()
                    < (nowNanos - samples.peekLast().atNanos()) / 1_000_000 - CLOCK_STEP_MS);
            if (backwards) { // a topic recreated, a group's offsets reset, the clock set back: start over
                samples.clear();
                consumed.clear();
                published = Long.MIN_VALUE;
            }
            Sample reached = null;
            while (!samples.isEmpty() && samples.peekFirst().undoEnd() <= purgedTo) {
                reached = samples.pollFirst();
            }
            if (reached != null) {
                consumed.addLast(new Consumed(reached.atMillis(), reclaimEnd));
            }
            Consumed applied = null;
            while (!consumed.isEmpty() && consumed.peekFirst().reclaimEnd() <= Math.max(appliedTo, 0)) {
                applied = consumed.pollFirst();
            }
            if (applied != null) {
                published = applied.consumedBefore();
            }
            samples.addLast(new Sample(now, nowNanos, undoEnd));
            if (samples.size() > SAMPLES) {
                samples.pollFirst();
            }
            if (consumed.size() > SAMPLES) {
                consumed.pollFirst();
            }
            return published;
        }
    }
}
