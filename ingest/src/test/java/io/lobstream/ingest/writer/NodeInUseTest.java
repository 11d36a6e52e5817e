package io.lobstream.ingest.writer;

import io.lobstream.store.tablespace.InUseFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

class NodeInUseTest {
    @TempDir
    Path dataDir;
    private final AtomicLong clock = new AtomicLong(1_000_000_000L);
    private final TablespaceRegistry registry = new TablespaceRegistry();

    private Set<Integer> written() throws Exception {
        return InUseFile.read(dataDir).orElseThrow().partitions();
    }

    /** Listed while its task asks for it (open, waiting, caught up); gone once no task here asked for MOVED_AFTER. */
    @Test
    void aPartitionIsListedWhileItsTaskAsksForItAndDropsOutAfterItMoved() throws Exception {
        NodeInUse inUse = new NodeInUse(dataDir, registry, clock::get);
        registry.asked(3, clock.get());
        registry.asked(4, clock.get());
        inUse.write();
        assertThat(written()).containsExactlyInAnyOrder(3, 4);
        clock.addAndGet(TablespaceCatchUp.MOVED_AFTER.toNanos());
        registry.asked(3, clock.get()); // 3's task waits still; 4 went to another node
        clock.addAndGet(1);
        inUse.write();
        assertThat(written()).containsExactlyInAnyOrder(3);
    }

    /** A restart lists what the run before listed for a while, so the workers beside it do not let go and take back. */
    @Test
    void aRestartedNodeListsWhatItsPreviousRunDidUntilItsTasksHaveAsked() throws Exception {
        InUseFile.write(dataDir, "before", 9, List.of(1, 2));
        NodeInUse inUse = new NodeInUse(dataDir, registry, clock::get);
        inUse.write();
        assertThat(written()).containsExactlyInAnyOrder(1, 2);
        registry.asked(2, clock.get());
        clock.addAndGet(TablespaceCatchUp.MOVED_AFTER.toNanos() + 1);
        registry.asked(2, clock.get());
        inUse.write();
        assertThat(written()).as("1 went elsewhere while the node was down").containsExactlyInAnyOrder(2);
    }

    /**
     * What a previous run carried over is not carried on: a node that keeps failing within its first minute and a half
     * would otherwise hold the copies of partitions long gone to other nodes for good.
     */
    @Test
    void onlyWhatThePreviousRunsOwnTasksUsedIsCarriedOver() throws Exception {
        InUseFile.write(dataDir, "before", 9, List.of(1, 2), List.of(2)); // 1 carried over from the run before that one
        new NodeInUse(dataDir, registry, clock::get).write();
        assertThat(written()).containsExactlyInAnyOrder(2);
        assertThat(InUseFile.read(dataDir).orElseThrow().own()).as("none of its own tasks asked yet").isEmpty();
    }

    /**
     * A node with no file before (its first run, or an older version's) writes none until a task asked: a worker beside it
     * holds the copies there meanwhile, rather than let them go and take them back.
     */
    @Test
    void aNodeWithoutAFileBeforeWritesNoneUntilATaskAsks() throws Exception {
        NodeInUse inUse = new NodeInUse(dataDir, registry, clock::get);
        inUse.write();
        assertThat(InUseFile.read(dataDir)).isEmpty();
        registry.asked(6, clock.get());
        inUse.write();
        assertThat(written()).containsExactlyInAnyOrder(6);
    }

    /** A node that leaves the group says it uses none; one that stays (a static member's restart) leaves its list. */
    @Test
    void leavingTheGroupListsNone() throws Exception {
        registry.asked(5, clock.get());
        NodeInUse staying = new NodeInUse(dataDir, registry, clock::get);
        staying.write();
        staying.close(false);
        assertThat(written()).containsExactlyInAnyOrder(5);
        NodeInUse leaving = new NodeInUse(dataDir, registry, clock::get);
        leaving.write();
        leaving.close(true);
        assertThat(written()).isEmpty();
    }
}
