package io.lobstream.store.impl;

import java.io.IOException;

/**
 * The {@link Latches} of a store that may be closed: each is let go again, and the closing reported, when the store
 * closed while it was awaited. Close takes the tablespace latch exclusively and marks the store closed under it, so a
 * holder of one of these never reaches a closed RocksDB (which would crash the JVM).
 */
interface OpenLatches {
    /** The tablespace latch, shared. @throws IOException "tablespace ... is closed" if it is */
    Latches.Held shared() throws IOException;

    /** {@link #shared()} for the entry points that declare no IOException: throws IllegalStateException instead. */
    Latches.Held sharedUnchecked();

    /** The tablespace latch, exclusively. */
    Latches.Held exclusive() throws IOException;

    /** The latches of a publish to {@code lobId} ({@link Latches#publish}). */
    Latches.Held publishing(String lobId) throws IOException;

    /** Whether the store is closed: read under a latch taken from {@link Latches} directly, not through these. */
    boolean closed();

    /** What the store's closing is reported as: "tablespace ... is closed". */
    IOException closedException();
}
