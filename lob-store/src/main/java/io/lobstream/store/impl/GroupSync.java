package io.lobstream.store.impl;

import java.io.IOException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongConsumer;

/**
 * Group commit: concurrent writers that each need an fsync share one. The first writer to
 * arrive becomes the leader and runs the sync; writers that arrive while it runs wait and are
 * covered by the next sync, which one of them leads. With an interval, the leader first waits
 * that long so more writers can join its group (fewer syncs, more latency), unless it gathers
 * none ({@link #await(boolean)}).
 *
 * <p>Correctness: a writer takes its ticket after its own writes, and a leader reads the newest
 * ticket before it syncs, so every ticket up to that one was written before the sync began.
 */
final class GroupSync {

    /** The sync to share, e.g. {@code fdatasync} of the page file. */
    @FunctionalInterface
    public interface SyncAction {
        void sync() throws IOException;
    }

    private final SyncAction action;
    private final long intervalNanos;
    private final Runnable onSync;
    /** How a leader waits for more writers: {@link LockSupport#parkNanos(long)}, but in tests. */
    private final LongConsumer gatherFor;
    private long requested;
    private long completed;
    private boolean syncing;

    /** @param onSync told after each sync (metrics) */
    public GroupSync(SyncAction action, long intervalMillis, Runnable onSync) {
        this(action, intervalMillis, onSync, GroupSync::parkFor);
    }

    /** The whole interval: {@code parkNanos} may return early (spuriously, or on a permit a lock's handoff left). */
    private static void parkFor(long nanos) {
        long deadline = System.nanoTime() + nanos;
        for (long left = nanos; left > 0 && !Thread.currentThread().isInterrupted(); left = deadline - System.nanoTime()) {
            LockSupport.parkNanos(left);
        }
    }

    GroupSync(SyncAction action, long intervalMillis, Runnable onSync, LongConsumer gatherFor) {
        this.action = action;
        this.intervalNanos = TimeUnit.MILLISECONDS.toNanos(intervalMillis);
        this.onSync = onSync;
        this.gatherFor = gatherFor;
    }

    /**
     * Returns once a sync that began after this call has completed. Not interruptible: an interrupt
     * that arrives meanwhile (or before) is kept and the thread's interrupt status set again on
     * return. Until then the status is clear, so that a thread that leads the sync does not run it
     * interrupted: an interrupted thread's {@code FileChannel.force} closes the channel for every
     * thread that uses it. (An interrupt that arrives during the sync itself still does.)
     */
    public void await() throws IOException {
        await(true);
    }

    /**
     * As {@link #await()}; {@code gather} false: a leader does not wait the interval for more writers to join (one that
     * a stream thread's punctuation runs many times in a row, as compaction's moves, would hold it for all of them).
     */
    public void await(boolean gather) throws IOException {
        boolean interrupted = Thread.interrupted();
        try {
            long ticket;
            synchronized (this) {
                ticket = ++requested;
                while (syncing && completed < ticket) {
                    try {
                        wait();
                    } catch (InterruptedException e) {
                        // wait() cleared the status: wait on (the monitor is released only while waiting), set it on return
                        interrupted = true;
                    }
                }
                // a wait() notified and interrupted at once may return normally with the status still set: clear it too,
                // or the thread could lead the next sync interrupted
                interrupted |= Thread.interrupted();
                if (completed >= ticket) {
                    return;
                }
                syncing = true;
            }
            if (gather && intervalNanos > 0) {
                gatherFor.accept(intervalNanos);
                interrupted |= Thread.interrupted(); // an interrupt ends the park and stays set: clear it before the sync
            }
            lead();
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Runs the sync for every ticket taken so far, then wakes the waiters. */
    private void lead() throws IOException {
        long upTo;
        synchronized (this) {
            upTo = requested;
        }
        boolean synced = false;
        try {
            action.sync();
            synced = true;
            onSync.run();
        } finally {
            synchronized (this) {
                syncing = false;
                if (synced) {
                    completed = Math.max(completed, upTo);
                }
                // on any failure (an unchecked one too) the followers retry: the next leader syncs again
                notifyAll();
            }
        }
    }
}
