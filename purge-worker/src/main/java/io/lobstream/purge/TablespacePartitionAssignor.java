package io.lobstream.purge;

import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Configurable;
import org.apache.kafka.common.TopicPartition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * How the purge group splits {@code lob.undo-history}'s partitions among its standalone workers: each partition goes to a
 * member whose data directory holds its tablespace (each member sends the partitions it holds with its subscription,
 * {@link HeldTablespaces}), the shares as even as that allows, and a partition stays with the member that has it while
 * it may, as with Kafka's sticky assignor.
 *
 * <p>Why not Kafka's sticky assignor, which the group used before: it knows nothing of tablespaces. A worker beside one of
 * several nodes (one per host, each node run with {@code --purge-workers 0}) was given partitions whose tablespaces are on
 * another host; it held them paused, the assignor never moved them, and their versions were never reclaimed.
 *
 * <p>A partition no member holds is left unassigned, and the leader says so: a node's own workers purge it then (they
 * stand down only from partitions a member holds, {@link PurgeGroupWatch}), where the sticky assignor gave it to a member
 * that could only hold it paused, and the node waited {@link MemberHolds#STALLED} to take it back. A member whose data
 * directory gains or loses a tablespace asks the group to assign again ({@link PurgeWorker}, every 10 s).
 *
 * <p>Cooperative, as the sticky assignor was: a partition that moves to another member is first taken from its owner, and
 * given at the next rebalance, which the owner's consumer asks for once it has given the partition up; two members never
 * purge one partition at once. Members of an older version, which name only {@code cooperative-sticky}, keep the group on
 * that assignor until the last of them is gone (every member names both, this one first).
 *
 * <p>The shares are evened out by moving one partition at a time from a member with two more than another that holds it:
 * optimal where every member holds every tablespace (one node, a shared volume) or each tablespace is on one host only,
 * the two layouts the README describes; a mix of overlapping holds may be left one move from even where a chain of moves
 * would do better.
 */
public final class TablespacePartitionAssignor implements ConsumerPartitionAssignor, Configurable {
    private static final Logger log = LoggerFactory.getLogger(TablespacePartitionAssignor.class);
    public static final String NAME = "lobstream-tablespace";
    /**
     * The consumer config key of the worker's {@link HeldTablespaces}: an object, handed to the assignor Kafka makes (as
     * Kafka Streams hands its own objects to its assignor). Without it a member sends nothing, and is taken to hold every
     * tablespace.
     */
    static final String HELD_CONFIG = "lobstream.purge.held.tablespaces";
    /** The user data's layout: this version, the number of partitions held, and each partition. */
    private static final short USER_DATA_VERSION = 1;
    private static final Comparator<TopicPartition> ORDER =
            Comparator.comparing(TopicPartition::topic).thenComparingInt(TopicPartition::partition);

    private HeldTablespaces held;
    /** The partitions no member held at the last assignment this member made as leader: said again only when they change. */
    private Set<TopicPartition> unheldSaid = Set.of();

    @Override
    public void configure(Map<String, ?> configs) {
        held = configs.get(HELD_CONFIG) instanceof HeldTablespaces h ? h : null;
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public List<RebalanceProtocol> supportedProtocols() {
        return List.of(RebalanceProtocol.COOPERATIVE);
    }

    @Override
    public ByteBuffer subscriptionUserData(Set<String> topics) {
        return held == null ? null : encode(held.tell());
    }

    static ByteBuffer encode(Set<Integer> partitions) {
        ByteBuffer b = ByteBuffer.allocate(Short.BYTES + Integer.BYTES + Integer.BYTES * partitions.size());
        b.putShort(USER_DATA_VERSION).putInt(partitions.size());
        new TreeSet<>(partitions).forEach(b::putInt);
        return b.flip();
    }

    /** The partitions a member holds, or null (every one) if it sent none, or what it sent is not this version's. */
    static Set<Integer> decode(String member, ByteBuffer userData) {
        if (userData == null || !userData.hasRemaining()) {
            return null;
        }
        ByteBuffer b = userData.duplicate();
        try {
            if (b.getShort() != USER_DATA_VERSION) {
                throw new IllegalArgumentException("version");
            }
            int n = b.getInt();
            if (n < 0 || n * (long) Integer.BYTES != b.remaining()) {
                throw new IllegalArgumentException("length");
            }
            Set<Integer> out = new HashSet<>();
            for (int i = 0; i < n; i++) {
                out.add(b.getInt());
            }
            return out;
        } catch (BufferUnderflowException | IllegalArgumentException e) {
            log.warn("purge group: member {} sent a subscription this assignor does not read ({} bytes); taken to hold every "
                    + "tablespace", member, userData.remaining());
            return null;
        }
    }

    @Override
    public GroupAssignment assign(Cluster metadata, GroupSubscription groupSubscription) {
        Map<String, Subscription> subscriptions = new TreeMap<>(groupSubscription.groupSubscription()); // in member order
        Map<String, Set<Integer>> holds = new HashMap<>();
        subscriptions.forEach((m, s) -> holds.put(m, decode(m, s.userData())));
        Map<TopicPartition, String> owners = owners(subscriptions);
        Shares shares = new Shares(subscriptions.keySet());
        List<TopicPartition> unheld = new ArrayList<>();
        Map<TopicPartition, List<String>> candidates = new TreeMap<>(ORDER);
        for (TopicPartition tp : partitions(metadata, subscriptions)) {
            List<String> can = new ArrayList<>();
            subscriptions.forEach((m, s) -> {
                Set<Integer> h = holds.get(m);
                if (s.topics().contains(tp.topic()) && (h == null || h.contains(tp.partition()))) {
                    can.add(m);
                }
            });
            if (can.isEmpty()) {
                unheld.add(tp);
            } else {
                candidates.put(tp, can);
                if (can.contains(owners.get(tp))) {
                    shares.give(tp, owners.get(tp)); // stays where it is
                }
            }
        }
        // the rest, those with the fewest candidates first: they have the least choice
        candidates.entrySet().stream().filter(e -> !shares.has(e.getKey()))
                .sorted(Comparator.comparingInt((Map.Entry<TopicPartition, List<String>> e) -> e.getValue().size())
                        .thenComparing(Map.Entry::getKey, ORDER))
                .forEach(e -> shares.give(e.getKey(), shares.leastLoaded(e.getValue())));
        shares.evenOut(candidates, owners);
        sayUnheld(unheld);
        Map<String, Assignment> out = new HashMap<>();
        subscriptions.keySet().forEach(m -> out.put(m, new Assignment(shares.of(m, owners))));
        return new GroupAssignment(out);
    }

    /** Each partition's owner, as the members say: where two say so (one of them stale), the later generation's. */
    private static Map<TopicPartition, String> owners(Map<String, Subscription> subscriptions) {
        Map<TopicPartition, String> owners = new HashMap<>();
        Map<TopicPartition, Integer> generations = new HashMap<>();
        subscriptions.forEach((m, s) -> {
            int generation = s.generationId().orElse(-1);
            for (TopicPartition tp : s.ownedPartitions()) {
                if (!owners.containsKey(tp) || generation > generations.get(tp)) {
                    owners.put(tp, m);
                    generations.put(tp, generation);
                }
            }
        });
        return owners;
    }

    private static Set<TopicPartition> partitions(Cluster metadata, Map<String, Subscription> subscriptions) {
        Set<TopicPartition> all = new TreeSet<>(ORDER);
        subscriptions.values().stream().flatMap(s -> s.topics().stream()).distinct().forEach(topic -> {
            Integer count = metadata.partitionCountForTopic(topic);
            for (int p = 0; count != null && p < count; p++) {
                all.add(new TopicPartition(topic, p));
            }
        });
        return all;
    }

    private void sayUnheld(List<TopicPartition> unheld) {
        Set<TopicPartition> now = Set.copyOf(unheld);
        if (!now.equals(unheldSaid) && !now.isEmpty()) {
            log.warn("purge group: no member's data directory holds the tablespace of {} (or, where a node writes "
                    + "node.in-use, its node there does not use it, or has stopped); left unassigned (a node's own purge workers purge them if it has them open) until a "
                    + "member's does: each member looks every 10 s", unheld);
        } else if (!now.equals(unheldSaid)) {
            log.info("purge group: every partition's tablespace is held by a member again");
        }
        unheldSaid = now;
    }

    /** The assignment being made: which member each partition goes to, and how many each has. */
    private static final class Shares {
        private final Map<TopicPartition, String> to = new TreeMap<>(ORDER);
        private final Map<String, Integer> load = new TreeMap<>();

        Shares(Set<String> members) {
            members.forEach(m -> load.put(m, 0));
        }

        boolean has(TopicPartition tp) {
            return to.containsKey(tp);
        }

        void give(TopicPartition tp, String member) {
            String before = to.put(tp, member);
            if (before != null) {
                load.merge(before, -1, Integer::sum);
            }
            load.merge(member, 1, Integer::sum);
        }

        /** The first of {@code members} (in member order) with the fewest partitions. */
        String leastLoaded(List<String> members) {
            return members.stream().min(Comparator.comparingInt(load::get)).orElseThrow();
        }

        /**
         * Moves a partition from the busiest member that can give one to a candidate with two fewer, one at a time: from
         * the busiest, so only as many move as even the shares out, and those newly placed first, as moving one kept by
         * its owner costs a revocation. Each move makes the sum of the loads' squares smaller, so it ends.
         */
        void evenOut(Map<TopicPartition, List<String>> candidates, Map<TopicPartition, String> owners) {
            while (moveOne(candidates, owners)) {
                // again
            }
        }

        private boolean moveOne(Map<TopicPartition, List<String>> candidates, Map<TopicPartition, String> owners) {
            List<String> busiest = new ArrayList<>(load.keySet());
            busiest.sort(Comparator.comparingInt((String m) -> load.get(m)).reversed());
            for (String from : busiest) {
                List<TopicPartition> its = new ArrayList<>();
                to.forEach((tp, m) -> {
                    if (m.equals(from)) {
                        its.add(tp);
                    }
                });
                its.sort(Comparator.comparing((TopicPartition tp) -> from.equals(owners.get(tp)))); // newly placed first
                for (TopicPartition tp : its) {
                    String least = leastLoaded(candidates.get(tp));
                    if (load.get(from) - load.get(least) >= 2) {
                        give(tp, least);
                        return true;
                    }
                }
            }
            return false;
        }

        /**
         * A member's partitions but those still owned by another: the owner gives them up in this rebalance, and its
         * consumer then asks for the next, which gives them here (Kafka checks that no partition changes hands in one).
         */
        List<TopicPartition> of(String member, Map<TopicPartition, String> owners) {
            List<TopicPartition> out = new ArrayList<>();
            to.forEach((tp, m) -> {
                String owner = owners.get(tp);
                if (m.equals(member) && (owner == null || owner.equals(member))) {
                    out.add(tp);
                }
            });
            return out;
        }
    }
}
