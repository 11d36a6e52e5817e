package io.lobstream.store.impl;

import io.lobstream.store.StoreMetrics;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

class LatchesTest {
    private final Latches latches = new Latches(true, StoreMetrics.unregistered("p-0"));

    /**
     * A shared hold taken while an exclusive one waits in the queue would let a stream of readers and writers keep close,
     * fsck and pessimistic publishes waiting for as long as the stream lasts: the shared one waits its turn.
     */
    @Test
    void aSharedHoldWaitsBehindAnExclusiveOneQueuedFirst() throws Exception {
        List<String> order = new CopyOnWriteArrayList<>();
        Thread exclusive;
        Thread shared;
        try (Latches.Held first = latches.tablespaceShared()) {
            exclusive = started("exclusive", () -> {
                try (Latches.Held h = latches.tablespaceExclusive()) {
                    order.add("exclusive");
                }
            });
            awaitWaiting(exclusive);
            shared = started("shared", () -> {
                try (Latches.Held h = latches.tablespaceShared()) {
                    order.add("shared");
                }
            });
            awaitWaiting(shared);
            try (Latches.Held again = latches.tablespaceShared()) {
                order.add("reentrant"); // a thread that holds it shared takes it again: no deadlock on a nested hold
            }
        }
        exclusive.join(10_000);
        shared.join(10_000);
        assertThat(order).containsExactly("reentrant", "exclusive", "shared");
    }

    private static Thread started(String name, Runnable r) {
        Thread t = new Thread(r, name);
        t.start();
        return t;
    }

    private static void awaitWaiting(Thread t) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (t.getState() != Thread.State.WAITING && System.nanoTime() < deadline) {
            Thread.sleep(1);
        }
        assertThat(t.getState()).as(t.getName() + " waits").isEqualTo(Thread.State.WAITING);
    }
}
