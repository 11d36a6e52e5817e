package io.lobstream.store.purge;

import io.lobstream.store.LobStore;
import io.lobstream.store.ReclaimOutcome;
import io.lobstream.store.index.VersionEntry;
import io.lobstream.store.page.CorruptPageException;
import io.lobstream.store.page.UnwrittenPageException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.Closeable;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Purge without Kafka, for one store in this process: finds pending versions in the store's
 * index, scans them with a {@link PurgeReader} (so prefetch and skip-load apply exactly as in
 * a purge worker) and reclaims them directly. The engine benchmark uses it, and so does a replay
 * (offline, or a node's catch-up) for the versions its commands supersede; the running pipeline
 * uses purge workers on {@code lob.undo-history} instead.
 */
public final class LocalPurger implements Closeable {
    private static final Logger log = LoggerFactory.getLogger(LocalPurger.class);
    private final LobStore store;
    private final PurgeReader reader;
    private final int batch;
    /** Versions skipped as stale, corrupt or refused by the store (see {@link #purgeOnce()}): each is logged once. */
    private final Set<String> skipped = new HashSet<>();

    public LocalPurger(LobStore store, int batch) throws IOException {
        this.store = store;
        this.reader = new PurgeReader(store.directory(), store.config(), 0);
        this.batch = batch;
    }

    /**
     * Reclaims up to one batch of pending versions. A version whose root or index page is stale
     * (reclaimed meanwhile, its pages granted again or cut) is skipped, as a purge worker skips it,
     * and left out of later batches so that it holds none of them up; so is one whose pages are
     * corrupt, logged as an error with the page. A page the disk could not read fails the call.
     *
     * <p>A batch is flushed before and after. Before: the versions that replaced those it reclaims are durable first,
     * or a crash could bring back an index without a reclaimed version but with its successor, whose pages never
     * reached the disk. After: its reclaims are durable, and their pages go to writers (a reclaim with no source waits
     * for a flush: {@link LobStore#reclaim}).
     *
     * @return the versions dealt with: reclaimed, or skipped (stale, corrupt, or refused by the store) for the first time; 0
     * once there is nothing to do
     */
    public int purgeOnce() throws IOException {
        List<PurgeReader.Request> requests = new ArrayList<>(batch);
        for (VersionEntry e : store.pendingToPurge(batch + skipped.size())) {
            if (requests.size() < batch && !skipped.contains(key(e.lobId(), e.version()))) {
                requests.add(request(e));
            }
        }
        if (requests.isEmpty()) {
            return 0;
        }
        store.flush();
        int reclaimed = 0;
        for (PurgeReader.Result r : reader.scan(requests)) {
            if (r.failure() instanceof UnwrittenPageException || (!r.stale() && r.failure() instanceof CorruptPageException)) {
                // an unwritten root too: the index names this version pending, so its root was written and synced, and is
                // lost. Damage in a superseded version nobody reads: said with its page, and left out as a purge worker
                // leaves it (fsck names every bad page), or one bad page would fail a catch-up, and the partition, for good
                reclaimed += skip(r.request(), r.failure().getMessage(), true) ? 1 : 0;
                continue;
            }
            if (r.stale()) {
                String why = "its pages are no longer its own (reclaimed already?): " + r.failure().getMessage();
                reclaimed += skip(r.request(), why, false) ? 1 : 0;
                continue;
            }
            if (!r.ok()) {
                throw r.failure();
            }
            PurgeReader.Request q = r.request();
            ReclaimOutcome outcome = store.reclaim(q.lobId(), q.version(), r.extents(), null);
            if (outcome == ReclaimOutcome.APPLIED) {
                reclaimed++;
            } else if (outcome == ReclaimOutcome.REJECTED) {
                // the index says it owns other pages than its root names (damage fsck reports): left out like a stale one,
                // or it would fill every later batch, and a batch of nothing but these would end the caller's loop early
                String why = "the pages its root names, " + r.extents() + ", are not those the index says it owns";
                reclaimed += skip(q, why, true) ? 1 : 0;
            }
        }
        if (reclaimed > 0) {
            store.flush();
        }
        return reclaimed;
    }

    /** Leaves a version out of purge from now on; returns whether it was news (and so logged: as an error if {@code damage}). */
    private boolean skip(PurgeReader.Request q, String why, boolean damage) {
        if (!skipped.add(key(q.lobId(), q.version()))) {
            return false;
        }
        if (damage) {
            log.error("{}: not purging {}@{} (root page {}): {}; fsck of the tablespace names every bad page", store.name(), q.lobId(),
                    q.version(), q.rootPage(), why);
        } else {
            log.warn("{}: not purging {}@{}: {}", store.name(), q.lobId(), q.version(), why);
        }
        return true;
    }

    private static String key(String lobId, long version) {
        return version + "@" + lobId;
    }

    /** The purge request for a pending version, as its undo record would name it. */
    public static PurgeReader.Request request(VersionEntry pending) {
        return new PurgeReader.Request(pending.lobId(), pending.version(), pending.rootPage(), pending.retained());
    }

    @Override
    public void close() {
        reader.close();
    }
}
