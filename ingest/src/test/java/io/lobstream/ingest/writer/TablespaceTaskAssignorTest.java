package io.lobstream.ingest.writer;

import org.apache.kafka.streams.processor.TaskId;
import org.junit.jupiter.api.Test;

import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;

class TablespaceTaskAssignorTest {
    private static Set<TaskId> tasks(int... partitions) {
        return IntStream.of(partitions).mapToObj(p -> new TaskId(0, p)).collect(Collectors.toCollection(TreeSet::new));
    }

    private static Set<TaskId> all(int n) {
        return tasks(IntStream.range(0, n).toArray());
    }

    @Test
    void aNodeThatJoinsTakesItsShareAndNoOtherTaskMoves() {
        Map<String, Set<TaskId>> before = Map.of("a", tasks(0, 2, 4, 6), "b", tasks(1, 3, 5, 7), "c", Set.of());
        Map<String, Set<TaskId>> after = TablespaceTaskAssignor.assign(all(8), Map.of("a", 2, "b", 2, "c", 2), before);
        assertThat(before.get("a")).containsAll(after.get("a"));
        assertThat(before.get("b")).containsAll(after.get("b"));
        assertThat(after.get("a")).hasSize(3);
        assertThat(after.get("b")).hasSize(3);
        assertThat(after.get("c")).hasSize(2);
    }

    @Test
    void theFirstAssignmentSplitsByThreads() {
        Map<String, Set<TaskId>> after = TablespaceTaskAssignor.assign(all(8), Map.of("a", 1, "b", 3), Map.of());
        assertThat(after.get("a")).hasSize(2);
        assertThat(after.get("b")).hasSize(6);
    }

    @Test
    void aNodeThatLeavesHandsItsTasksToTheOthersAndTheyKeepTheirOwn() {
        Map<String, Set<TaskId>> before = Map.of("a", tasks(0, 3, 6), "b", tasks(1, 4, 7), "c", tasks(2, 5));
        Map<String, Set<TaskId>> after = TablespaceTaskAssignor.assign(all(8), Map.of("a", 1, "b", 1), before);
        assertThat(after.get("a")).containsAll(before.get("a")).hasSize(4);
        assertThat(after.get("b")).containsAll(before.get("b")).hasSize(4);
    }

    @Test
    void everyTaskIsAssignedOnceEvenWhenTwoNodesClaimIt() {
        Map<String, Set<TaskId>> before = Map.of("a", tasks(0, 1, 2), "b", tasks(2, 3));
        Map<String, Set<TaskId>> after = TablespaceTaskAssignor.assign(all(4), Map.of("a", 1, "b", 1), before);
        Set<TaskId> union = new TreeSet<>(after.get("a"));
        union.addAll(after.get("b"));
        assertThat(union).isEqualTo(all(4));
        assertThat(after.get("a")).doesNotContainAnyElementsOf(after.get("b"));
        assertThat(after.get("a")).hasSize(2);
        assertThat(after.get("b")).hasSize(2);
    }

    @Test
    void moreNodesThanTasksLeavesSomeWithNone() {
        Map<String, Set<TaskId>> after = TablespaceTaskAssignor.assign(all(2), Map.of("a", 1, "b", 1, "c", 1), Map.of("c", tasks(1)));
        assertThat(after.get("c")).isEqualTo(tasks(1));
        assertThat(after.values().stream().mapToInt(Set::size).sum()).isEqualTo(2);
    }
}
