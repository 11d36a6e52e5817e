package io.lobstream.purge;

/**
 * A pause that doubles with each failure in a row, from a second up to a minute, and starts again from a second once
 * {@link #reset}: a failure that stays (a missing ACL, a bug) is retried and logged less and less often, never given up.
 */
final class Backoff {
    static final long MIN_MS = 1_000;
    static final long MAX_MS = 60_000;

    private long nextMs = MIN_MS;

    /** The pause for this failure; the next one's is twice as long. */
    long next() {
        long pause = nextMs;
        nextMs = Math.min(MAX_MS, nextMs * 2);
        return pause;
    }

    void reset() {
        nextMs = MIN_MS;
    }
}
