package io.lobstream.store.tablespace;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;

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
}
