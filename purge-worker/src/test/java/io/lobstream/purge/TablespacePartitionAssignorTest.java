package io.lobstream.purge;

import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Assignment;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.GroupSubscription;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Subscription;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import io.lobstream.store.tablespace.TablespaceDirs;
import org.junit.jupiter.api.io.TempDir;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The purge group's assignment: to members that hold each partition's tablespace, even, sticky, and cooperative (run
 * over rounds as Kafka's consumers would, each round's owners the last one's assignment, with Kafka's check that no
 * partition changes hands within one).
 */
class TablespacePartitionAssignorTest {
    private static final String TOPIC = "lob.undo-history";
    private static final int PARTITIONS = 8;

    private final TablespacePartitionAssignor assignor = new TablespacePartitionAssignor();
    /** Each member's partitions now, as its consumer owns them: the next round's ownedPartitions. */
    private final Map<String, Set<Integer>> owned = new LinkedHashMap<>();
    private int generation;

    @Test
    void membersThatHoldEveryTablespaceShareEvenlyAndAJoiningOneTakesOnlyItsShare() {
        Map<String, Set<Integer>> holds = new LinkedHashMap<>();
        holds.put("a", null); // sends nothing: holds every one
        holds.put("b", all());
        holds.put("c", all());
        settle(holds);
        assertThat(owned.values()).extracting(Set::size).containsExactlyInAnyOrder(3, 3, 2);
        Map<String, Set<Integer>> before = copy(owned);
        holds.put("d", all());
        int moves = settle(holds);
        assertThat(owned.values()).extracting(Set::size).containsExactlyInAnyOrder(2, 2, 2, 2);
        assertThat(moves).as("only what the new member's share takes moves").isEqualTo(2);
        before.forEach((m, ps) -> assertThat(ps).containsAll(owned.get(m)));
    }

    @Test
    void eachPartitionGoesToTheMemberBesideItsTablespaceEvenFromAnOwnerWithout() {
        Map<String, Set<Integer>> holds = new LinkedHashMap<>();
        holds.put("a", all());
        settle(holds);
        assertThat(owned.get("a")).hasSize(PARTITIONS);
        // a second node's partitions move there, and a worker beside it joins; the first worker's directory loses them
        holds.put("a", Set.of(0, 1, 2, 3));
        holds.put("b", Set.of(4, 5, 6, 7));
        settle(holds);
        assertThat(owned).containsEntry("a", Set.of(0, 1, 2, 3)).containsEntry("b", Set.of(4, 5, 6, 7));
        // lopsided holds: the shares follow the tablespaces, not an even count
        holds.put("a", Set.of(0));
        holds.put("b", Set.of(1, 2, 3, 4, 5, 6, 7));
        settle(holds);
        assertThat(owned).containsEntry("a", Set.of(0)).containsEntry("b", Set.of(1, 2, 3, 4, 5, 6, 7));
    }

    @Test
    void aPartitionNoMemberHoldsIsLeftUnassignedAndComesOnceOneDoes() {
        Map<String, Set<Integer>> holds = new LinkedHashMap<>();
        holds.put("a", Set.of(0, 1));
        holds.put("b", Set.of(2));
        settle(holds);
        assertThat(owned).containsEntry("a", Set.of(0, 1)).containsEntry("b", Set.of(2));
        holds.put("b", Set.of(2, 5));
        settle(holds);
        assertThat(owned).containsEntry("a", Set.of(0, 1)).containsEntry("b", Set.of(2, 5));
    }

    @Test
    void overlappingHoldsAreEvenedOutAmongThoseThatHoldThem() {
        Map<String, Set<Integer>> holds = new LinkedHashMap<>();
        holds.put("a", all());
        holds.put("b", Set.of(0, 1, 2, 3));
        holds.put("c", Set.of(0, 1, 2, 3));
        settle(holds);
        assertThat(owned.get("a")).containsAll(Set.of(4, 5, 6, 7));
        assertThat(owned.values()).extracting(Set::size).allSatisfy(n -> assertThat(n).isBetween(2, 4));
        assertThat(owned.values().stream().mapToInt(Set::size).sum()).isEqualTo(PARTITIONS);
    }

    @Test
    void aStaleClaimLosesToTheLaterGenerations() {
        Map<String, Subscription> subs = new HashMap<>();
        subs.put("a", new Subscription(List.of(TOPIC), TablespacePartitionAssignor.encode(all()), tps(Set.of(0, 1, 2, 3)), 7,
                Optional.empty()));
        subs.put("b", new Subscription(List.of(TOPIC), TablespacePartitionAssignor.encode(all()), tps(Set.of(3, 4, 5, 6, 7)), 6,
                Optional.empty()));
        Map<String, Assignment> out = assignor.assign(cluster(), new GroupSubscription(subs)).groupAssignment();
        assertThat(out.get("a").partitions()).contains(new TopicPartition(TOPIC, 3));
        assertThat(out.get("b").partitions()).doesNotContain(new TopicPartition(TOPIC, 3));
    }

