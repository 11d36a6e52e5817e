package io.lobstream.store.tablespace;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

class InUseFileTest {
    @TempDir
    Path dataDir;

    @Test
    void whatANodeWroteIsReadBackAndEachWriteReadsAsNew() throws Exception {
        assertThat(InUseFile.read(dataDir)).as("no node ran here").isEmpty();
        InUseFile.write(dataDir, "run-1", 1, List.of(5, 0, 3));
        InUseFile.Contents first = InUseFile.read(dataDir).orElseThrow();
        assertThat(first.partitions()).containsExactlyInAnyOrder(0, 3, 5);
        InUseFile.write(dataDir, "run-1", 2, List.of(0, 3, 5));
        InUseFile.Contents second = InUseFile.read(dataDir).orElseThrow();
        assertThat(second.partitions()).isEqualTo(first.partitions());
        assertThat(second.raw()).as("the same partitions, written again: a running node").isNotEqualTo(first.raw());
        InUseFile.write(dataDir, "run-1", 3, List.of());
        assertThat(InUseFile.read(dataDir).orElseThrow().partitions()).as("a node that uses none").isEmpty();
    }

    @Test
    void aFileThatDoesNotReadAsOneIsAsThoughNoNodeHadSaid() throws Exception {
        Path file = dataDir.resolve("tablespaces").resolve(InUseFile.NAME);
        Files.createDirectories(file.getParent());
        Files.writeString(file, ""); // a write a power loss cut before its data reached the disk
        assertThat(InUseFile.read(dataDir)).isEmpty();
        Files.writeString(file, "run=x\nseq=1\npartitions=1,x\n");
        assertThat(InUseFile.read(dataDir)).isEmpty();
    }

    @Test
    void theFileIsNoTablespace() throws Exception {
        Files.createDirectories(dataDir.resolve("tablespaces").resolve("p-2"));
        Files.writeString(dataDir.resolve("tablespaces").resolve("p-2").resolve(TablespaceDirs.DESCRIPTOR), "");
        InUseFile.write(dataDir, "run-1", 1, Set.of(2));
        assertThat(TablespaceDirs.partitions(dataDir)).containsExactly(2);
        assertThat(TablespaceDirs.notTablespaces(dataDir)).isEmpty();
    }

    /** What {@code replay} asks before it builds into a data directory: whether a node runs there. */
    @Test
    void aNodeRunsWhereItsFileChanges() throws Exception {
        Duration watch = Duration.ofMillis(500);
        assertThat(InUseFile.nodeRunning(dataDir, watch)).as("no file: no node ran here").isFalse();
        InUseFile.write(dataDir, "run-1", 1, List.of(0));
        assertThat(InUseFile.nodeRunning(dataDir, watch)).as("unchanged while watched: a node stopped just now").isFalse();
        Path file = dataDir.resolve("tablespaces").resolve(InUseFile.NAME);
        AtomicLong seq = new AtomicLong(1);
        ScheduledExecutorService node = Executors.newSingleThreadScheduledExecutor();
        try {
            node.scheduleWithFixedDelay(() -> {
                try {
                    InUseFile.write(dataDir, "run-1", seq.incrementAndGet(), List.of(0));
                } catch (java.io.IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            }, 50, 50, TimeUnit.MILLISECONDS);
            // (returns at the first change: the long watch only keeps a slow machine's late writer from failing it)
            assertThat(InUseFile.nodeRunning(dataDir, Duration.ofSeconds(10))).as("rewritten while watched").isTrue();
        } finally {
            node.shutdownNow();
            node.awaitTermination(5, TimeUnit.SECONDS);
        }
        // A file older than a minute is not watched: rewritten now with other text, each version as old (written aside,
        // dated, then moved in place, which keeps its time), it would read as a running node's to a watch
        Path aside = Files.createDirectories(dataDir.resolve("aside"));
        FileTime old = FileTime.fromMillis(System.currentTimeMillis() - InUseFile.STOPPED_AFTER.toMillis() - 60_000);
        Files.setLastModifiedTime(file, old);
        ScheduledExecutorService stale = Executors.newSingleThreadScheduledExecutor();
        try {
            stale.scheduleWithFixedDelay(() -> {
                try {
                    InUseFile.write(aside, "run-1", seq.incrementAndGet(), List.of(0));
                    Path next = aside.resolve("tablespaces").resolve(InUseFile.NAME);
                    Files.setLastModifiedTime(next, old);
                    Files.move(next, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
                } catch (java.io.IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            }, 0, 50, TimeUnit.MILLISECONDS);
            assertThat(InUseFile.nodeRunning(dataDir, Duration.ofSeconds(10))).as("older than a minute: a stopped node's, not watched")
                    .isFalse();
        } finally {
            stale.shutdownNow();
            stale.awaitTermination(5, TimeUnit.SECONDS);
        }
    }
}
