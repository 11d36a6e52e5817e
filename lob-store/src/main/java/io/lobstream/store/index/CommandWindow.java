package io.lobstream.store.index;

import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.RocksIterator;

import java.io.IOException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The forgetting of the index's de-duplication window: command ids applied (family 0, {@code commands}) and rejections
 * recorded (family 1, {@code rejected}) older than a time are deleted in rounds, each reading a share of its family and
 * going on where the previous round stopped. Both families are keyed by id, not time, so finding the old entries is a
 * scan; in rounds, none of them reads a whole window on the writer's stream thread ({@link LobIndex#FORGET_SCAN_MAX}).
 * Its own monitor guards the rounds and their read count; the counts of entries put are atomic, added to as batches are
 * written.
 */
final class CommandWindow {
    private final LobIndex index;

    /** Command ids [0], and rejections [1], written since the index opened; and as the last round's size read them. */
    private final AtomicLong[] put = {new AtomicLong(), new AtomicLong()};
    private final long[] putAtLastRound = new long[2];
    /** Where the next round of forgetting begins in commands and in rejected (null: at its first entry). */
    private final byte[][] forgetFrom = new byte[2][];
    /**
     * Per family, a time no entry is older than, as of {@link #putAtFloor} entries put: the lowest limit of the rounds of
     * the last whole pass, which deleted every entry older. A round whose limit is no higher, with nothing put since, has
     * nothing to forget and reads nothing: an idle partition's limit stands still (the latest command time less the window),
     * where its rounds read the same 100,000 ids every housekeeping for ever.
     */
    private final long[] floor = {Long.MIN_VALUE, Long.MIN_VALUE};
    private final long[] putAtFloor = new long[2];
    /** The pass under way: its lowest limit so far, and the entries put when it began. */
    private final long[] passLowest = {Long.MAX_VALUE, Long.MAX_VALUE};
    private final long[] putAtPass = new long[2];
    /** Entries the rounds of forgetting read since the index opened. */
    private long reads;

    CommandWindow(LobIndex index) {
        this.index = index;
    }

    /**
     * Counts a written batch's ids and rejections as put: a pass of forgetting that began before the write may have missed
     * them, and its floor must not cover them.
     */
    void counted(int[] familyPuts) {
        put[0].addAndGet(familyPuts[0]);
        put[1].addAndGet(familyPuts[1]);
    }

    /** {@link LobIndex#forgetCommandsBefore(long, long)}: a round of each family sized to keep ahead of what was put. */
    int forgetBefore(long idsBeforeMillis, long rejectionsBeforeMillis) throws IOException {
        // twice the entries put since the last call at least: a round keeps ahead of a partition that records more than
        // FORGET_SCAN_MAX between two calls, or the window's entries would grow without bound
        return forget(idsBeforeMillis, rejectionsBeforeMillis, roundOf(0), roundOf(1));
    }

    private synchronized int roundOf(int family) {
        long total = put[family].get();
        long since = total - putAtLastRound[family];
        putAtLastRound[family] = total;
        return (int) Math.min(Integer.MAX_VALUE, Math.max(LobIndex.FORGET_SCAN_MAX, 2 * since));
    }

    /** Entries the rounds of forgetting read since the index opened. */
    synchronized long reads() {
        return reads;
    }

    synchronized int forget(long idsBeforeMillis, long rejectionsBeforeMillis, int idsScan, int rejectionsScan) throws IOException {
        int n = 0;
        boolean[] passEnded = new boolean[2];
        byte[][] nextFrom = forgetFrom.clone(); // moved on once the deletes are written: a failed write reads them again
        try (LobIndex.Batch b = index.newBatch()) {
            for (int f = 0; f < 2; f++) {
                ColumnFamilyHandle cf = index.windowFamily(f);
                long before = f == 0 ? idsBeforeMillis : rejectionsBeforeMillis;
                long putNow = put[f].get();
                if (before <= floor[f] && putNow == putAtFloor[f]) {
                    continue; // none older: see floor
                }
                try (RocksIterator it = index.scan(cf)) {
                    byte[] from = forgetFrom[f];
                    if (from == null) { // a pass begins
                        it.seekToFirst();
                        passLowest[f] = before;
                        putAtPass[f] = putNow;
                    } else {
                        it.seek(from);
                        passLowest[f] = Math.min(passLowest[f], before);
                    }
                    int scanMax = f == 0 ? idsScan : rejectionsScan;
                    for (int read = 0; it.isValid() && read < scanMax; it.next(), read++, reads++) {
                        if (LobIndex.bytesLong(it.value()) < before) {
                            b.delete(cf, it.key());
                            n++;
                        }
                    }
                    LobIndex.ended(it);
                    nextFrom[f] = it.isValid() ? it.key() : null; // past the end: the next round from the first
                    passEnded[f] = !it.isValid();
                }
            }
            if (n > 0) { // an empty write would still count as one: needsSync() would have an idle store sync at every commit
                index.write(b);
            }
        }
        System.arraycopy(nextFrom, 0, forgetFrom, 0, 2);
        for (int f = 0; f < 2; f++) {
            if (passEnded[f]) { // its deletes written: no entry there when it began is older than its lowest limit
                floor[f] = passLowest[f];
                putAtFloor[f] = putAtPass[f];
            }
        }
        return n;
    }
}
