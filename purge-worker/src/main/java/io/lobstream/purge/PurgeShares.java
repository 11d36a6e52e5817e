package io.lobstream.purge;

import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Supplier;

/**
 * How the purge workers inside a writer node split its open partitions: a partition keeps the
 * worker it was given for as long as it stays open (unless the shares drift more than one apart),
 * and one newly open goes to the worker with the fewest. Ranked by position instead, a partition
 * opening or closing (each start, each rebalance) would move every partition after it to another
 * worker, which would start again from the group's committed offset while the first still purged
 * its open transaction: each version in between read and reclaimed twice, and the committed offset
 * possibly taken back.
 */
final class PurgeShares {
    private final Supplier<Set<Integer>> open;
    private final int count;
    private final Map<Integer, Integer> workerOf = new HashMap<>();

    /** @param open the node's open partitions, asked at each {@link #of} */
    PurgeShares(Supplier<Set<Integer>> open, int count) {
        if (count < 0) { // 0: a node with no purge workers of its own (--purge-workers 0), whose shares nobody asks for
            throw new IllegalArgumentException("count " + count);
        }
        this.open = open;
        this.count = count;
    }

    /** Worker {@code index}'s share of the partitions open now. */
    synchronized Set<Integer> of(int index) {
        if (index < 0 || index >= count) {
            throw new IllegalArgumentException("worker " + index + " of " + count);
        }
        Set<Integer> now = open.get();
        workerOf.keySet().retainAll(now);
        int[] load = new int[count];
        workerOf.values().forEach(w -> load[w]++);
        for (int p : new TreeSet<>(now)) {
            if (!workerOf.containsKey(p)) {
                int least = 0;
                for (int w = 1; w < count; w++) {
                    if (load[w] < load[least]) {
                        least = w;
                    }
                }
                workerOf.put(p, least);
                load[least]++;
            }
        }
        balance(load);
        Set<Integer> mine = new HashSet<>();
        workerOf.forEach((p, w) -> {
            if (w == index) {
                mine.add(p);
            }
        });
        return mine;
    }

    /**
     * Moves partitions from the busiest worker to the idlest while they differ by more than one: where the partitions that
     * closed were one worker's, it would otherwise sit idle while another purges twice its share. A move is what the
     * stickiness avoids, so only as many as even the shares out.
     */
    private void balance(int[] load) {
        while (true) {
            int most = 0;
            int least = 0;
            for (int w = 1; w < count; w++) {
                most = load[w] > load[most] ? w : most;
                least = load[w] < load[least] ? w : least;
            }
            if (load[most] - load[least] <= 1) {
                return;
            }
            int from = most;
            int moved = workerOf.entrySet().stream().filter(e -> e.getValue() == from).mapToInt(Map.Entry::getKey).max().orElseThrow();
            workerOf.put(moved, least);
            load[most]--;
            load[least]++;
        }
    }
}
