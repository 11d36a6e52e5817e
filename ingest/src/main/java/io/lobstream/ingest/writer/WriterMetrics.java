package io.lobstream.ingest.writer;

import io.lobstream.avro.LobOp;
import io.lobstream.store.ReclaimOutcome;
import io.lobstream.store.index.Rejection;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;

import java.time.Duration;
import java.util.List;
import java.util.EnumMap;
import java.util.Locale;
import java.util.Map;

/** Meters of the writer topology. */
public final class WriterMetrics {
    private final MeterRegistry registry;
    private final Counter undoRecords;
    private final Counter undoReemitted;
    private final Timer reclaimApplyLag;
    private final Timer commandApplyLag;
    // the meters counted at every command, held rather than looked up in the registry each time (a builder, an id, a lookup)
    private final Map<LobOp, Counter> appliedByOp = new EnumMap<>(LobOp.class);
    private final Counter chunks;
    private final Counter uploadsExpired;

    public WriterMetrics(MeterRegistry registry) {
        this.registry = registry;
        this.undoRecords = Counter.builder("lob_undo_records").description("Undo records produced").register(registry);
        this.undoReemitted = Counter.builder("lob_undo_records_reemitted")
                .description("Undo records produced again: for commands found applied after a crash, for the versions pending "
                        + "when a tablespace opens, and for versions still pending after purge consumed their undo records").register(registry);
        // buckets up to an hour, not Micrometer's 30 s: a writer far behind is what these are watched for
        this.reclaimApplyLag = Timer.builder("lob_reclaim_apply_lag_seconds").publishPercentileHistogram()
                .maximumExpectedValue(Duration.ofHours(1))
                .description("From a purge worker producing a ReclaimRecord to the writer freeing its pages (reclaims freed at once; "
                        + "not one that waited for a reader)").register(registry);
        this.commandApplyLag = Timer.builder("lob_command_apply_lag_seconds").publishPercentileHistogram()
                .maximumExpectedValue(Duration.ofHours(1))
                .description("From a command's record timestamp (its producer's send time, or the broker's append time) to the "
                        + "writer applying it, each chunk of an upload counted: how far behind the writer is, in time").register(registry);
        for (LobOp op : LobOp.values()) {
            appliedByOp.put(op, appliedCounter(op.name()));
        }
        this.chunks = chunkCounter();
        this.uploadsExpired = uploadsExpiredCounter();
    }

    /**
     * A command or a chunk of an upload applied at {@code nowMs}, its record's time {@code timestampMs} ({@link CommandTime}).
     * One sent without a time before any other of its partition has none to count from ({@link CommandTime#NONE_YET}): a
     * lag of 56 years would be the histogram's max until the node restarts.
     */
    public void commandApplyLag(long timestampMs, long nowMs) {
        if (timestampMs != CommandTime.NONE_YET) {
            commandApplyLag.record(bounded(Duration.ofMillis(nowMs - timestampMs)));
        }
    }

    public void reclaimApplyLag(Duration lag) {
        reclaimApplyLag.record(bounded(lag));
    }

    /**
     * Not below 0 (a producer's clock ahead), nor past what a timer's nanoseconds hold (292 years): a ReclaimRecord's time
     * is any long a producer sends, and the timer's ArithmeticException would fail the task the reclaim was applied in.
     */
    private static Duration bounded(Duration lag) {
        return lag.isNegative() ? Duration.ZERO : lag.compareTo(LONGEST_LAG) > 0 ? LONGEST_LAG : lag;
    }

    private static final Duration LONGEST_LAG = Duration.ofNanos(Long.MAX_VALUE);

    public void applied(LobOp op) {
        appliedByOp.get(op).increment();
    }

    private Counter appliedCounter(String op) {
        return Counter.builder("lob_commands_applied").tag("op", op).description("Commands applied to a tablespace").register(registry);
    }

