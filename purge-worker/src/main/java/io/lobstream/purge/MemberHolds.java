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
 * one a member holds, but one it has held with undo records past the group's offset for {@link #STALLED} without
 * committing for it. Such a member lacks the partition's tablespace (it keeps the partition paused), or cannot purge
 * for now (the registry away: its transactions abort). The node then purges that partition for {@link #STALLED}, and
 * stands down again to see whether the member purges now: a member whose trouble passed gets its partition back, and
 * one that lacks the tablespace leaves it to the node half the time, each undo record reclaimed once all the same
 * (a reclaim the writer has applied is ignored when it comes again).
 */
final class MemberHolds {
    private static final Logger log = LoggerFactory.getLogger(MemberHolds.class);
    /**
     * How long a member may hold a partition with undo records past the group's offset, committing nothing for it,
     * before the node purges it, and how long the node then does, at the least: well past a worker's transaction budget
     * (half the transaction timeout, 30 s by default), within which a member that purges commits ({@link PurgeGroupWatch}
     * takes twice the budget where the timeouts are longer).
     */
    static final Duration STALLED = Duration.ofMinutes(2);

    /**
     * A member's hold of a partition: the group's offset there when last seen to move (or the partition found with
     * nothing to purge), and when; or, taken back, until when the node purges it.
     */
    private record Holding(String member, long offset, long sinceNanos, long takenUntilNanos) {
        boolean taken(long nowNanos) {
            return takenUntilNanos != 0 && nowNanos - takenUntilNanos < 0;
        }
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
     * @param starts    each held partition's log start offset, where a member without a committed offset begins
     * @param ends      each held partition's last stable offset
     * @param ours      the node's open partitions: the only ones it warns of taking back
     * @return the partitions to stand down from
     */
    Set<Integer> standDownFrom(Map<Integer, String> holders, Map<Integer, Long> committed, Map<Integer, Long> starts,
                               Map<Integer, Long> ends, Set<Integer> ours, long nowNanos) {
        holdings.keySet().retainAll(holders.keySet());
        Set<Integer> out = new HashSet<>();
        holders.forEach((p, member) -> {
            long at = committed.getOrDefault(p, starts.getOrDefault(p, 0L));
            boolean idle = at >= ends.getOrDefault(p, Long.MAX_VALUE); // nothing past the group's offset
            Holding h = holdings.get(p);
            if (h == null || !h.member().equals(member)) {
                h = new Holding(member, at, nowNanos, 0);
            } else if (h.taken(nowNanos)) {
                holdings.put(p, h);
                return; // the node's for now
            } else if (h.takenUntilNanos() != 0 || at != h.offset() || idle) {
                h = new Holding(member, at, nowNanos, 0); // given back to see, or it purges, or there is nothing to purge
            } else if (nowNanos - h.sinceNanos() >= stalledNanos) {
                if (ours.contains(p)) {
                    log.warn("purge group {}: member {} has held undo-history partition {} for {} s with undo records past the "
                            + "group's offset {} and committed nothing (it lacks that tablespace, or cannot purge now); this node "
                            + "purges it for the next {} s", group, member, p, Duration.ofNanos(nowNanos - h.sinceNanos()).toSeconds(),
                            at, Duration.ofNanos(stalledNanos).toSeconds());
                }
                h = new Holding(member, at, h.sinceNanos(), nowNanos + stalledNanos);
                holdings.put(p, h);
                return;
            }
            holdings.put(p, h);
            out.add(p);
        });
        return out;
    }
}
