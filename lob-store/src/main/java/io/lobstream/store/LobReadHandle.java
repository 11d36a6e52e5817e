package io.lobstream.store;

import io.lobstream.store.index.VersionEntry;

import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;

/**
 * A pinned version of a LOB. While it is open the version's pages are not freed, even if the
 * version is superseded and purged meanwhile (MVCC), for at most {@code lob.read.pin.max.ms} (0: for
 * as long as it is open): past that purge goes on, and a read of pages reused since fails with a
 * page error, never with other bytes. A copy compaction moved meanwhile is kept until the handle
 * closes. {@link #close()} releases the pin.
 */
public interface LobReadHandle extends Closeable {
    VersionEntry version();

    long length();

    /** Bytes {@code [from, to)} of the value, read page by page. */
    InputStream stream(long from, long to) throws IOException;

    @Override
    void close();
}
