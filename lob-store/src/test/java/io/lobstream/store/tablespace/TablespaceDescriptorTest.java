package io.lobstream.store.tablespace;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class TablespaceDescriptorTest {
    @TempDir
    Path dir;

    @Test
    void aTablespaceKeepsTheCopyIdItWasCreatedWith() throws Exception {
        TablespaceDescriptor made = TablespaceDescriptor.createOrRead(dir.resolve("a"), 8192);
        assertThat(made.copyId()).isNotBlank();
        assertThat(TablespaceDescriptor.createOrRead(dir.resolve("a"), 4096)).isEqualTo(made); // page size too: it was made with 8192
        assertThat(TablespaceDescriptor.read(dir.resolve("a"))).isEqualTo(made);
        assertThat(TablespaceDescriptor.createOrRead(dir.resolve("b"), 8192).copyId()).as("another copy").isNotEqualTo(made.copyId());
    }

    @Test
    void aTablespaceFromBeforeCopyIdsGetsOneWhenAWriterOpensIt() throws Exception {
        Path old = dir.resolve("old");
        Files.createDirectories(old);
        Files.writeString(old.resolve(TablespaceDirs.DESCRIPTOR), "format.version=1\npage.size=16384\n");
        assertThat(TablespaceDescriptor.read(old).copyId()).as("what a purge worker sees until then").isNull();
        TablespaceDescriptor opened = TablespaceDescriptor.createOrRead(old, 4096);
        assertThat(opened.pageSize()).isEqualTo(16384);
        assertThat(opened.copyId()).isNotBlank();
        assertThat(TablespaceDescriptor.read(old)).isEqualTo(opened);
    }

    /** A page size out of range was blamed on lob.page.size, which the operator never set, and fsck divided by a 0 one. */
    @Test
    void aDescriptorWithNoPageSizeIsDamageNamingTheFile() throws Exception {
        Path bad = dir.resolve("bad");
        Files.createDirectories(bad);
        for (String size : new String[]{"0", "12288", "131072"}) {
            Files.writeString(bad.resolve(TablespaceDirs.DESCRIPTOR), "format.version=1\npage.size=" + size + "\n");
            assertThatThrownBy(() -> TablespaceDescriptor.read(bad)).isInstanceOf(IOException.class)
                    .hasMessageContaining(bad.resolve(TablespaceDirs.DESCRIPTOR) + ": page.size " + size + " is no page size")
                    .hasMessageContaining("a damaged descriptor");
        }
    }

    /** A garbled backslash-u escape threw Properties' IllegalArgumentException, which a purge worker took as its whole loop's failure. */
    @Test
    void aGarbledEscapeIsDamageNamingTheFile() throws Exception {
        Path bad = dir.resolve("escape");
        Files.createDirectories(bad);
        Files.writeString(bad.resolve(TablespaceDirs.DESCRIPTOR), "format.version=1\npage.size=16384\ncopy.id=\\uZZZZ\n");
        assertThatThrownBy(() -> TablespaceDescriptor.read(bad)).isInstanceOf(IOException.class)
                .hasMessageStartingWith(bad.resolve(TablespaceDirs.DESCRIPTOR) + ": Malformed \\uxxxx encoding")
                .hasMessageContaining("a damaged descriptor");
    }
}
