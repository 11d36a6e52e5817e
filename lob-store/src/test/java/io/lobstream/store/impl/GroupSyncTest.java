package io.lobstream.store.impl;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

import static org.assertj.core.api.Assertions.assertThat;

class GroupSyncTest {
    /**
     * Compaction's moves run in a row on a stream thread: each waited the group commit interval for writers to join (up to
     * a second), 512 of them past max.poll.interval.ms. Against a leader that waits, in the same run.
     */
    @Test
    void aLeaderThatGathersNoneDoesNotWaitTheInterval() throws Exception {
        AtomicInteger syncs = new AtomicInteger();
        List<Long> waits = new CopyOnWriteArrayList<>();
        GroupSync sync = new GroupSync(syncs::incrementAndGet, 300, () -> { }, waits::add);
        sync.await(true);
        assertThat(waits).as("a leader that gathers waits the interval").containsExactly(TimeUnit.MILLISECONDS.toNanos(300));
        for (int i = 0; i < 3; i++) {
            sync.await(false);
        }
        assertThat(syncs.get()).isEqualTo(4);
        assertThat(waits).as("three that gather none wait for nothing").hasSize(1);
    }

    /**
     * An interrupted follower used to spin inside the monitor (wait() threw again at once, without
     * letting go of it), so the leader could never finish its sync: every writer hung.
     */
    @Test
    void anInterruptedFollowerWaitsOnAndKeepsItsInterrupt() throws Exception {
        CountDownLatch inSync = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        List<Boolean> syncedInterrupted = new CopyOnWriteArrayList<>();
        AtomicInteger syncs = new AtomicInteger();
        GroupSync sync = new GroupSync(() -> {
            syncedInterrupted.add(Thread.currentThread().isInterrupted());
            if (syncs.incrementAndGet() == 1) {
                inSync.countDown();
                try {
                    release.await();
                } catch (InterruptedException e) {
                    throw new AssertionError(e);
                }
            }
        }, 0, () -> { });

        Thread leader = new Thread(() -> await(sync));
        leader.start();
        assertThat(inSync.await(10, TimeUnit.SECONDS)).isTrue();
        AtomicBoolean followerInterrupted = new AtomicBoolean();
        Thread follower = new Thread(() -> {
            await(sync);
            followerInterrupted.set(Thread.currentThread().isInterrupted());
        });
        follower.start();
        awaitState(follower, Thread.State.WAITING);
        follower.interrupt();
        Thread.sleep(100);
        release.countDown();

        leader.join(10_000);
        follower.join(10_000);
        assertThat(leader.isAlive()).as("leader finished").isFalse();
        assertThat(follower.isAlive()).as("follower finished").isFalse();
        assertThat(followerInterrupted).as("the follower's interrupt is kept").isTrue();
        // the follower arrived after the first sync began, so it led a second one, with its interrupt status clear
        assertThat(syncedInterrupted).containsExactly(false, false);
    }

    @Test
    void aLeaderThatArrivesInterruptedSyncsWithItsStatusClearAndGetsItBack() throws Exception {
        List<Boolean> syncedInterrupted = new CopyOnWriteArrayList<>();
        GroupSync sync = new GroupSync(() -> syncedInterrupted.add(Thread.currentThread().isInterrupted()), 1, () -> { });
        Thread.currentThread().interrupt();
        try {
            sync.await();
        } finally {
            assertThat(Thread.interrupted()).as("interrupt status set again").isTrue();
        }
        assertThat(syncedInterrupted).containsExactly(false);
    }

    /**
     * A sync that fails unchecked covers no one: a follower that took its ticket while the leader waited out the interval
     * leads a sync of its own, and returns only after it. The interval is long, and the leader is woken from it once the
     * follower waits with its ticket taken, so the follower is in the leader's group however slow the machine; then the
     * follower, leading its own.
     */
    @Test
    void aSyncThatFailsUncheckedIsNotTakenForDone() throws Exception {
        AtomicInteger syncs = new AtomicInteger();
        GroupSync sync = new GroupSync(() -> {
            if (syncs.incrementAndGet() == 1) {
                throw new IllegalStateException("the sync's own bug");
            }
        }, 600_000, () -> { }, LockSupport::parkNanos); // one park, which the unparks below end (the node's waits it out)
        AtomicBoolean leaderFailed = new AtomicBoolean();
        Thread leader = new Thread(() -> {
            try {
                await(sync);
            } catch (IllegalStateException e) {
                leaderFailed.set(true);
            }
        });
        leader.start();
        awaitState(leader, Thread.State.TIMED_WAITING); // parked for the interval, its ticket taken
        Thread follower = new Thread(() -> await(sync));
        follower.start();
        awaitState(follower, Thread.State.WAITING); // its ticket taken, waiting for the leader's sync
        LockSupport.unpark(leader);
        leader.join(10_000);
        LockSupport.unpark(follower); // leading its own sync now: not to wait out the interval (a permit, if not parked yet)
        follower.join(10_000);
        assertThat(leaderFailed).isTrue();
        assertThat(syncs).as("the follower synced again").hasValue(2);
        assertThat(follower.isAlive()).isFalse();
    }

    private static void awaitState(Thread t, Thread.State state) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (t.getState() != state) {
            assertThat(System.nanoTime() - deadline).as(t.getName() + " never " + state).isNegative();
            Thread.sleep(1);
        }
    }

    private static void await(GroupSync sync) {
        try {
            sync.await();
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
