package io.lobstream.ingest.writer;

/**
 * How far the purge group has consumed {@code lob.undo-history}, as the writer needs it to find
 * undo records that were consumed without their version being reclaimed.
 */
public interface PurgeProgress {
    /**
     * A wall-clock time (ms) such that every undo record committed to {@code partition} before it
     * has been consumed by the purge group, and every reclaim record made from those has been
     * applied by the writer; or {@link Long#MIN_VALUE} while that is not known.
     */
    long consumedBefore(int partition);

    /** Nothing is known: nothing is ever produced again. */
    PurgeProgress UNKNOWN = partition -> Long.MIN_VALUE;
}
