package io.lobstream.store;

/** What a reclaim request did. */
public enum ReclaimOutcome {
    /** The version's pages are free. */
    APPLIED,
    /**
     * A reader pins the version: its pages are freed when the last pin is released, or, once the pins lapse
     * ({@code lob.read.pin.max.ms}), at the next {@code LobStore.reclaimPastPinLeases()} (a node's housekeeping).
     */
    DEFERRED,
    /**
     * Nothing freed now: the version is not pending purge (already reclaimed, or never superseded), or its reclaim was
     * already asked for and waits for a reader ({@link #DEFERRED} before) or for a compaction move's old copy.
     */
    IGNORED,
    /** The pages named do not match the version's pages: nothing freed. */
    REJECTED
}
