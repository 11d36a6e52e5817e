package io.lobstream.store.tablespace;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Collection;
import java.util.Collections;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

/**
 * {@code DATA_DIR/tablespaces/node.in-use}: the partitions whose tablespaces the node on this data directory uses now,
 * rewritten every few seconds while it runs. A node keeps its copy of a partition that moved to another node; a purge
 * worker beside it that still held that copy kept the partition in the purge group and skipped the new owner's undo
 * records as another copy's. A worker reads this file and holds the copies it lists only.
 *
 * <p>Each write says something new (the node's run and a count), so a reader tells a running node from a stopped one by
 * when the content last changed on its own clock, not by the file's time (a volume two hosts share).
 */
public final class InUseFile {
    public static final String NAME = "node.in-use";
    private static final String PARTITIONS = "partitions=";

    /** What the file says: its whole text (which changes at every write) and the partitions in it. */
    public record Contents(String raw, Set<Integer> partitions) {
    }

    private InUseFile() {
    }

    /** Replaces the file at once (a reader never sees half of it): {@code run} and {@code seq} make each write new. */
    public static void write(Path dataDir, String run, long seq, Collection<Integer> partitions) throws IOException {
        Path root = dataDir.resolve("tablespaces");
        Files.createDirectories(root);
        Path next = root.resolve(NAME + ".next");
        String text = "run=" + run + "\nseq=" + seq + "\n" + PARTITIONS
                + new TreeSet<>(partitions).stream().map(String::valueOf).collect(Collectors.joining(",")) + "\n";
        Files.writeString(next, text, StandardCharsets.UTF_8);
        Files.move(next, root.resolve(NAME), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }

    /**
     * The file's contents; empty if there is none (no node ran here, or one of a version before it), or if it does not
     * read as one (cut by a power loss before its data reached the disk): then as though no node had said.
     */
    public static Optional<Contents> read(Path dataDir) throws IOException {
        String raw;
        try {
            raw = Files.readString(dataDir.resolve("tablespaces").resolve(NAME), StandardCharsets.UTF_8);
        } catch (NoSuchFileException e) {
            return Optional.empty();
        }
        for (String line : raw.split("\n")) {
            if (line.startsWith(PARTITIONS)) {
                String list = line.substring(PARTITIONS.length()).strip();
                try {
                    TreeSet<Integer> partitions = new TreeSet<>();
                    for (String p : list.isEmpty() ? new String[0] : list.split(",")) {
                        partitions.add(Integer.valueOf(p.strip()));
                    }
                    return Optional.of(new Contents(raw, Collections.unmodifiableSortedSet(partitions)));
                } catch (NumberFormatException e) {
                    return Optional.empty();
                }
            }
        }
        return Optional.empty();
    }
}
