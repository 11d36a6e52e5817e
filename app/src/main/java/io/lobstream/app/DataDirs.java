package io.lobstream.app;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

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

    /** Deletes {@code dir} and everything under it, best effort (a temporary directory). */
    public static void deleteTree(Path dir) {
        if (dir == null || !Files.exists(dir)) {
            return;
        }
        try (Stream<Path> walk = Files.walk(dir)) {
            walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException | java.io.UncheckedIOException ignored) {
            // best effort (another thread may be deleting the same tree: a Ctrl-C as the demo ends)
        }
    }
}
