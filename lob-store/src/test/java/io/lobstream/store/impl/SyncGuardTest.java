package io.lobstream.store.impl;

import io.lobstream.store.TablespaceSyncFailedException;
import io.lobstream.store.index.IndexWriteRefusedException;
import io.lobstream.store.tablespace.TablespaceDirs;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Only a sync that fails fences a tablespace; a write the disk refused (full) does not. */
class SyncGuardTest {
    @Test
    void aRefusedWriteLeavesTheTablespaceOpenToReopenAndAFailedSyncFencesIt(@TempDir Path dir) {
        String copy = "sync-guard-test-" + UUID.randomUUID(); // FAILED_HERE is the process's
        SyncGuard guard = new SyncGuard("t", dir, copy);
        assertThatThrownBy(() -> guard.run(() -> {
            throw new IndexWriteRefusedException("a write to the index was refused: No space left on device", null);
        })).isInstanceOf(IndexWriteRefusedException.class);
        assertThat(guard.failed()).isFalse();
        assertThat(SyncGuard.failedHere(copy)).isFalse();
        assertThat(dir.resolve(TablespaceDirs.SYNC_FAILED)).doesNotExist();

        assertThatThrownBy(() -> guard.run(() -> {
            throw new IOException("Input/output error (simulated)");
        })).isInstanceOf(TablespaceSyncFailedException.class);
        assertThat(guard.failed()).isTrue();
        assertThat(SyncGuard.failedHere(copy)).isTrue();
        assertThat(Files.exists(dir.resolve(TablespaceDirs.SYNC_FAILED))).isTrue();
    }
}
