package io.lobstream.app;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

/** Temporary data directories of demos, benchmarks and tests. */
public final class DataDirs {
    private DataDirs() {
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
