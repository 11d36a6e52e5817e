package io.lobstream.purge;

import org.junit.jupiter.api.Test;

import java.util.HashSet;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/** How the purge workers inside a node split its open partitions. */
class PurgeWorkerShareTest {
    @Test
    void everyOpenPartitionGoesToExactlyOneWorker() {
        Set<Integer> open = Set.of(7, 0, 3, 5, 2);
        Set<Integer> all = new HashSet<>();
        int shares = 0;
        for (int worker = 0; worker < 3; worker++) {
            Set<Integer> mine = PurgeWorker.share(open, worker, 3);
            shares += mine.size();
            all.addAll(mine);
        }
        assertThat(all).isEqualTo(open);
        assertThat(shares).as("no partition twice").isEqualTo(open.size());
        assertThat(PurgeWorker.share(open, 0, 3)).as("every third, in order").containsExactlyInAnyOrder(0, 5);
    }

    @Test
    void moreWorkersThanPartitionsLeavesSomeIdle() {
        assertThat(PurgeWorker.share(Set.of(4), 1, 2)).isEmpty();
        assertThat(PurgeWorker.share(Set.of(), 0, 2)).isEmpty();
    }
}