    /**
     * Registers at 0 the counters whose tags are known beforehand (created on their first event, a series would appear at
     * 1, and Prometheus' increase() or rate() would never see that first one: a first dead letter, a first catch-up).
     */
    public void registerAtZero(String commandsTopic, String reclaimTopic, int partitions) {
        for (String kind : Rejection.KINDS) {
            deadLetteredCounter(kind, commandsTopic);
            deadLetteredCounter(kind, reclaimTopic);
        }
        for (ReclaimOutcome outcome : ReclaimOutcome.values()) {
            reclaimCounter(outcome);
        }
        // the applied, chunk and expiry counters: registered by the constructor
        skippedCounter(SKIPPED_APPLIED);
        skippedCounter(SKIPPED_DUPLICATE);
        registerRebuildsAtZero();
        undoResentCounter();
        for (int p = 0; p < partitions; p++) { // the refusals README says to alert on: the first is the one that matters
            logLostCounter(p);
            partitionCountChangedCounter(p);
        }
    }

    /** The catch-ups' counters at 0 (see {@link #registerAtZero}). */
    private void registerRebuildsAtZero() {
        rebuildStartedCounter();
        for (String outcome : List.of(REBUILT_REPLAYED, REBUILT_CURRENT, REBUILT_REFUSED, REBUILT_MOVED)) {
            rebuiltCounter(outcome);
        }
        rebuildRecordsCounter();
        rebuildFailedCounter();
    }

    /** Why a command was skipped: applied before a restart (read again after it). */
    public static final String SKIPPED_APPLIED = "applied-before-restart";
    /** Why a command was skipped: sent twice (the same commandId, within the window). */
    public static final String SKIPPED_DUPLICATE = "duplicate-command-id";
    private static final String REBUILT_REPLAYED = "replayed";
    private static final String REBUILT_CURRENT = "current";
    private static final String REBUILT_REFUSED = "refused";
    static final String REBUILT_MOVED = "moved";

    public void skipped(String reason) {
        skippedCounter(reason).increment();
    }

    private Counter skippedCounter(String reason) {
        return Counter.builder("lob_commands_skipped").tag("reason", reason)
                .description("Commands not applied again: applied before a restart, or sent twice (same commandId)")
                .register(registry);
    }

    public void chunk() {
        chunks.increment();
    }

    private Counter chunkCounter() {
        return Counter.builder("lob_upload_chunks").description("Chunks of uploads written (the last one counts as a PUT applied)")
                .register(registry);
    }

    public void uploadsExpired(int n) {
        if (n > 0) { // called with 0 at every chunk
            uploadsExpired.increment(n);
        }
    }

    private Counter uploadsExpiredCounter() {
        return Counter.builder("lob_uploads_expired").description("Uploads dropped after lob.upload.timeout.ms without a chunk")
                .register(registry);
    }

    /** A record of {@code topic} (lob.commands, or lob.reclaim) sent to the dead-letter topic as {@code kind}. */
    public void deadLettered(String kind, String topic) {
        deadLetteredCounter(kind, topic).increment();
    }

    private Counter deadLetteredCounter(String kind, String topic) {
        return Counter.builder("lob_commands_dead_lettered").tag("kind", kind).tag("topic", topic)
                .description("Records sent to the dead-letter topic, by kind and by the topic they came from").register(registry);
    }

    public void reclaim(ReclaimOutcome outcome) {
        reclaimCounter(outcome).increment();
    }

    private Counter reclaimCounter(ReclaimOutcome outcome) {
        return Counter.builder("lob_reclaims").tag("outcome", outcome.name().toLowerCase(Locale.ROOT)).description("Reclaim records applied, by outcome (read again after an abort: counted again)")
                .register(registry);
    }

    /** A tablespace behind the writer group started catching up from lob.commands. */
    public void rebuildStarted() {
        rebuildStartedCounter().increment();
    }

    private Counter rebuildStartedCounter() {
        return Counter.builder("lob_rebuilds_started").description("Catch-ups of tablespaces behind the writer group started (lob-rebuild-P threads)")
                .register(registry);
    }

