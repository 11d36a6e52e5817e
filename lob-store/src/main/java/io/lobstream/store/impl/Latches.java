package io.lobstream.store.impl;

import io.lobstream.store.StoreMetrics;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantLock;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * The engine's latches, from coarse to fine, and the switch that sets how coarse a publish is.
 * Every acquisition is timed into {@code lob_latch_wait_seconds{latch=...}}.
 * <ul>
 *   <li><b>write</b> (per LOB, striped): orders the writes to one LOB, like a row lock. Taken
 *       first, before any other latch, and held for a whole write.</li>
 *   <li><b>tablespace</b> (one read-write latch): shared by page writes, optimistic publishes
 *       and every other use of the index (reads too); exclusive for pessimistic publishes, fsck
 *       and close, which thereby exclude every writer, and close every user of the index.</li>
 *   <li><b>lob</b> (per LOB, striped): orders publishes with reader pins.</li>
 * </ul>
 * Holds are {@link AutoCloseable}, so a latch taken only when a switch says so can be a
 * {@code null} resource of a try-with-resources.
 */
final class Latches {
    private static final int STRIPES = 1024;

    /** A latch held; closing releases it. */
    interface Held extends AutoCloseable {
        @Override
        void close();
    }

    private final boolean optimisticUpdate;
    private final StoreMetrics metrics;
    private final ReentrantReadWriteLock tablespace = new ReentrantReadWriteLock();
    private final ReentrantLock[] lob = stripes();
    private final ReentrantLock[] write = stripes();

    /** @param optimisticUpdate lob.optimistic.update: a publish takes the tablespace latch shared, not exclusively */
    Latches(boolean optimisticUpdate, StoreMetrics metrics) {
        this.optimisticUpdate = optimisticUpdate;
        this.metrics = metrics;
    }

    Held tablespaceExclusive() {
        return acquire(tablespace.writeLock(), "tablespace");
    }

    Held tablespaceShared() {
        return acquire(tablespace.readLock(), "tablespace");
    }

    /** The LOB's write latch (a row lock), held for a whole write to it. */
    Held write(String lobId) {
        return acquire(stripe(write, lobId), "lob-write");
    }

    /** The LOB's latch alone: what pinning a version for a reader needs. */
    Held lob(String lobId) {
        return acquire(stripe(lob, lobId), "lob");
    }

    /**
     * The latches a publish holds: optimistic = the LOB's latch, plus the tablespace latch shared
     * (so fsck and close can exclude writers); pessimistic = the tablespace latch exclusively, plus
     * the LOB's latch (which orders publishes with pins).
     */
    Held publish(String lobId) {
        Held outer = optimisticUpdate ? tablespaceShared() : tablespaceExclusive();
        Held inner = lob(lobId);
        return () -> {
            inner.close();
            outer.close();
        };
    }

    private Held acquire(Lock lock, String latchName) {
        if (tryNow(lock)) {
            metrics.latchAcquired(latchName, 0);
        } else {
            long t0 = System.nanoTime();
            lock.lock();
            metrics.latchAcquired(latchName, System.nanoTime() - t0);
        }
        return lock::unlock;
    }

    /**
     * Takes {@code lock} if it is free now. Not {@code tryLock()}: a read lock's untimed try takes it past a queued writer,
     * so a stream of readers and writers sharing the tablespace latch would hold close, fsck and pessimistic publishes
     * off it for as long as the stream lasts. The timed try, like {@code lock()}, yields to a writer queued first (and
     * still lets a thread that holds the read lock take it again).
     */
    private static boolean tryNow(Lock lock) {
        try {
            return lock.tryLock(0, TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt(); // kept for the caller; lock() below does not heed it
            return false;
        }
    }

    private static ReentrantLock stripe(ReentrantLock[] stripes, String lobId) {
        return stripes[Math.floorMod(lobId.hashCode(), STRIPES)];
    }

    private static ReentrantLock[] stripes() {
        ReentrantLock[] locks = new ReentrantLock[STRIPES];
        for (int i = 0; i < STRIPES; i++) {
            locks[i] = new ReentrantLock();
        }
        return locks;
    }
}
