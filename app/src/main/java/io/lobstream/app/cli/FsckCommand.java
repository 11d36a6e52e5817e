package io.lobstream.app.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.lobstream.ingest.http.ReportJson;
import io.lobstream.schema.LobStreamConfig;
import io.lobstream.store.LaterFormatException;
import io.lobstream.store.LobStore;
import io.lobstream.store.fsck.FsckReport;
import io.lobstream.store.tablespace.TablespaceDirs;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.concurrent.Callable;

/**
 * {@code ./lobstream fsck [DIR | --data-dir DIR]}: checks every tablespace of a data directory (the
 * node must be stopped). {@code --data-dir} and its default are the node's, so the directory a
 * node was started with is named the same way here.
 */
@Command(name = "fsck", mixinStandardHelpOptions = true,
        description = {"Check every tablespace under a data directory: each page is exactly one of live, pending purge, free or uploading; "
                + "every checksum holds; index and pages agree. Stop the node first (the index is locked while it runs).",
                "Exit status: 0 clean, 1 problems found, 2 cannot check."})
final class FsckCommand implements Callable<Integer> {
    @Parameters(index = "0", arity = "0..1", paramLabel = "DIR",
            description = "The data directory (or one tablespace directory); the same as --data-dir.")
    Path dirArgument;

    @Option(names = "--data-dir", paramLabel = "DIR", description = "The data directory (default: " + LobStreamConfig.DEFAULT_DATA_DIR + ", the node's).")
    Path dataDir;

    @Spec
    CommandSpec spec;

    @Option(names = "--json", description = "Print one JSON object.")
    boolean json;

    @Option(names = "--no-data", description = "Skip reading data pages and value checksums (faster).")
    boolean noData;

