package io.lobstream.store.tablespace;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Where a tablespace lives in a data directory ({@link TablespaceDescriptor} reads and writes its descriptor). Opening the files for a store is
 * {@code io.lobstream.store.impl.TablespaceFiles}'s (package-private to the engine).
 *
 * <pre>
 * DATA_DIR/tablespaces/p-0/lob.pages          the page file
 * DATA_DIR/tablespaces/p-0/index/             the RocksDB index
 * DATA_DIR/tablespaces/p-0/tablespace.properties   format, page size and copy id (read by purge
 *                                                   workers, which never open the index)
 * DATA_DIR/tablespaces/p-0/SYNC-FAILED        written when an fsync failed: the tablespace is not opened again
 * DATA_DIR/tablespaces/p-0/LOG-CUT            written when lob.commands went back under the running task (a cut log)
 * DATA_DIR/tablespaces/p-0/INCOMPLETE         written when this copy was rebuilt from a lob.commands whose retention had
 *                                             deleted commands it needed (one line per range lost), or from topics that
 *                                             compact (a line per topic); fsck reports it
 * DATA_DIR/tablespaces/p-0.sync-failed-T/     one moved aside at time T for that reason (a node rebuilds p-0)
 * DATA_DIR/tablespaces/p-0.ahead-of-log-T/    one moved aside at time T as it had applied commands lob.commands does not
 *                                             have (the topic or the broker's log made anew; a node rebuilds p-0)
 * DATA_DIR/tablespaces/p-0.other-topic-T/     one moved aside at time T as it had applied commands of a lob.commands
 *                                             deleted since (its topic id recorded at its first check is not the topic's),
 *                                             or of another deployment's topics (another lob.topic.prefix)
 * DATA_DIR/tablespaces/p-0.torn-writes-T/     one moved aside at time T as a crash left versions without their pages
 * DATA_DIR/tablespaces/p-0.log-cut-T/         one moved aside at time T after lob.commands went back under it (LOG-CUT)
 * DATA_DIR/tablespaces/p-0.replaying/         an offline replay's tablespace until it is whole
 * DATA_DIR/tablespaces/p-0.replaying.lock     held by the replay building it
 * DATA_DIR/tablespaces/p-0.replay-failed-T/   a replay's tablespace that fsck found problems in at time T, kept for a look
 * DATA_DIR/tablespaces/node.in-use            the partitions the node here uses now, for the purge workers beside it
 *                                             ({@link InUseFile})
 * </pre>
 * Only {@code p-N} directories are tablespaces ({@link #partitions}).
 */
public final class TablespaceDirs {
    /** Copies whose log was cut under their task in this process, by id, with why (their marker may not be on disk). */
    private static final Map<String, String> CUT_HERE = new ConcurrentHashMap<>();
    public static final String PAGES = "lob.pages";
    public static final String INDEX = "index";
    public static final String DESCRIPTOR = "tablespace.properties";
    /** The marker of a failed sync (see {@link io.lobstream.store.TablespaceSyncFailedException}). */
    public static final String SYNC_FAILED = "SYNC-FAILED";
    /** The marker of a copy whose log was cut under it (see {@link #markLogCut}). */
    public static final String LOG_CUT = "LOG-CUT";
    /** The marker of a copy that misses commands (see {@link #markIncomplete}). */
    public static final String INCOMPLETE = "INCOMPLETE";
    private static final Pattern PARTITION = Pattern.compile("p-(\\d+)");
    /** A copy of a partition's tablespace by another name: p-N.REASON-TIME, p-N.replay-failed-TIME, p-N.replaying. */
    private static final Pattern KEPT_ASIDE = Pattern.compile("p-\\d+\\..+");

    private TablespaceDirs() {
    }

    public static Path partitionDir(Path dataDir, int partition) {
        return dataDir.resolve("tablespaces").resolve("p-" + partition);
    }

    /** Where an offline replay builds the tablespace of {@code partitionDir} before moving it there. */
    public static Path replayStaging(Path partitionDir) {
        return partitionDir.resolveSibling(partitionDir.getFileName() + ".replaying");
    }

    /** The file a replay into {@link #replayStaging} holds a lock on while it runs. */
    public static Path replayLock(Path partitionDir) {
        return partitionDir.resolveSibling(partitionDir.getFileName() + ".replaying.lock");
    }

    /**
     * Makes the names in {@code dir} durable (an fsync of the directory itself, which Linux allows and
     * needs for a new file's name to survive a power loss); where the platform refuses, nothing.
     */
    public static void syncDirectory(Path dir) throws IOException {
        try (FileChannel d = FileChannel.open(dir, StandardOpenOption.READ)) {
            d.force(true);
        } catch (UnsupportedOperationException | java.nio.file.AccessDeniedException notHere) {
            // not a thing every platform does
        }
    }

    /**
     * Creates {@code dir} and the directories missing above it, each name made durable ({@link #syncDirectory}): a
     * power loss after a node's first start must not take its data directory, or its tablespaces/, with what is in them.
     */
    public static void createDirectoriesDurably(Path dir) throws IOException {
        if (Files.isDirectory(dir)) {
            // a process killed between its making and the sync below left the name unsynced: one fsync makes it sure
            Path parent = dir.toAbsolutePath().getParent();
            if (parent != null) {
                syncDirectory(parent);
            }
            return;
        }
        Path top = dir.toAbsolutePath();
        while (top.getParent() != null && !Files.exists(top.getParent())) {
            top = top.getParent();
        }
        Files.createDirectories(dir);
        for (Path created = dir.toAbsolutePath(); !created.equals(top); ) {
            created = created.getParent();
            syncDirectory(created);
        }
        if (top.getParent() != null) {
            syncDirectory(top.getParent());
        }
    }

    /**
     * Marks {@code tablespaceDir} as one whose sync failed, saying {@code why}: the marker and its name
     * are forced to disk, as far as the disk still takes a small write.
     */
    public static void markSyncFailed(Path tablespaceDir, String why) throws IOException {
        writeMarker(tablespaceDir.resolve(SYNC_FAILED), why);
    }

    /**
     * Marks {@code tablespaceDir} as one whose commands log went back under its running task ({@code why}): it applied
     * offsets the log may now hold other commands at, so it is no copy of the log any more; a node's next check moves it
     * aside and rebuilds the partition.
     */
    public static void markLogCut(Path tablespaceDir, String why) throws IOException {
        writeMarker(tablespaceDir.resolve(LOG_CUT), why);
    }

    /**
     * {@link #markLogCut(Path, String)}, remembered in this process under the copy's id first: a marker the disk refuses
     * (no inode left, a file system remounted read-only) must not let the task's next check trust the copy, whose applied
     * offsets the log now holds other commands at (they would be skipped as applied, and lost).
     */
    public static void markLogCut(Path tablespaceDir, String copyId, String why) throws IOException {
        if (copyId != null) { // (a tablespace of a release before copy ids has none)
            CUT_HERE.put(copyId, why);
        }
        markLogCut(tablespaceDir, why);
    }

    /** What the marker of a log cut under {@code tablespaceDir}'s task says, if there is one. */
    public static Optional<String> logCut(Path tablespaceDir) throws IOException {
        return marker(tablespaceDir.resolve(LOG_CUT));
    }

    /** {@link #logCut(Path)}, or what this process remembers of a cut under the copy {@code copyId} (a marker refused). */
    public static Optional<String> logCut(Path tablespaceDir, String copyId) throws IOException {
        Optional<String> marked = logCut(tablespaceDir);
        return marked.isPresent() || copyId == null ? marked : Optional.ofNullable(CUT_HERE.get(copyId));
    }

    /** Writes a marker saying {@code why}: it and its name are forced to disk, as far as the disk still takes a small write. */
    private static void writeMarker(Path marker, String why) throws IOException {
        try (FileChannel out = FileChannel.open(marker, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING)) {
            out.write(ByteBuffer.wrap((why + "\n").getBytes(StandardCharsets.UTF_8)));
            out.force(true);
        }
        syncDirectory(marker.getParent()); // the marker's name too: a power loss must not take it
    }

    /** What the marker of a failed sync in {@code tablespaceDir} says, if there is one. */
    public static Optional<String> syncFailure(Path tablespaceDir) throws IOException {
        return marker(tablespaceDir.resolve(SYNC_FAILED));
    }

    /**
     * Records that this copy of the partition was built without commands it needed ({@code why}: which, and why), for
     * good: a copy that misses a command cannot tell which values it has wrong, so every fsck of it says so. Appended
     * (a copy caught up twice over trimmed ranges misses both) and forced with its name before the caller applies
     * anything past the gap, so no power loss leaves a copy that looks whole.
     */
    public static void markIncomplete(Path tablespaceDir, String why) throws IOException {
        if (incompleteness(tablespaceDir).map(said -> ("; " + said + "; ").contains("; " + why + "; ")).orElse(false)) {
            return; // said already (a catch-up tried again after one that failed)
        }
        try (FileChannel out = FileChannel.open(tablespaceDir.resolve(INCOMPLETE), StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.APPEND)) {
            out.write(ByteBuffer.wrap((why + "\n").getBytes(StandardCharsets.UTF_8)));
            out.force(true);
        }
        syncDirectory(tablespaceDir);
    }

    /** What the marker of an incomplete copy in {@code tablespaceDir} says (its lines joined by "; "), if there is one. */
    public static Optional<String> incompleteness(Path tablespaceDir) throws IOException {
        return marker(tablespaceDir.resolve(INCOMPLETE)).map(s -> s.replace("\n", "; "));
    }

    private static Optional<String> marker(Path marker) throws IOException {
        try {
            return Optional.of(Files.readString(marker).strip());
        } catch (java.nio.file.NoSuchFileException none) {
            return Optional.empty();
        }
    }

    /** Why a node moved a tablespace aside, out of the way of the one rebuilt in its place: the suffix of its new name. */
    public enum SetAside {
        /** Its fsync failed ({@link #SYNC_FAILED}): what it holds may not be what it was told to hold. */
        SYNC_FAILED("sync-failed"),
        /** It had applied offsets of lob.commands past the topic's end: it is not a copy of the log there is now. */
        AHEAD_OF_LOG("ahead-of-log"),
        /**
         * It had applied commands of a lob.commands deleted since (another topic id), or of another topic (another
         * deployment's), or none of this topic though it holds versions: not a copy of the log there is now.
         */
        OTHER_TOPIC("other-topic"),
        /** Its commands log went back under its running task ({@link #LOG_CUT}): it applied offsets the log holds others at. */
        LOG_CUT("log-cut"),
        /** A crash left versions no flush had covered without their pages ({@code TablespaceTornException}). */
        TORN_WRITES("torn-writes");

        private final String suffix;

        SetAside(String suffix) {
            this.suffix = suffix;
        }

        public String suffix() {
            return suffix;
        }

        /** Where the tablespace at {@code partitionDir} is moved at {@code atMillis}: p-N.SUFFIX-TIME. */
        public Path path(Path partitionDir, long atMillis) {
            return partitionDir.resolveSibling(partitionDir.getFileName() + "." + suffix + "-" + atMillis);
        }
    }

    /** Partitions that have a tablespace under {@code dataDir}, sorted. */
    public static List<Integer> partitions(Path dataDir) throws IOException {
        List<Integer> out = new ArrayList<>();
        for (Path p : directories(dataDir)) {
            Matcher m = PARTITION.matcher(p.getFileName().toString());
            if (m.matches() && Files.exists(p.resolve(DESCRIPTOR))) {
                out.add(Integer.parseInt(m.group(1)));
            }
        }
        out.sort(null);
        return out;
    }

    /**
     * What else is under {@code dataDir}'s tablespaces, sorted by name: copies a node or a replay kept aside
     * ({@code p-N.sync-failed-T}, {@code p-N.ahead-of-log-T}, {@code p-N.other-topic-T}, {@code p-N.torn-writes-T},
     * {@code p-N.log-cut-T}, {@code p-N.replay-failed-T}, a replay's staging) and
     * {@code p-N} directories without a descriptor. Nothing removes them (but the next replay its staging): fsck lists
     * them, for the operator to look at and remove.
     */
    public static List<Path> notTablespaces(Path dataDir) throws IOException {
        List<Path> out = new ArrayList<>();
        for (Path p : directories(dataDir)) {
            String name = p.getFileName().toString();
            if (PARTITION.matcher(name).matches() ? !Files.exists(p.resolve(DESCRIPTOR)) : KEPT_ASIDE.matcher(name).matches()) {
                out.add(p);
            }
        }
        return out;
    }

    /**
     * The bytes of what {@link #notTablespaces} lists, best effort: what copies kept aside hold on the data directory's
     * disk; NaN when the directory cannot be listed, not 0, which would say that nothing is kept aside.
     */
    public static double notTablespacesBytes(Path dataDir) {
        try {
            return notTablespaces(dataDir).stream().mapToLong(TablespaceDirs::bytesUnder).sum();
        } catch (IOException | UncheckedIOException e) { // the listing's iterator throws the latter
            return Double.NaN;
        }
    }

    /**
     * The bytes of the regular files under {@code dir}, best effort: a file or directory deleted meanwhile (a replay's
     * staging RocksDB compacting, a copy moved aside during a scrape) counts 0, and the rest still counts. Not
     * {@code Files.walk}, which gives up on the first such file, and the whole sum with it.
     */
    public static long bytesUnder(Path dir) {
        long[] bytes = {0};
        walkBestEffort(dir, (file, attrs) -> {
            if (attrs.isRegularFile()) {
                bytes[0] += attrs.size();
            }
        }, d -> { });
        return bytes[0];
    }

    /**
     * Visits every file under {@code dir} (links as themselves, not followed), then each directory once its entries
     * were visited, going on past whatever vanishes or cannot be read meanwhile.
     */
    public static void walkBestEffort(Path dir, BiConsumer<Path, BasicFileAttributes> file, Consumer<Path> directoryDone) {
        try {
            Files.walkFileTree(dir, new SimpleFileVisitor<>() {
                @Override
                public FileVisitResult visitFile(Path f, BasicFileAttributes attrs) {
                    file.accept(f, attrs);
                    return FileVisitResult.CONTINUE;
                }

                @Override
                public FileVisitResult visitFileFailed(Path f, IOException gone) {
                    return FileVisitResult.CONTINUE;
                }

                @Override
                public FileVisitResult postVisitDirectory(Path d, IOException gone) {
                    directoryDone.accept(d);
                    return FileVisitResult.CONTINUE;
                }
            });
        } catch (IOException e) {
            // not thrown by the visitor above; what was visited stands
        }
    }

    /** The directories under {@code dataDir}'s tablespaces, sorted by name (none if it has none). */
    private static List<Path> directories(Path dataDir) throws IOException {
        Path root = dataDir.resolve("tablespaces");
        if (!Files.isDirectory(root)) {
            return List.of();
        }
        try (var s = Files.list(root)) {
            return s.filter(Files::isDirectory).sorted().toList();
        }
    }
}
