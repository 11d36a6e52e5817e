package io.lobstream.store.impl;

import io.lobstream.store.Source;
import io.lobstream.store.index.LobIndex;
import io.lobstream.store.index.Rejection;

import java.io.IOException;

/**
 * What the index keeps of the command a change came from, in the batch of the change itself:
 * the offset applied from its source and the latest command time read from it, its commandId (for
 * de-duplicating a re-sent command) or, for a command refused, why. One batch for both is what makes a command applied exactly once
 * across a crash. A null {@link Source} (a change of the engine's own, such as a relocation)
 * records nothing.
 */
final class SourceMarks {
    private SourceMarks() {
    }

    /** Adds to {@code batch} that the command at {@code source} was applied. */
    static void applied(LobIndex index, LobIndex.Batch batch, Source source) throws IOException {
        if (source != null) {
            long at = putApplied(index, batch, source);
            if (source.commandId() != null) {
                // stamped with the commands' time at it, where the window ends: with its own, an id whose time went back
                // by d would be remembered d less than the window
                batch.putCommand(source.commandId(), source.atMillis() == Source.UNKNOWN_TIME ? source.atMillisOrNow() : at,
                        source.fingerprint());
            }
        }
    }

    /**
     * Adds to {@code batch} that the command at {@code source} was refused, and why, as applied from there. The
     * applied offset only moves forward, as in {@link #recordApplied}: a command refused again when read again after a
     * crash keeps its rejection without taking the offset back.
     */
    static void rejected(LobIndex index, LobIndex.Batch batch, Source source, Rejection why) throws IOException {
        if (source != null) {
            // the offset, not the commandId: the same command sent again later may well apply
            if (source.offset() > index.applied(source.name())) {
                putApplied(index, batch, source);
            }
            batch.putRejected(source.name(), source.offset(), why, System.currentTimeMillis());
        }
    }

    /**
     * Writes that the record at {@code source} was applied, with no other change (a duplicate, a reclaim ignored, a
     * record skipped). Forward only: a record read again after a crash must not take the offset back below what
     * later records did, or a command refused earlier would be judged again against a store that moved on.
     */
    static void recordApplied(LobIndex index, Source source) throws IOException {
        if (source != null && source.offset() > index.applied(source.name())) {
            try (LobIndex.Batch batch = index.newBatch()) {
                applied(index, batch, source);
                index.write(batch);
            }
        }
    }

    /**
     * The offset, and the latest command time read from the source so far: the time the de-duplication window ends at
     * ({@link io.lobstream.store.LobStore#latestTime}). The latest, not this command's: times can go back (a leader change
     * to a broker whose clock is behind, producers' clocks on a CreateTime topic), and a window that ended at each
     * command's own time would reach ids a writer had already forgotten by a later one, and a replay had not. Returns that
     * latest time (this command's included).
     */
    private static long putApplied(LobIndex index, LobIndex.Batch batch, Source source) throws IOException {
        long latest = Math.max(index.latestTime(source.name(), Source.UNKNOWN_TIME), source.atMillis()); // (UNKNOWN_TIME: the least)
        batch.putApplied(source.name(), source.offset(), latest);
        return latest;
    }

    /** The offset of {@code source}, or -1 for the engine's own changes. */
    static long offsetOf(Source source) {
        return source == null ? -1 : source.offset();
    }
}
