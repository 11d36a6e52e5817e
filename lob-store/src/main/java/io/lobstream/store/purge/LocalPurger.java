package io.lobstream.store.purge;

import io.lobstream.store.DefaultLobStore;
import io.lobstream.store.ReclaimOutcome;
import io.lobstream.store.index.VersionEntry;

import java.io.Closeable;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * Purge without Kafka, for one store in this process: finds pending versions in the store's
 * index, scans them with a {@link PurgeReader} (so prefetch and skip-load apply exactly as in
 * a purge worker) and reclaims them directly. The engine benchmark and tools use it; the
 * pipeline uses purge workers on {@code lob.undo-history} instead.
 */
public final class LocalPurger implements Closeable {
    private final DefaultLobStore store;
    private final PurgeReader reader;
    private final int batch;

    public LocalPurger(DefaultLobStore store, int batch) throws IOException {
        this.store = store;
        this.reader = new PurgeReader(store.directory(), store.config(), 0);
        this.batch = batch;
    }

    /** Reclaims up to one batch of pending versions; returns how many were reclaimed. */
    public int purgeOnce() throws IOException {
        List<PurgeReader.Request> requests = new ArrayList<>(batch);
        for (VersionEntry e : store.pendingToPurge(batch)) {
            requests.add(request(e));
        }
        int reclaimed = 0;
        for (PurgeReader.Result r : reader.scan(requests)) {
            if (!r.ok()) {
                throw r.failure();
            }
            PurgeReader.Request q = r.request();
            if (store.reclaim(q.lobId(), q.version(), r.extents(), null) == ReclaimOutcome.APPLIED) {
                reclaimed++;
            }
        }
        return reclaimed;
    }

    /** The purge request for a pending version, as its undo record would name it. */
    public static PurgeReader.Request request(VersionEntry pending) {
        return new PurgeReader.Request(pending.lobId(), pending.version(), pending.rootPage(), pending.retained());
    }

    public PurgeReader reader() {
        return reader;
    }

    @Override
    public void close() {
        reader.close();
    }
}
