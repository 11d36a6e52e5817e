package io.lobstream.store.tablespace;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class TablespaceDirsTest {
    /** A log cut whose marker the disk refuses is remembered for the copy in this process: its next check does not trust it. */
    @Test
    void aLogCutIsRememberedForItsCopyWhenItsMarkerIsRefused(@TempDir Path dir) throws Exception {
        Path gone = dir.resolve("not-there"); // a marker that cannot be written
        String copy = "cut-test-" + UUID.randomUUID();
        assertThatThrownBy(() -> TablespaceDirs.markLogCut(gone, copy, "went back from offset 9 to 0")).isInstanceOf(IOException.class);
        assertThat(TablespaceDirs.logCut(gone, copy)).contains("went back from offset 9 to 0");
        assertThat(TablespaceDirs.logCut(gone, "another-copy")).as("a copy rebuilt in its place is another").isEmpty();
    }
}