    @Override
    public Integer call() throws Exception {
        if (dirArgument != null && dataDir != null
                && !dirArgument.toAbsolutePath().normalize().equals(dataDir.toAbsolutePath().normalize())) {
            throw new ParameterException(spec.commandLine(), "fsck: give the directory once, as DIR or as --data-dir, not both");
        }
        Path dir = dirArgument != null ? dirArgument : dataDir != null ? dataDir : Path.of(LobStreamConfig.DATA_DIR.defaultValue());
        ObjectMapper mapper = new ObjectMapper();
        if (!Files.isDirectory(dir)) {
            return cannotCheck(mapper, dir + (Files.exists(dir) ? " is not a directory" : " does not exist"));
        }
        List<Integer> partitions;
        boolean single;
        List<Path> others;
        try {
            partitions = TablespaceDirs.partitions(dir);
            single = partitions.isEmpty() && Files.exists(dir.resolve(TablespaceDirs.DESCRIPTOR));
            others = single ? List.of() : TablespaceDirs.notTablespaces(dir);
        } catch (IOException | java.io.UncheckedIOException e) { // an unreadable tablespaces/ (another user's): nothing checked
            return cannotCheck(mapper, "cannot list the tablespaces under " + dir + ": " + e);
        }
        boolean nothingToCheck = partitions.isEmpty() && !single && others.stream().noneMatch(FsckCommand::lostItsDescriptor);
        if (nothingToCheck && others.isEmpty()) {
            Path parent = dir.toAbsolutePath().normalize().getParent();
            boolean dataDirBelow = parent != null && dir.toAbsolutePath().normalize().endsWith("tablespaces") && hasPartitions(parent);
            return cannotCheck(mapper, "no tablespaces under " + dir
                    + (dataDirBelow ? " (it holds them itself: give fsck the data directory, " + parent + ")" : ""));
        }
        ObjectNode root = mapper.createObjectNode();
        ArrayNode parts = root.putArray("partitions");
        ArrayNode held = mapper.createArrayNode();
        ArrayNode unreadable = mapper.createArrayNode();
        FsckReport total = FsckReport.empty();
        for (Integer p : single ? List.of(-1) : partitions) {
            Path ts = single ? dir : TablespaceDirs.partitionDir(dir, p);
            FsckReport r;
            Path cannotRead = firstUnreadable(ts);
            try (NodeLock lock = NodeLock.take(ts)) {
                if (cannotRead != null) { // not this fsck's to read (another user's files): not checked, not damage
                    throw new AccessDeniedException(cannotRead.toString());
                }
                if (lock == null) {
                    System.err.println("fsck: " + ts + " is open in a running node: not checked (stop the node first; GET /fsck "
                            + "checks a running node)");
                    held.add(p);
                    continue;
                }
                r = LobStore.fsckClosed(ts, !noData); // read-only, no recovery: what is on disk, as it is
            } catch (java.nio.file.NoSuchFileException missing) {
                r = FsckReport.empty().withProblem(ts + ": missing: " + missing.getMessage());
            } catch (IOException | RuntimeException e) {
                // a file fsck may not read (RocksDB says so in its message), or a format a later release wrote: not checked,
                // not damage (a script that rebuilds what fsck finds damaged must not act on a sound copy)
                if (e instanceof AccessDeniedException || e instanceof LaterFormatException
                        || String.valueOf(e.getMessage()).contains("Permission denied")) {
                    System.err.println("fsck: " + ts + ": not checked: " + (e instanceof AccessDeniedException denied
                            ? io.lobstream.store.DiskErrors.fileProblem(denied) : e.getMessage()));
                    unreadable.add(p);
                    continue;
                }
                r = FsckReport.empty().withProblem(ts + ": cannot be read: " + e.getMessage());
            } catch (LinkageError e) { // RocksDB's native library does not load here (a noexec /tmp): not checked, not damage
                System.err.println("fsck: " + ts + ": not checked: cannot read its index here: " + e);
                unreadable.add(p);
                continue;
            }
            total = total.plus(r);
            ObjectNode n = ReportJson.fsck(r);
            n.put("partition", p);
            parts.add(n);
            if (!json) {
                System.out.printf("%s: %s  lobs %d, pending %d, pages live %d / history %d / free %d / uploading %d%n",
                        ts, r.ok() ? "ok" : "PROBLEMS", r.lobs(), r.versionsPending(), r.pagesLive(), r.pagesHistory(), r.pagesFree(),
                        r.pagesUploading());
                r.problems().forEach(pr -> System.out.println("  " + pr));
            }
        }
        ArrayNode keptAside = mapper.createArrayNode();
        for (Path other : others) {
            if (lostItsDescriptor(other) && !readable(other)) { // its descriptor may be there, unseen
                System.err.println("fsck: " + other + ": not checked: cannot read it (permission denied)");
                unreadable.add(Integer.parseInt(other.getFileName().toString().substring(2)));
            } else if (lostItsDescriptor(other)) {
                String problem = other + ": no " + TablespaceDirs.DESCRIPTOR + ", so not a tablespace any node opens "
                        + "(a restore that left it out?); a node given this partition refuses it";
                total = total.withProblem(problem);
                if (!json) {
                    System.out.println(problem);
                }
            } else {
                long bytes = TablespaceDirs.bytesUnder(other);
                // not asked whether a replay holds its lock: asking takes the lock for a moment, and a replay starting then fails
                boolean staging = other.getFileName().toString().endsWith(".replaying");
                keptAside.add(mapper.createObjectNode().put("path", other.toString()).put("bytes", bytes).put("replay_staging", staging));
                if (!json) {
                    System.out.printf("%s: %s (%d MB), not checked: %s%n", other, staging ? "a replay's staging" : "kept aside",
                            bytes >> 20, staging ? "a replay running builds it, or one stopped left it (the next replay removes it)"
                                    : "look, then remove it");
                }
            }
        }
        root.setAll(ReportJson.fsck(total));
        root.set("held_by_a_node", held);
        root.set("not_readable", unreadable);
        boolean complete = held.isEmpty() && unreadable.isEmpty() && !nothingToCheck;
        root.put("complete", complete); // fsck_ok says only that what was checked is clean
        root.set("kept_aside", keptAside);
        if (json) {
            System.out.println(mapper.writeValueAsString(root));
        } else if (nothingToCheck) {
            System.out.println("fsck: no tablespace under " + dir + " to check");
        } else if (complete) {
            System.out.println(total.ok() ? "fsck: clean" : "fsck: " + total.problems().size() + " problem(s)");
        } else {
            System.out.println("fsck: " + (total.ok() ? "no problems" : total.problems().size() + " problem(s)") + " in what was checked; "
                    + (held.isEmpty() ? "" : held.size() + " tablespace(s) open in a running node")
                    + (held.isEmpty() || unreadable.isEmpty() ? "" : " and ")
                    + (unreadable.isEmpty() ? "" : unreadable.size() + " that could not be read") + " not checked");
        }
        return !total.ok() ? 1 : complete ? 0 : 2; // problems found come first: what a script must not miss
    }

