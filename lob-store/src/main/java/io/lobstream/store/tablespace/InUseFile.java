package io.lobstream.store.tablespace;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
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
    /** How often a running node rewrites the file. */
    public static final Duration WRITTEN_EVERY = Duration.ofSeconds(5);
    /** A file unchanged for this long is a stopped node's (twelve writes missed: a long GC pause or a slow disk is not one). */
    public static final Duration STOPPED_AFTER = Duration.ofSeconds(60);
    private static final String PARTITIONS = "partitions=";
    private static final String OWN = "own=";

    /**
     * What the file says: its whole text (which changes at every write), the partitions in use, and of those the ones the
     * node's own tasks use (the rest carried over from its previous run, after a restart: never carried on again).
     */
    public record Contents(String raw, Set<Integer> partitions, Set<Integer> own, long modifiedMillis) {
        /** Last changed more than {@link #STOPPED_AFTER} ago, by the file's time against this host's clock: a stopped node's. */
        public boolean stale() {
            return System.currentTimeMillis() - modifiedMillis > STOPPED_AFTER.toMillis();
        }
    }

    private InUseFile() {
    }

    /** As {@link #write(Path, String, long, Collection, Collection)}, every partition the node's own. */
    public static void write(Path dataDir, String run, long seq, Collection<Integer> partitions) throws IOException {
        write(dataDir, run, seq, partitions, partitions);
    }

    /** Replaces the file at once (a reader never sees half of it): {@code run} and {@code seq} make each write new. */
    public static void write(Path dataDir, String run, long seq, Collection<Integer> partitions, Collection<Integer> own)
            throws IOException {
        Path root = dataDir.resolve("tablespaces");
        Files.createDirectories(root);
        Path next = root.resolve(NAME + ".next");
        String text = "run=" + run + "\nseq=" + seq + "\n" + PARTITIONS + list(partitions) + "\n" + OWN + list(own) + "\n";
        Files.writeString(next, text, StandardCharsets.UTF_8);
        Files.move(next, root.resolve(NAME), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }

    /**
     * The file's contents; empty if there is none (no node ran here, or one of a version before it), or if it does not
     * read as one (cut by a power loss before its data reached the disk): then as though no node had said.
     */
    public static Optional<Contents> read(Path dataDir) throws IOException {
        Path file = dataDir.resolve("tablespaces").resolve(NAME);
        String raw;
        long modified;
        try {
            raw = Files.readString(file, StandardCharsets.UTF_8);
            modified = Files.getLastModifiedTime(file).toMillis();
        } catch (NoSuchFileException e) {
            return Optional.empty();
        }
        Set<Integer> partitions = null;
        Set<Integer> own = null;
        try {
            for (String line : raw.split("\n")) {
                if (line.startsWith(PARTITIONS)) {
                    partitions = parse(line.substring(PARTITIONS.length()));
                } else if (line.startsWith(OWN)) {
                    own = parse(line.substring(OWN.length()));
                }
            }
        } catch (NumberFormatException e) {
            return Optional.empty();
        }
        return partitions == null || own == null ? Optional.empty() : Optional.of(new Contents(raw, partitions, own, modified));
    }

    /**
     * Whether a node runs on {@code dataDir} now. No file, or one last changed more than {@link #STOPPED_AFTER} ago (its
     * time against this host's clock): no. Younger, the file is watched for up to {@code watch} (two of its writes'
     * time, as a caller that must not guess wrong passes): it changes under a running node, and stays as it is after a
     * node that stopped just now. A node that has not written its file yet is not seen: on a directory where no node
     * wrote one before, a node writes its first once a task of it asks for a partition, or 90 s after its start.
     */
    public static boolean nodeRunning(Path dataDir, Duration watch) throws IOException, InterruptedException {
        Optional<Contents> first = read(dataDir);
        if (first.isEmpty() || first.get().stale()) {
            return false;
        }
        long until = System.nanoTime() + watch.toNanos();
        while (System.nanoTime() - until < 0) {
            Thread.sleep(Math.min(200, Math.max(1, watch.toMillis() / 10)));
            Optional<Contents> now = read(dataDir);
            if (now.isPresent() && !now.get().raw().equals(first.get().raw())) {
                return true;
            }
        }
        return false;
    }

    private static String list(Collection<Integer> partitions) {
        return new TreeSet<>(partitions).stream().map(String::valueOf).collect(Collectors.joining(","));
    }

    private static Set<Integer> parse(String list) {
        TreeSet<Integer> out = new TreeSet<>();
        for (String p : list.isBlank() ? new String[0] : list.strip().split(",")) {
            out.add(Integer.valueOf(p.strip()));
        }
        return Collections.unmodifiableSortedSet(out);
    }
}
