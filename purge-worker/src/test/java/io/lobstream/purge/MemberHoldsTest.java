package io.lobstream.purge;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Map;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

class MemberHoldsTest {
    private static final long SECOND = 1_000_000_000L;
    private static final Set<Integer> OURS = Set.of(0, 1, 2);
    private final MemberHolds holds = new MemberHolds("g", Duration.ofSeconds(120));

    /**
     * Partitions members hold are left to them while they commit, or have nothing to purge: one with no committed offset
     * and no undo record yet (where the member commits nothing) too.
     */
    @Test
    void partitionsMembersHoldAndPurgeAreLeftToThem() {
        Map<Integer, String> a = Map.of(0, "a", 1, "a", 2, "a");
        Map<Integer, Long> starts = Map.of(0, 0L, 1, 0L, 2, 7L);
        assertThat(holds.standDownFrom(Map.of(), Map.of(), Map.of(), Map.of(), OURS, 0)).isEmpty();
        assertThat(holds.standDownFrom(a, Map.of(0, 10L, 1, 5L), starts, Map.of(0, 20L, 1, 5L, 2, 7L), OURS, 0)).containsOnly(0, 1, 2);
        // partition 0 commits now and then, 1 has nothing past its committed offset, 2 nothing past its log start
        for (int t = 1; t <= 10; t++) {
            assertThat(holds.standDownFrom(a, Map.of(0, 10L + t, 1, 5L), starts, Map.of(0, 20L + t, 1, 5L, 2, 7L), OURS, t * 60 * SECOND))
                    .containsOnly(0, 1, 2);
        }
    }

    /**
     * A member that holds a partition with undo records past the group's offset and commits nothing for STALLED: the node
     * purges it for STALLED (its own commits do not hand it back), then stands down again; the member keeps it once it
     * commits, and a new holder gets its chance at once.
     */
    @Test
    void aPartitionItsHolderDoesNotPurgeIsTakenBackForAWhile() {
        Map<Integer, String> a = Map.of(0, "a", 1, "a");
        Map<Integer, Long> starts = Map.of(0, 0L, 1, 0L);
        assertThat(holds.standDownFrom(a, Map.of(0, 10L, 1, 10L), starts, Map.of(0, 20L, 1, 20L), OURS, 0)).containsOnly(0, 1);
        assertThat(holds.standDownFrom(a, Map.of(0, 15L, 1, 10L), starts, Map.of(0, 25L, 1, 30L), OURS, 119 * SECOND)).containsOnly(0, 1);
        assertThat(holds.standDownFrom(a, Map.of(0, 15L, 1, 10L), starts, Map.of(0, 25L, 1, 30L), OURS, 120 * SECOND))
                .as("partition 1 stalled, partition 0 moved at 119 s").containsOnly(0);
        // the node's commits move partition 1's offset: still the node's, until 240 s
        assertThat(holds.standDownFrom(a, Map.of(0, 15L, 1, 30L), starts, Map.of(0, 25L, 1, 40L), OURS, 125 * SECOND)).containsOnly(0);
        assertThat(holds.standDownFrom(a, Map.of(0, 16L, 1, 35L), starts, Map.of(0, 25L, 1, 40L), OURS, 239 * SECOND)).containsOnly(0);
        // given back to see whether the member purges now
        assertThat(holds.standDownFrom(a, Map.of(0, 16L, 1, 35L), starts, Map.of(0, 25L, 1, 40L), OURS, 240 * SECOND)).containsOnly(0, 1);
        // it does: it keeps it
        assertThat(holds.standDownFrom(a, Map.of(0, 17L, 1, 38L), starts, Map.of(0, 25L, 1, 45L), OURS, 300 * SECOND)).containsOnly(0, 1);
        // partition 0 has not moved since 300 s: stalled; a rebalance then gives it to member b, which gets its chance
        assertThat(holds.standDownFrom(a, Map.of(0, 17L, 1, 45L), starts, Map.of(0, 25L, 1, 45L), OURS, 600 * SECOND)).containsOnly(1);
        assertThat(holds.standDownFrom(Map.of(0, "b", 1, "a"), Map.of(0, 17L, 1, 45L), starts, Map.of(0, 25L, 1, 45L), OURS, 605 * SECOND))
                .containsOnly(0, 1);
        // no member any more: nothing to stand down from
        assertThat(holds.standDownFrom(Map.of(), Map.of(0, 15L, 1, 30L), Map.of(), Map.of(), OURS, 610 * SECOND)).isEmpty();
    }
}
