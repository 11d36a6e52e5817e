package io.lobstream.store.impl;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.DoubleSupplier;
import java.util.function.LongConsumer;

/**
 * Backpressure, InnoDB's {@code innodb_max_purge_lag} but on by default: past {@code lob.history.max} versions, or
 * {@code lob.history.max.ratio} of the live pages, waiting for purge, a write first sleeps in proportion to the excess,
 * up to {@code lob.history.max.delay.ms} at twice the limit. Writers thereby slow to the rate purge reclaims, and space
 * stays bounded, while purge runs: the delay is capped (a write never waits unboundedly on a purge that may never come
 * back), so with every purge worker down writes go on at the delayed rate and history grows (ARCHITECTURE.md departs from
 * DESIGN.md there; the purge-lag meters and alerts say so). The sleep is taken before any latch, so it holds back no
 * reader and no other thread's writer; but it holds the calling thread, which in a node is a stream thread: the other
 * tablespaces that thread runs wait with it.
 */
final class Backpressure {
    private final DoubleSupplier excess;
    private final long maxDelayNanos;
    private final LongConsumer slept;

    /**
     * @param excess     how far history is past its limits, as a share of the limit (0 within them)
     * @param maxDelayMs the longest one write sleeps, reached at an excess of 1
     * @param slept      told of each sleep's nanoseconds (a meter)
     */
    Backpressure(DoubleSupplier excess, long maxDelayMs, LongConsumer slept) {
        this.excess = excess;
        this.maxDelayNanos = TimeUnit.MILLISECONDS.toNanos(maxDelayMs);
        this.slept = slept;
    }

    /** How long a write sleeps now: none within the limits, in proportion to the excess, the longest at twice the limit. */
    long delayNanos() {
        double e = excess.getAsDouble();
        return e <= 0 ? 0 : (long) (maxDelayNanos * Math.min(1.0, e));
    }

    /** Sleeps {@link #delayNanos()}, if any. */
    void await() {
        long delay = delayNanos();
        if (delay <= 0) {
            return;
        }
        long start = System.nanoTime();
        LockSupport.parkNanos(delay);
        slept.accept(System.nanoTime() - start); // the time slept: a park may end early (an interrupt) or late
    }
}
