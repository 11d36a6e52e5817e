package io.lobstream.ingest.writer;

/**
 * How far the purge group has consumed {@code lob.undo-history}, as the writer needs it to find
 * undo records that were consumed without their version being reclaimed.
 */
public interface PurgeProgress {
    /**
     * A wall-clock time (ms) such that every undo record committed to {@code partition} before it
     * had been consumed by the purge group (its offset committed) at least one check interval ago,
     * so the reclaim records produced with that commit have had that long to reach the writer; or
     * {@link Long#MIN_VALUE} while that is not known.
     */
    long consumedBefore(int partition);

    /** Nothing is known: nothing is ever produced again. */
    PurgeProgress UNKNOWN = partition -> Long.MIN_VALUE;
}
