package io.lobstream.purge;

import io.lobstream.store.tablespace.InUseFile;
import io.lobstream.store.tablespace.TablespaceDirs;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

class HeldTablespacesTest {
    @TempDir
    Path dataDir;
    private final AtomicLong clock = new AtomicLong();

    private void copies(int... partitions) throws Exception {
        for (int p : partitions) {
            Path dir = TablespaceDirs.partitionDir(dataDir, p);
            Files.createDirectories(dir);
            Files.writeString(dir.resolve(TablespaceDirs.DESCRIPTOR), "");
        }
    }

    private void pass(Duration d) {
        clock.addAndGet(d.toNanos());
    }

    @Test
    void withoutANodeEveryCopyIsHeld() throws Exception {
        copies(0, 1, 2);
        HeldTablespaces held = new HeldTablespaces(dataDir, "w", clock::get);
        assertThat(held.tell()).containsExactlyInAnyOrder(0, 1, 2);
    }

    /**
     * A node keeps its copy of a partition that moved away: the worker beside it lets the partition go, so the purge group
     * gives it to the new owner's worker, which does not skip its undo records as another copy's.
     */
    @Test
    void besideARunningNodeOnlyTheCopiesItUsesAreHeld() throws Exception {
        copies(0, 1, 2);
        InUseFile.write(dataDir, "run", 1, List.of(0, 1, 2, 7));
        HeldTablespaces held = new HeldTablespaces(dataDir, "w", clock::get);
        assertThat(held.tell()).as("7 listed, but no copy of it here").containsExactlyInAnyOrder(0, 1, 2);
        pass(Duration.ofSeconds(5));
        InUseFile.write(dataDir, "run", 2, List.of(0, 2)); // partition 1 moved to another node; its copy stays here
        assertThat(held.changedSinceTold()).containsExactlyInAnyOrder(0, 2);
        assertThat(held.tell()).containsExactlyInAnyOrder(0, 2);
        pass(Duration.ofSeconds(5));
        InUseFile.write(dataDir, "run", 3, List.of(0, 2));
        assertThat(held.changedSinceTold()).as("written again, the same").isNull();
    }

    /**
     * A stopped node's copies are not held: its writer applies no reclaims until it is back, and with a static member its
     * partitions wait for it. Held again once it writes.
     */
    @Test
    void aNodeThatStoppedWritingHoldsNothingUntilItWritesAgain() throws Exception {
        copies(0, 1);
        InUseFile.write(dataDir, "run", 1, List.of(0, 1));
        HeldTablespaces held = new HeldTablespaces(dataDir, "w", clock::get);
        assertThat(held.tell()).containsExactlyInAnyOrder(0, 1);
        pass(InUseFile.STOPPED_AFTER);
        assertThat(held.changedSinceTold()).as("a minute unchanged: not yet past it").isNull();
        pass(Duration.ofSeconds(1));
        assertThat(held.changedSinceTold()).isEmpty();
        assertThat(held.tell()).isEmpty();
        InUseFile.write(dataDir, "run-2", 1, List.of(0, 1)); // restarted
        assertThat(held.changedSinceTold()).containsExactlyInAnyOrder(0, 1);
    }

    /** A worker started beside a node stopped long ago does not hold its copies for a minute first. */
    @Test
    void aFileLongUnchangedWhenFirstSeenIsAStoppedNodes() throws Exception {
        copies(0);
        InUseFile.write(dataDir, "run", 1, List.of(0));
        Files.setLastModifiedTime(dataDir.resolve("tablespaces").resolve(InUseFile.NAME),
                FileTime.fromMillis(System.currentTimeMillis() - Duration.ofMinutes(10).toMillis()));
        assertThat(new HeldTablespaces(dataDir, "w", clock::get).tell()).isEmpty();
    }
}
