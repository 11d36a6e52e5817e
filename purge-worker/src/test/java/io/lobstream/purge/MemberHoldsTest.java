package io.lobstream.purge;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

class MemberHoldsTest {
    private static final long SECOND = 1_000_000_000L;
    private final MemberHolds holds = new MemberHolds("g", Duration.ofSeconds(120));

    /** Partitions members hold are left to them while they commit, or have nothing to purge. */
    @Test
    void partitionsMembersHoldAndPurgeAreLeftToThem() {
        assertThat(holds.standDownFrom(Map.of(), Map.of(), Map.of(), 0)).isEmpty();
        assertThat(holds.standDownFrom(Map.of(0, "a", 1, "a"), Map.of(0, 10L, 1, 5L), Map.of(0, 20L, 1, 5L), 0)).containsOnly(0, 1);
        // partition 0 commits now and then, partition 1 has nothing past its committed offset: neither stalls
        for (int t = 1; t <= 10; t++) {
            assertThat(holds.standDownFrom(Map.of(0, "a", 1, "a"), Map.of(0, 10L + t, 1, 5L), Map.of(0, 20L + t, 1, 5L), t * 60 * SECOND))
                    .containsOnly(0, 1);
        }
    }

    /**
     * A member that holds a partition with undo records past its committed offset and commits nothing for STALLED lacks
     * its tablespace: the node purges it again, and its own commits do not hand it back; a new holder gets its chance.
     */
    @Test
    void aPartitionItsHolderDoesNotPurgeIsTakenBackUntilAnotherMemberHoldsIt() {
        assertThat(holds.standDownFrom(Map.of(0, "a", 1, "a"), Map.of(0, 10L, 1, 10L), Map.of(0, 20L, 1, 20L), 0)).containsOnly(0, 1);
        assertThat(holds.standDownFrom(Map.of(0, "a", 1, "a"), Map.of(0, 15L, 1, 10L), Map.of(0, 25L, 1, 30L), 119 * SECOND))
                .containsOnly(0, 1);
        assertThat(holds.standDownFrom(Map.of(0, "a", 1, "a"), Map.of(0, 15L, 1, 10L), Map.of(0, 25L, 1, 30L), 120 * SECOND))
                .as("partition 1 stalled, partition 0 moved at 119 s").containsOnly(0);
        // the node's commits move partition 1's offset: still the node's
        assertThat(holds.standDownFrom(Map.of(0, "a", 1, "a"), Map.of(0, 15L, 1, 30L), Map.of(0, 25L, 1, 30L), 125 * SECOND))
                .containsOnly(0);
        // a rebalance gives it to member b, which may have the tablespace
        assertThat(holds.standDownFrom(Map.of(0, "a", 1, "b"), Map.of(0, 15L, 1, 30L), Map.of(0, 25L, 1, 40L), 130 * SECOND))
                .containsOnly(0, 1);
        // no member any more: nothing to stand down from
        assertThat(holds.standDownFrom(Map.of(), Map.of(0, 15L, 1, 30L), Map.of(), 135 * SECOND)).isEmpty();
    }
}
