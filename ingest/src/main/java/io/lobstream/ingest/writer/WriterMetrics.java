package io.lobstream.ingest.writer;

import io.lobstream.store.ReclaimOutcome;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;

import java.time.Duration;

/** Meters of the writer topology. */
public final class WriterMetrics {
    private final MeterRegistry registry;
    private final Counter undoRecords;
    private final Counter undoReemitted;
    private final Timer reclaimApplyLag;
    private final Timer commandApplyLag;

    public WriterMetrics(MeterRegistry registry) {
        this.registry = registry;
        this.undoRecords = Counter.builder("lob_undo_records").description("Undo records produced").register(registry);
        this.undoReemitted = Counter.builder("lob_undo_records_reemitted")
                .description("Undo records produced again: for commands found applied after a crash, for the versions pending "
                        + "when a tablespace opens, and for versions still pending after purge consumed their undo records").register(registry);
        // buckets up to an hour, not Micrometer's 30 s: a writer far behind is what these are watched for
        this.reclaimApplyLag = Timer.builder("lob_reclaim_apply_lag_seconds").publishPercentileHistogram()
                .maximumExpectedValue(Duration.ofHours(1))
                .description("From a purge worker producing a ReclaimRecord to the writer freeing its pages").register(registry);
        this.commandApplyLag = Timer.builder("lob_command_apply_lag_seconds").publishPercentileHistogram()
                .maximumExpectedValue(Duration.ofHours(1))
                .description("From a command's record timestamp (its producer's send time, or the broker's append time) to the "
                        + "writer applying it, each chunk of an upload counted: how far behind the writer is, in time").register(registry);
    }

    /** A command or a chunk of an upload applied, {@code lag} after its record's timestamp. */
    public void commandApplyLag(Duration lag) {
        commandApplyLag.record(lag.isNegative() ? Duration.ZERO : lag);
    }

    public void reclaimApplyLag(Duration lag) {
        reclaimApplyLag.record(lag.isNegative() ? Duration.ZERO : lag);
    }

    public void applied(String op) {
        Counter.builder("lob_commands_applied").tag("op", op).description("Commands applied to a tablespace").register(registry).increment();
    }

    public void skipped(String reason) {
        Counter.builder("lob_commands_skipped").tag("reason", reason)
                .description("Commands not applied again: applied before a restart, or sent twice (same commandId)")
                .register(registry).increment();
    }

    public void chunk() {
        Counter.builder("lob_upload_chunks").description("Chunks of uploads written (the last one counts as a PUT applied)")
                .register(registry).increment();
    }

    public void uploadsExpired(int n) {
        Counter.builder("lob_uploads_expired").description("Uploads dropped after lob.upload.timeout.ms without a chunk")
                .register(registry).increment(n);
    }

    /** A record of {@code topic} (lob.commands, or lob.reclaim) sent to the dead-letter topic as {@code kind}. */
    public void deadLettered(String kind, String topic) {
        Counter.builder("lob_commands_dead_lettered").tag("kind", kind).tag("topic", topic)
                .description("Records sent to the dead-letter topic, by kind and by the topic they came from").register(registry).increment();
    }

    public void reclaim(ReclaimOutcome outcome) {
        Counter.builder("lob_reclaims").tag("outcome", outcome.name().toLowerCase()).description("Reclaim records applied, by outcome")
                .register(registry).increment();
    }

    /** A tablespace behind the writer group started catching up from lob.commands. */
    public void rebuildStarted() {
        Counter.builder("lob_rebuilds_started").description("Catch-ups of tablespaces behind the writer group started (lob-rebuild-P threads)")
                .register(registry).increment();
    }

    /** A catch-up finished, having replayed {@code records} records (none: the tablespace was current after all). */
    public void rebuilt(long records) {
        Counter.builder("lob_rebuilds_completed").tag("outcome", records > 0 ? "replayed" : "current")
                .description("Catch-ups of tablespaces behind the writer group (or not known to be current) completed: replayed, "
                        + "or found current once the group's committed offset was stable")
                .register(registry).increment();
        Counter.builder("lob_rebuild_records").description("Records of lob.commands replayed by catch-ups")
                .register(registry).increment(records);
    }

    /** Registers the gauge of the records catch-ups under way have still to replay. */
    public void rebuildRemaining(java.util.function.Supplier<Number> records) {
        io.micrometer.core.instrument.Gauge.builder("lob_rebuild_remaining_records", records)
                .description("Records of lob.commands the catch-ups under way on this node have still to replay").register(registry);
    }

    /** A catch-up failed (logged); the task's next start tries again. */
    public void rebuildFailed() {
        Counter.builder("lob_rebuild_failures").description("Catch-ups of tablespaces, and checks of every page after a restart "
                + "of the machine without lob.sync, that failed (the task's next start tries again)")
                .register(registry).increment();
    }

    /**
     * A task's start found its partition's log shorter than both its tablespace and the writer group's committed offset
     * (an unclean leader election): the task does not start until an operator resets the group's offset (logged).
     */
    public void logLost(int partition) {
        Counter.builder("lob_log_lost_checks").tag("partition", Integer.toString(partition))
                .description("Task starts refused as lob.commands lost records the writer group committed (reset the group's "
                        + "offset: logged)")
                .register(registry).increment();
    }

    /** A task's start found its topic with another partition count than its tablespace was made with (logged). */
    public void partitionCountChanged(int partition) {
        Counter.builder("lob_partition_count_changed_checks").tag("partition", Integer.toString(partition))
                .description("Task starts refused as lob.commands has another partition count than when the partition's "
                        + "tablespace was made (partitions were added: LOBs moved away from their history; logged)")
                .register(registry).increment();
    }

    /** {@code n} undo records produced again because purge had consumed them without a reclaim (counted as re-emitted too). */
    public void undoResent(int n) {
        Counter.builder("lob_undo_records_resent")
                .description("Undo records produced again because purge consumed them without a reclaim (lob.undo.resend.interval.ms)")
                .register(registry).increment(n);
    }

    public void undo(boolean reemitted) {
        (reemitted ? undoReemitted : undoRecords).increment();
    }

    public double count(String name, String tagKey, String tagValue) {
        Counter c = registry.find(name).tag(tagKey, tagValue).counter();
        return c == null ? 0 : c.count();
    }
}
