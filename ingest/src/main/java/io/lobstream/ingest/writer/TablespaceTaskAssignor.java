package io.lobstream.ingest.writer;

import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.assignment.ApplicationState;
import org.apache.kafka.streams.processor.assignment.KafkaStreamsAssignment;
import org.apache.kafka.streams.processor.assignment.KafkaStreamsAssignment.AssignedTask;
import org.apache.kafka.streams.processor.assignment.KafkaStreamsState;
import org.apache.kafka.streams.processor.assignment.ProcessId;
import org.apache.kafka.streams.processor.assignment.TaskAssignor;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Where the writer's tasks run: each stays on the node that ran it, as far as a balanced share
 * allows, and the rest go to the nodes furthest below their share. A node's share is its part of
 * the tasks in proportion to its stream threads.
 *
 * <p>Why not Kafka Streams' own: a task's tablespace is state Kafka Streams does not know of (it
 * has no changelog), so its assignors take the writer's tasks for stateless. The default one deals
 * them out by load alone, so a node that joins can swap partitions between the others, and each
 * swapped partition is then rebuilt from {@code lob.commands} on a node without it. The sticky one
 * leaves a node that joins with nothing while the others are within its per-thread bound.
 */
public final class TablespaceTaskAssignor implements TaskAssignor {
    @Override
    public TaskAssignment assign(ApplicationState application) {
        Map<ProcessId, KafkaStreamsState> nodes = new TreeMap<>(application.kafkaStreamsStates(false));
        Map<ProcessId, Set<TaskId>> previous = new HashMap<>();
        nodes.forEach((id, node) -> previous.put(id, node.previousActiveTasks()));
        Map<ProcessId, Integer> threads = new HashMap<>();
        nodes.forEach((id, node) -> threads.put(id, node.numProcessingThreads()));
        Map<ProcessId, Set<TaskId>> assigned = assign(new TreeSet<>(application.allTasks().keySet()), threads, previous);
        List<KafkaStreamsAssignment> assignments = new ArrayList<>();
        assigned.forEach((id, tasks) -> assignments.add(KafkaStreamsAssignment.of(id, tasks.stream()
                .map(t -> new AssignedTask(t, AssignedTask.Type.ACTIVE)).collect(java.util.stream.Collectors.toSet()))));
        return new TaskAssignment(assignments);
    }

    /**
     * The assignment itself, apart from Kafka Streams' types.
     *
     * @param threads  each node's stream threads
     * @param previous the tasks each node ran before this rebalance
     * @return every task, on exactly one node; every node listed, with none if need be
     */
    static <N extends Comparable<N>> Map<N, Set<TaskId>> assign(Set<TaskId> tasks, Map<N, Integer> threads, Map<N, Set<TaskId>> previous) {
        Map<N, Integer> shares = shares(tasks.size(), threads, previous);
        Map<N, Set<TaskId>> assigned = new TreeMap<>();
        shares.keySet().forEach(n -> assigned.put(n, new TreeSet<>()));
        Set<TaskId> left = new TreeSet<>(tasks);
        for (N node : assigned.keySet()) { // each keeps what it ran, up to its share
            for (TaskId t : new TreeSet<>(previous.getOrDefault(node, Set.of()))) {
                if (assigned.get(node).size() < shares.get(node) && left.remove(t)) {
                    assigned.get(node).add(t);
                }
            }
        }
        for (TaskId t : left) { // the rest: to the node furthest below its share
            N most = assigned.keySet().stream().max(Comparator.<N>comparingInt(n -> shares.get(n) - assigned.get(n).size())
                    .thenComparing(Comparator.<N>reverseOrder())).orElseThrow();
            assigned.get(most).add(t);
        }
        return assigned;
    }

    /**
     * Each node's share of {@code tasks}, in proportion to its threads (a node with none counts as one); the tasks
     * left over by rounding down go one each to the nodes that ran the most before, so that the fewest move.
     */
    private static <N extends Comparable<N>> Map<N, Integer> shares(int tasks, Map<N, Integer> threads, Map<N, Set<TaskId>> previous) {
        Map<N, Integer> capacity = new TreeMap<>();
        threads.forEach((n, t) -> capacity.put(n, Math.max(1, t)));
        long total = capacity.values().stream().mapToLong(Integer::longValue).sum();
        Map<N, Integer> shares = new TreeMap<>();
        int given = 0;
        for (Map.Entry<N, Integer> e : capacity.entrySet()) {
            int share = (int) (tasks * (long) e.getValue() / total);
            shares.put(e.getKey(), share);
            given += share;
        }
        List<N> byPrevious = new ArrayList<>(capacity.keySet());
        byPrevious.sort(Comparator.<N>comparingInt(n -> previous.getOrDefault(n, Set.of()).size()).reversed()
                .thenComparing(Comparator.naturalOrder()));
        for (int i = 0; given < tasks; i = (i + 1) % byPrevious.size(), given++) {
            shares.merge(byPrevious.get(i), 1, Integer::sum);
        }
        return shares;
    }
}
