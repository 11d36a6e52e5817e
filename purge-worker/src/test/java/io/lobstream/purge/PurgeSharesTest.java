package io.lobstream.purge;

import org.junit.jupiter.api.Test;

import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** How the purge workers inside a node split its open partitions. */
class PurgeSharesTest {
    @Test
    void everyOpenPartitionGoesToExactlyOneWorkerAndTheWorkersGetAsManyEach() {
        PurgeShares shares = new PurgeShares(() -> Set.of(7, 0, 3, 5, 2), 3);
        Set<Integer> all = new HashSet<>();
        int taken = 0;
        for (int worker = 0; worker < 3; worker++) {
            Set<Integer> mine = shares.of(worker);
            assertThat(mine.size()).isBetween(1, 2);
            taken += mine.size();
            all.addAll(mine);
        }
        assertThat(all).containsExactlyInAnyOrder(7, 0, 3, 5, 2);
        assertThat(taken).as("no partition twice").isEqualTo(5);
    }

    /** Ranked by position, partition 1 closing would have moved 2 and 3 to the other worker. */
    @Test
    void aPartitionKeepsItsWorkerWhileOthersOpenAndClose() {
        AtomicReference<Set<Integer>> open = new AtomicReference<>(Set.of(0, 1, 2, 3));
        PurgeShares shares = new PurgeShares(open::get, 2);
        Set<Integer> first = shares.of(0);
        Set<Integer> second = shares.of(1);
        assertThat(first).hasSize(2);
        open.set(Set.of(0, 2, 3));
        Set<Integer> kept = new HashSet<>(first);
        kept.remove(1);
        assertThat(shares.of(0)).isEqualTo(kept);
        Set<Integer> keptSecond = new HashSet<>(second);
        keptSecond.remove(1);
        assertThat(shares.of(1)).isEqualTo(keptSecond);
        open.set(Set.of(0, 2, 3, 6));
        assertThat(shares.of(first.contains(1) ? 0 : 1)).as("the new one to the worker with the fewest").contains(6);
    }

    /** The partitions that closed were all one worker's: one of the other's moves over, not one worker idle. */
    @Test
    void sharesThatDriftApartAreEvenedOut() {
        AtomicReference<Set<Integer>> open = new AtomicReference<>(Set.of(0, 1, 2, 3));
        PurgeShares shares = new PurgeShares(open::get, 2);
        open.set(shares.of(1));
        assertThat(shares.of(0)).hasSize(1);
        assertThat(shares.of(1)).hasSize(1);
    }

    @Test
    void moreWorkersThanPartitionsLeavesSomeIdle() {
        PurgeShares one = new PurgeShares(() -> Set.of(4), 2);
        assertThat(one.of(0)).containsExactly(4);
        assertThat(one.of(1)).isEmpty();
        assertThat(new PurgeShares(Set::of, 2).of(0)).isEmpty();
    }

    /** A node started with --purge-workers 0 (the compose file's, whose purge runs in its own container) makes none. */
    @Test
    void noWorkersIsANodeWithoutPurgeOfItsOwn() {
        PurgeShares none = new PurgeShares(() -> Set.of(0, 1), 0);
        assertThatThrownBy(() -> none.of(0)).isInstanceOf(IllegalArgumentException.class);
    }
}