    /** The first of a tablespace's directories and files this process may not read, or null. */
    private static Path firstUnreadable(Path ts) {
        for (Path p : List.of(ts, ts.resolve(TablespaceDirs.INDEX), ts.resolve(TablespaceDirs.DESCRIPTOR), ts.resolve(TablespaceDirs.PAGES))) {
            if (Files.exists(p) && !readable(p)) {
                return p;
            }
        }
        return null;
    }

    private static boolean readable(Path p) {
        return Files.isReadable(p) && (!Files.isDirectory(p) || Files.isExecutable(p));
    }

    private static boolean hasPartitions(Path dataDir) {
        try {
            return !TablespaceDirs.partitions(dataDir).isEmpty();
        } catch (IOException | java.io.UncheckedIOException e) {
            return false;
        }
    }

    private static boolean lostItsDescriptor(Path dir) {
        return dir.getFileName().toString().matches("p-\\d+");
    }

    /** Exit 2 with {@code why}: on stderr, and with --json as the one JSON object on stdout too. */
    private int cannotCheck(ObjectMapper mapper, String why) throws java.io.IOException {
        System.err.println("fsck: " + why);
        if (json) {
            System.out.println(mapper.writeValueAsString(mapper.createObjectNode().put("fsck_ok", false).put("complete", false)
                    .put("error", why)));
        }
        return 2;
    }

    /**
     * The index's RocksDB lock (a POSIX lock, as Java's), which a node holds while it has the tablespace open, held by
     * fsck while it checks: a node started meanwhile fails to open the tablespace (and its task retries) instead of
     * reusing pages under the check, which would report problems the tablespace does not have.
     */
    private record NodeLock(FileChannel channel, FileLock lock) implements AutoCloseable {
        /**
         * The lock, or null when a process holds it. A lock file that cannot be opened for writing (a read-only mount,
         * another user's directory) is locked shared, read-only: that still conflicts with a node's lock. One that cannot
         * be opened at all (no index: the check reports it) is said on stderr, and the check goes on without it.
         */
        static NodeLock take(Path ts) throws IOException {
            Path file = ts.resolve(TablespaceDirs.INDEX).resolve("LOCK");
            FileChannel channel;
            boolean shared = false;
            try {
                channel = FileChannel.open(file, StandardOpenOption.WRITE);
            } catch (IOException notWritable) {
                try {
                    channel = FileChannel.open(file, StandardOpenOption.READ);
                    shared = true;
                } catch (IOException cannotOpen) {
                    if (Files.exists(file)) {
                        unguarded(ts, cannotOpen instanceof FileSystemException f ? io.lobstream.store.DiskErrors.fileProblem(f) : cannotOpen.getMessage());
                    }
                    return new NodeLock(null, null);
                }
            }
            try {
                FileLock lock = channel.tryLock(0, Long.MAX_VALUE, shared);
                if (lock == null) {
                    channel.close();
                    return null;
                }
                return new NodeLock(channel, lock);
            } catch (IOException | RuntimeException e) {
                channel.close();
                unguarded(ts, "locking " + file + ": " + e.getMessage());
                return new NodeLock(null, null);
            }
        }

        private static void unguarded(Path ts, String why) {
            System.err.println("fsck: cannot tell whether a node holds " + ts + " (" + why + "); checked all the same: stop its "
                    + "node first");
        }

        @Override
        public void close() throws IOException {
            if (channel != null) {
                channel.close(); // releases the lock
            }
        }
    }
}
