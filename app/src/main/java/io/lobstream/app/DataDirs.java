package io.lobstream.app;

import io.lobstream.store.tablespace.TablespaceDirs;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;

/** Temporary data directories of demos, benchmarks and tests. */
public final class DataDirs {
    private DataDirs() {
    }

    /**
     * A new temporary directory, removed when this JVM exits if it is still there: a Ctrl-C runs no
     * finally block, and a benchmark leaves gigabytes of broker log behind. Best effort: what still
     * writes into it then is stopped by hooks of its own, at the same time.
     */
    public static Path temporary(String prefix) throws IOException {
        Path dir = Files.createTempDirectory(prefix);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> deleteTree(dir), "remove-" + dir.getFileName()));
        return dir;
    }

    /** The lock of {@code file}, or null if another process (or this one) holds it. */
    public static FileLock tryLock(FileChannel file) throws IOException {
        try {
            return file.tryLock();
        } catch (OverlappingFileLockException heldHere) {
            return null;
        }
    }

    /**
     * Deletes {@code dir} and everything under it, best effort (a temporary directory). A walk goes on past what
     * vanishes under it (the broker's retention, RocksDB's compactions, another thread deleting the same tree as a
     * Ctrl-C ends the demo), where a sorted {@code Files.walk} gave up on the whole tree at the first; and it walks twice,
     * for what was written into a directory while it was being emptied.
     */
    public static void deleteTree(Path dir) {
        for (int pass = 0; pass < 2 && dir != null && Files.exists(dir, LinkOption.NOFOLLOW_LINKS); pass++) {
            TablespaceDirs.walkBestEffort(dir, (file, attrs) -> file.toFile().delete(), d -> d.toFile().delete());
        }
    }
}
