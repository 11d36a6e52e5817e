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

    public WriterMetrics(MeterRegistry registry) {
        this.registry = registry;
        this.undoRecords = Counter.builder("lob_undo_records").description("Undo records produced").register(registry);
        this.undoReemitted = Counter.builder("lob_undo_records_reemitted")
                .description("Undo records produced again for commands found applied after a crash").register(registry);
        this.reclaimApplyLag = Timer.builder("lob_reclaim_apply_lag_seconds").publishPercentileHistogram()
                .description("From a purge worker producing a ReclaimRecord to the writer freeing its pages").register(registry);
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

    public void deadLettered(String kind) {
        Counter.builder("lob_commands_dead_lettered").tag("kind", kind).description("Records sent to the dead-letter topic")
                .register(registry).increment();
    }

    public void reclaim(ReclaimOutcome outcome) {
        Counter.builder("lob_reclaims").tag("outcome", outcome.name().toLowerCase()).description("Reclaim records applied, by outcome")
                .register(registry).increment();
    }

    /** One catch-up slice of a tablespace behind the writer group: the records it replayed, and whether it caught up. */
    public void rebuildSlice(long records, boolean caughtUp) {
        Counter.builder("lob_rebuild_records").description("Records of lob.commands replayed into tablespaces that were behind the writer group")
                .register(registry).increment(records);
        Counter.builder("lob_rebuild_slices").tag("outcome", caughtUp ? "caught_up" : "paused")
                .description("Catch-up slices (lob.writer.rebuild.slice.ms): paused = the task gave way to a poll and goes on later")
                .register(registry).increment();
    }

    public void undo(boolean reemitted) {
        (reemitted ? undoReemitted : undoRecords).increment();
    }

    public double count(String name, String tagKey, String tagValue) {
        Counter c = registry.find(name).tag(tagKey, tagValue).counter();
        return c == null ? 0 : c.count();
    }
}
