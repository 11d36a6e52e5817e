package io.lobstream.purge;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

/**
 * Which partitions held by standalone purge workers a node's workers stand down from ({@link PurgeGroupWatch}): every
 * one a member holds, but one it has held with undo records past its committed offset for {@link #STALLED} without
 * committing for it. Such a member lacks the partition's tablespace (it keeps the partition paused), and the node purges
 * the partition again until the group gives it to another member.
 */
final class MemberHolds {
    private static final Logger log = LoggerFactory.getLogger(MemberHolds.class);
    /**
     * How long a member may hold a partition with undo records past its committed offset, committing nothing for it,
     * before the node purges it again: well past a worker's transaction budget (half the transaction timeout, 30 s by
     * default), within which a member that purges commits.
     */
    static final Duration STALLED = Duration.ofMinutes(2);

    /** A member's hold of a partition: since when its committed offset stood where it stands, and whether it stalled there. */
    private record Holding(String member, long committed, long sinceNanos, boolean stalled) {
    }

    private final String group;
    private final long stalledNanos;
    private final Map<Integer, Holding> holdings = new HashMap<>();

    MemberHolds(String group, Duration stalled) {
        this.group = group;
        this.stalledNanos = stalled.toNanos();
    }

    /**
     * @param holders   each undo-history partition a member holds, and the member
     * @param committed the group's committed offset of each partition that has one
     * @param ends      each held partition's last stable offset
     * @return the partitions to stand down from
     */
    Set<Integer> standDownFrom(Map<Integer, String> holders, Map<Integer, Long> committed, Map<Integer, Long> ends, long nowNanos) {
        holdings.keySet().retainAll(holders.keySet());
        Set<Integer> out = new HashSet<>();
        holders.forEach((p, member) -> {
            long at = committed.getOrDefault(p, -1L);
            Holding h = holdings.get(p);
            if (h == null || !h.member().equals(member)) {
                h = new Holding(member, at, nowNanos, false);
            } else if (!h.stalled() && (at != h.committed() || at >= ends.getOrDefault(p, Long.MAX_VALUE))) {
                h = new Holding(member, at, nowNanos, false); // it purges, or has nothing to purge
            } else if (!h.stalled() && nowNanos - h.sinceNanos() >= stalledNanos) {
                log.warn("purge group {}: member {} has held undo-history partition {} for {} s with undo records past its "
                        + "committed offset {} and committed nothing: it lacks that tablespace (several nodes?); this node purges "
                        + "it again", group, member, p, Duration.ofNanos(nowNanos - h.sinceNanos()).toSeconds(), at);
                h = new Holding(member, at, h.sinceNanos(), true);
            }
            holdings.put(p, h);
            if (!h.stalled()) {
                out.add(p);
            }
        });
        return out;
    }
}
