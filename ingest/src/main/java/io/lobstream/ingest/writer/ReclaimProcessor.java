package io.lobstream.ingest.writer;

import io.lobstream.store.LobStore;
import io.lobstream.store.LogOncePerMinute;
import io.lobstream.avro.ReclaimRecord;
import io.lobstream.schema.Extents;
import io.lobstream.store.ReclaimOutcome;
import io.lobstream.store.Source;
import io.lobstream.store.allocator.Extent;
import io.lobstream.store.index.Rejection;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.streams.processor.api.Record;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * Applies ReclaimRecords from purge workers to the task's tablespace. The store frees a
 * version's pages only if the version is still pending purge and the pages named are exactly
 * its pages; duplicates and stale records change nothing.
 */
final class ReclaimProcessor extends TablespaceProcessor<ReclaimRecord> {

    private static final Logger log = LoggerFactory.getLogger(ReclaimProcessor.class);
    private final LogOncePerMinute refusedSaid = new LogOncePerMinute();

    ReclaimProcessor(Supplier<Deserializer<Object>> deserializers, WriterMetrics metrics) {
        super(deserializers, ReclaimRecord.class, metrics);
    }

    @Override
    protected void apply(Record<byte[], byte[]> record, ReclaimRecord reclaim, LobStore store, Source source) throws IOException {
        // before the offset: read again after a crash (its dead letter aborted with the transaction), it is
        // dead-lettered again even if later reclaims of that transaction moved the offset past it
        List<Extent> extents;
        try {
            extents = Extents.fromAvro(reclaim.getExtents());
            Extent.coalesce(extents); // overlapping extents: the store compares coalesced lists, and would throw there
        } catch (IllegalArgumentException e) {
            deadLetter(record, Rejection.INVALID, "bad extents in ReclaimRecord of " + reclaim.getLobId() + "@" + reclaim.getVersion()
                    + ": " + e.getMessage());
            return;
        }
        if (source.offset() <= store.appliedOffset(source.name())) {
            Optional<Rejection> refused = store.rejection(source);
            if (refused.isPresent()) { // refused, and then refused again
                store.recordRejected(source, refused.get()); // stamped again, as CommandApplier says why
                deadLetter(record, refused.get().kind(), refused.get().reason());
                return;
            }
            // Applied before a restart: then its version is no longer pending, and the store ignores it below. Not skipped
            // on its offset alone: a lob.reclaim deleted and made anew starts its offsets again under the recorded one,
            // and every reclaim below it would be lost (history growing, pages never freed). A reclaim is idempotent.
        }
        ReclaimOutcome outcome;
        try {
            outcome = store.reclaim(reclaim.getLobId(), reclaim.getVersion(), extents, source);
        } catch (IllegalArgumentException e) {
            // refused by the tablespace where the check above found nothing: thrown out of the task, the record would
            // fail it again at every restart and stall the partition; recorded, so that it is refused again if read again
            String reason = "ReclaimRecord of " + reclaim.getLobId() + "@" + reclaim.getVersion() + " refused by the tablespace: "
                    + e.getMessage();
            store.recordRejected(source, new Rejection(Rejection.INVALID, reason));
            deadLetter(record, Rejection.INVALID, reason);
            return;
        }
        metrics.reclaim(outcome);
        if (outcome == ReclaimOutcome.APPLIED && reclaim.getTime() != null) {
            metrics.reclaimApplyLag(Duration.between(reclaim.getTime(), Instant.now()));
        }
    }

    /**
     * A reclaim's timestamp here is {@link ReclaimsFirst}'s, not a time: its dead letter is stamped with the clock. Said
     * too, once a minute at most, with how many since: whatever the version, every path here (one that does not decode,
     * bad extents, a refusal) leaves a version pending purge may have meant to free, and the dead-letter topic is read by
     * no one by default.
     */
    @Override
    protected void deadLetter(Record<byte[], byte[]> record, String kind, String reason) {
        super.deadLetter(record.withTimestamp(context.currentSystemTimeMs()), kind, reason);
        long notSaid = refusedSaid.sayNow(kind);
        if (notSaid >= 0) {
            String at = context.recordMetadata().map(m -> m.topic() + "-" + m.partition() + " offset " + m.offset()).orElse("a reclaim");
            log.warn("{}: reclaim dead-lettered ({}): {}; the version a purge worker meant to free stays pending: its undo "
                    + "record is produced again after lob.undo.resend.interval.ms, each time waiting twice as long (never if 0: "
                    + "then at the tablespace's next open), and the version is named at ERROR after {} such re-sends{}", at, kind,
                    reason, UndoResender.STUCK_AFTER, notSaid == 0 ? "" : " (and " + notSaid + " other reclaims since this was last said)");
        }
    }
}
