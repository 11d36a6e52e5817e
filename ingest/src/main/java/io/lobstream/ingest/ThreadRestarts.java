package io.lobstream.ingest;

import java.time.Duration;

/**
 * How long a writer thread that failed waits before it is replaced. A failure that comes back at
 * once (a full disk, a tablespace the disk refuses) would otherwise replace the thread, rebalance,
 * reopen the tablespace and fail again many times a second, each time with a stack trace. The
 * first failure is replaced at once; each further one in a row waits twice as long, up to
 * {@link #MAX}; a thread that ran {@link #QUIET} without failing starts the count again.
 */
final class ThreadRestarts {
    static final Duration FIRST = Duration.ofSeconds(1);
    /** Short of the shutdown hook's grace: a close waits for the thread that waits here. */
    static final Duration MAX = Duration.ofSeconds(30);
    static final Duration QUIET = Duration.ofMinutes(5);

    private int inARow;
    private long lastFailureNanos;

    /** Records a failure at {@code nowNanos} ({@link System#nanoTime()}); returns how long to wait before replacing the thread. */
    synchronized Duration afterFailure(long nowNanos) {
        if (inARow > 0 && nowNanos - lastFailureNanos > QUIET.toNanos()) {
            inARow = 0;
        }
        lastFailureNanos = nowNanos;
        inARow++;
        if (inARow == 1) {
            return Duration.ZERO;
        }
        long factor = 1L << Math.min(inARow - 2, 20);
        return FIRST.multipliedBy(factor).compareTo(MAX) > 0 ? MAX : FIRST.multipliedBy(factor);
    }

    /** The failures in a row so far. */
    synchronized int inARow() {
        return inARow;
    }

    /** The messages of {@code e} and its causes, in one line: the path and page of a full disk are in a cause. */
    static String messages(Throwable e) {
        StringBuilder b = new StringBuilder(String.valueOf(e.getMessage()));
        for (Throwable t = e.getCause(); t != null && t != t.getCause(); t = t.getCause()) {
            b.append(": ").append(t.getMessage());
        }
        return b.toString();
    }

    /** Whether {@code e} or a cause of it is the disk's "no space left". */
    static boolean diskFull(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t.getMessage() != null && t.getMessage().contains("No space left on device")) {
                return true;
            }
        }
        return false;
    }
}
