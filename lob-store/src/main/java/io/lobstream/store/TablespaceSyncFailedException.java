package io.lobstream.store;

import java.io.IOException;
import java.nio.file.Path;

/**
 * An fsync of the tablespace failed, now or in an earlier run ({@code SYNC-FAILED} in its
 * directory). After a failed fsync the kernel may have dropped the dirty pages it could not write
 * and report the next fsync as a success, so nothing written since the last good sync can be
 * trusted, the index's applied offsets included. The tablespace is not opened again: a writer
 * node moves it aside and rebuilds the partition from {@code lob.commands}, as it rebuilds one it
 * lacks.
 */
public class TablespaceSyncFailedException extends IOException {
    public TablespaceSyncFailedException(Path dir, String what) {
        this(dir, what, null);
    }

    /** @param cause the failure of the sync itself, so its stack reaches every caller that sees this, not only the first log */
    public TablespaceSyncFailedException(Path dir, String what, Throwable cause) {
        super("tablespace " + dir + ": " + what + "; writes since its last good sync may be lost, so it is not opened again "
                + "(a writer node moves it aside and rebuilds the partition from lob.commands)", cause);
    }
}
