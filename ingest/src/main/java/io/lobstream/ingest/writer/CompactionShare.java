package io.lobstream.ingest.writer;

import java.io.IOException;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * The time the compaction runs of one stream thread's tasks take together: {@link #SHARE_MS} a second, as a token
 * bucket. A run moves for up to 200 ms, after a scan of the index that can take as long again, and holds the thread,
 * whose other tasks wait with its transaction open (10 s timeout under exactly-once). After a burst on every
 * partition, purge leaves holes in each: 32 tasks of a thread compacting one after another would hold it for 6 s or
 * more. A task whose turn finds the share spent skips that turn; the run that spends it past its end is paid back
 * before the next. The tasks of a thread come in the order Kafka Streams punctuates them, so a task whose runs spend
 * the whole share each time (a pass over a large tablespace, again and again) would have it first at every refill:
 * the task that spent it lets the next ones go first once, when it is back. Two such tasks take turns, and the others
 * of their thread compact once they are done.
 */
final class CompactionShare {
    static final long SHARE_MS = 200;
    private static final long SHARE_NANOS = TimeUnit.MILLISECONDS.toNanos(SHARE_MS);
    private static final long PER_NANOS = TimeUnit.SECONDS.toNanos(1);
    /** The share of the thread that punctuates: looked up at each turn, since a task may move to another thread. */
    static final ThreadLocal<CompactionShare> OF_THREAD = ThreadLocal.withInitial(() -> new CompactionShare(System::nanoTime));

    private final LongSupplier nanoClock;
    /** nanoseconds the thread may still spend: up to the share, below zero after a run that went past it */
    private long left = SHARE_NANOS;
    private long refilledAt;
    /** the task (its turn's token) whose run spent the share, and whether another was turned away since: it yields once */
    private Object spentBy;
    private boolean othersWaited;

    CompactionShare(LongSupplier nanoClock) {
        this.nanoClock = nanoClock;
        this.refilledAt = nanoClock.getAsLong();
    }

    /** A compaction run. */
    @FunctionalInterface
    interface Run {
        void run() throws IOException;
    }

    /**
     * Runs {@code task}'s {@code run} if the thread has time left for it, and counts the time it takes.
     *
     * @param task the task's own token, held here until another task spends the share: not the task itself, which
     *             would keep a closed task's state reachable from the thread
     */
    void run(Object task, Run run) throws IOException {
        long start = nanoClock.getAsLong();
        // the share grows back at SHARE_MS a second, up to itself: a run past it is paid back, however long ago
        left = Math.min(SHARE_NANOS, left + (start - refilledAt) / (PER_NANOS / SHARE_NANOS));
        refilledAt = start;
        if (left <= 0) {
            othersWaited |= task != spentBy;
            return;
        }
        if (task == spentBy && othersWaited) {
            spentBy = null;
            othersWaited = false;
            return;
        }
        try {
            run.run();
        } finally {
            left -= nanoClock.getAsLong() - start;
            if (left <= 0) {
                spentBy = task;
                othersWaited = false;
            }
        }
    }
}