    @Test
    void theUserDataRoundTripsAndWhatItCannotReadHoldsEveryTablespace() {
        assertThat(TablespacePartitionAssignor.decode("m", TablespacePartitionAssignor.encode(Set.of(3, 0, 7)))).isEqualTo(Set.of(0, 3, 7));
        assertThat(TablespacePartitionAssignor.decode("m", TablespacePartitionAssignor.encode(Set.of()))).isEmpty();
        assertThat(TablespacePartitionAssignor.decode("m", null)).isNull();
        assertThat(TablespacePartitionAssignor.decode("m", ByteBuffer.wrap(new byte[]{0, 9, 0, 0, 0, 0}))).as("another version").isNull();
        assertThat(TablespacePartitionAssignor.decode("m", ByteBuffer.wrap(new byte[]{0, 1, 0, 0, 0, 2, 0}))).as("cut short").isNull();
    }

    @Test
    void aWorkerTellsTheGroupWhatItsDataDirectoryHoldsAndSeesWhenThatChanges(@TempDir Path dataDir) throws Exception {
        HeldTablespaces held = new HeldTablespaces(dataDir, "w");
        assertThat(held.changedSinceTold()).as("nothing told yet").isNull();
        tablespace(dataDir, 2);
        Files.createDirectories(TablespaceDirs.partitionDir(dataDir, 5)); // no descriptor: no tablespace
        TablespacePartitionAssignor configured = new TablespacePartitionAssignor();
        configured.configure(Map.of(TablespacePartitionAssignor.HELD_CONFIG, held));
        assertThat(TablespacePartitionAssignor.decode("w", configured.subscriptionUserData(Set.of(TOPIC)))).isEqualTo(Set.of(2));
        assertThat(held.changedSinceTold()).isNull();
        tablespace(dataDir, 5);
        assertThat(held.changedSinceTold()).isEqualTo(Set.of(2, 5));
        assertThat(new TablespacePartitionAssignor().subscriptionUserData(Set.of(TOPIC))).as("unconfigured: holds every one").isNull();
    }

    private static void tablespace(Path dataDir, int partition) throws Exception {
        Path dir = TablespaceDirs.partitionDir(dataDir, partition);
        Files.createDirectories(dir);
        Files.writeString(dir.resolve(TablespaceDirs.DESCRIPTOR), "format=1\n");
    }

    /**
     * Rebalances until no member gives anything up, as the members' consumers would, checking each round as Kafka does.
     *
     * @return how many partitions changed hands
     */
    private int settle(Map<String, Set<Integer>> holds) {
        owned.keySet().retainAll(holds.keySet());
        holds.keySet().forEach(m -> owned.putIfAbsent(m, Set.of()));
        int moves = 0;
        for (int round = 0; round < 10; round++) {
            generation++;
            Map<String, Subscription> subs = new HashMap<>();
            holds.forEach((m, h) -> subs.put(m, new Subscription(List.of(TOPIC), h == null ? null : TablespacePartitionAssignor.encode(h),
                    tps(owned.get(m)), generation, Optional.empty())));
            Map<String, Assignment> out = assignor.assign(cluster(), new GroupSubscription(subs)).groupAssignment();
            assertThat(out.keySet()).isEqualTo(holds.keySet());
            Set<Integer> revoked = new HashSet<>();
            Set<Integer> added = new HashSet<>();
            Set<Integer> given = new HashSet<>();
            out.forEach((m, a) -> {
                Set<Integer> now = a.partitions().stream().map(TopicPartition::partition).collect(Collectors.toSet());
                now.forEach(p -> assertThat(given.add(p)).as("partition %d given twice", p).isTrue());
                Set<Integer> h = holds.get(m);
                assertThat(h == null ? all() : h).as("%s holds what it is given", m).containsAll(now);
                revoked.addAll(minus(owned.get(m), now));
                added.addAll(minus(now, owned.get(m)));
                owned.put(m, now);
            });
            Set<Integer> both = new HashSet<>(added);
            both.retainAll(revoked);
            assertThat(both).as("round %d: taken and given in one round", round).isEmpty();
            moves += revoked.size();
            if (revoked.isEmpty() && added.isEmpty()) {
                Set<Integer> held = new TreeSet<>();
                holds.values().forEach(h -> held.addAll(h == null ? all() : h));
                assertThat(given).as("every partition some member holds is assigned").isEqualTo(held);
                return moves;
            }
        }
        throw new AssertionError("no settled assignment in 10 rounds: " + owned);
    }

    private static Set<Integer> minus(Set<Integer> a, Set<Integer> b) {
        Set<Integer> out = new HashSet<>(a);
        out.removeAll(b);
        return out;
    }

    private static Map<String, Set<Integer>> copy(Map<String, Set<Integer>> m) {
        return new HashMap<>(m);
    }

    private static Set<Integer> all() {
        return IntStream.range(0, PARTITIONS).boxed().collect(Collectors.toSet());
    }

    private static List<TopicPartition> tps(Set<Integer> partitions) {
        List<TopicPartition> out = new ArrayList<>();
        new TreeSet<>(partitions).forEach(p -> out.add(new TopicPartition(TOPIC, p)));
        return out;
    }

    private static Cluster cluster() {
        Node node = new Node(0, "localhost", 9092);
        List<PartitionInfo> infos = new ArrayList<>();
        for (int p = 0; p < PARTITIONS; p++) {
            infos.add(new PartitionInfo(TOPIC, p, node, new Node[]{node}, new Node[]{node}));
        }
        return new Cluster("c", List.of(node), infos, Set.of(), Set.of());
    }
}