    /** A catch-up finished, having replayed {@code records} records (none: the tablespace was current after all). */
    public void rebuilt(long records) {
        rebuiltCounter(records > 0 ? REBUILT_REPLAYED : REBUILT_CURRENT).increment();
        rebuildRecordsCounter().increment(records);
    }

    /** A catch-up that found a copy it must not replay into (another log's, or one whose log lost records): the task's next init acts. */
    public void rebuildRefused() {
        rebuiltCounter(REBUILT_REFUSED).increment();
    }

    /** A catch-up stopped as no task here asked for its partition (it went to another node; what it replayed kept). */
    public void rebuildMoved() {
        rebuiltCounter(REBUILT_MOVED).increment();
    }

    private Counter rebuiltCounter(String outcome) {
        return Counter.builder("lob_rebuilds_completed").tag("outcome", outcome)
                .description("Catch-ups of tablespaces behind the writer group (or not known to be current) completed: replayed, "
                        + "found current once the group's committed offset was stable, refused (a copy of another log, or one "
                        + "whose log lost records: the task's next start sets it aside or holds it), or stopped as no task here "
                        + "asked for the partition for " + TablespaceCatchUp.MOVED_AFTER.toSeconds() + " s (it moved to another node, or "
                        + "its stream thread stalled)")
                .register(registry);
    }

    private Counter rebuildRecordsCounter() {
        return Counter.builder("lob_rebuild_records").description("Records of lob.commands replayed by catch-ups").register(registry);
    }

    /** Registers the gauge of the records catch-ups under way have still to replay. */
    public void rebuildRemaining(java.util.function.Supplier<Number> records) {
        io.micrometer.core.instrument.Gauge.builder("lob_rebuild_remaining_records", records)
                .description("Records of lob.commands the catch-ups under way on this node have still to replay").register(registry);
    }

    /** A catch-up failed (logged); the task's next start tries again. */
    public void rebuildFailed() {
        rebuildFailedCounter().increment();
    }

    private Counter rebuildFailedCounter() {
        return Counter.builder("lob_rebuild_failures").description("Catch-ups of tablespaces, and checks of every page after a restart "
                + "of the machine without lob.sync, that failed (the task's next start tries again)")
                .register(registry);
    }

    /**
     * A task's start found its partition's log shorter than the writer group's committed offset, whatever its tablespace
     * holds (an unclean leader election): the task does not start until an operator resets the group's offset (logged).
     */
    public void logLost(int partition) {
        logLostCounter(partition).increment();
    }

    private Counter logLostCounter(int partition) {
        return Counter.builder("lob_log_lost_checks").tag("partition", Integer.toString(partition))
                .description("Task starts refused as lob.commands lost records the writer group committed (reset the group's "
                        + "offset: logged)")
                .register(registry);
    }

    /** A task's start found its topic with another partition count than its tablespace was made with (logged). */
    public void partitionCountChanged(int partition) {
        partitionCountChangedCounter(partition).increment();
    }

    private Counter partitionCountChangedCounter(int partition) {
        return Counter.builder("lob_partition_count_changed_checks").tag("partition", Integer.toString(partition))
                .description("Task starts refused as lob.commands has another partition count than when the partition's "
                        + "tablespace was made (partitions were added: LOBs moved away from their history; logged)")
                .register(registry);
    }

    /** {@code n} undo records produced again because purge had consumed them without a reclaim (counted as re-emitted too). */
    public void undoResent(int n) {
        undoResentCounter().increment(n);
    }

    private Counter undoResentCounter() {
        return Counter.builder("lob_undo_records_resent")
                .description("Undo records produced again because purge consumed them without a reclaim (lob.undo.resend.interval.ms)")
                .register(registry);
    }

    public void undo(boolean reemitted) {
        (reemitted ? undoReemitted : undoRecords).increment();
    }
}
