package io.lobstream.app.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.lobstream.ingest.http.LobHttpServer;
import io.lobstream.schema.LobStreamConfig;
import io.lobstream.store.fsck.Fsck;
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
        description = {"Check every tablespace under a data directory: each page is exactly one of live, pending purge or free; "
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
        if (!Files.isDirectory(dir)) {
            System.err.println("fsck: " + dir + " is not a directory");
            return 2;
        }
        List<Integer> partitions = TablespaceDirs.partitions(dir);
        boolean single = partitions.isEmpty() && Files.exists(dir.resolve(TablespaceDirs.DESCRIPTOR));
        if (partitions.isEmpty() && !single) {
            System.err.println("fsck: no tablespaces under " + dir);
            return 2;
        }
        ObjectMapper mapper = new ObjectMapper();
        ObjectNode root = mapper.createObjectNode();
        ArrayNode parts = root.putArray("partitions");
        FsckReport total = FsckReport.empty();
        for (Integer p : single ? List.of(-1) : partitions) {
            Path ts = single ? dir : TablespaceDirs.partitionDir(dir, p);
            FsckReport r;
            if (heldByANode(ts)) {
                System.err.println("fsck: " + ts + " is open in a running node; stop it first (GET /fsck checks a running node)");
                return 2;
            }
            try {
                r = Fsck.offline(ts, !noData); // read-only, no recovery: what is on disk, as it is
            } catch (java.nio.file.NoSuchFileException missing) {
                r = FsckReport.empty().withProblem(ts + ": no index (" + missing.getMessage() + ")");
            } catch (IOException | RuntimeException e) {
                r = FsckReport.empty().withProblem(ts + ": cannot be read: " + e.getMessage());
            }
            total = total.plus(r);
            ObjectNode n = LobHttpServer.fsckJson(r);
            n.put("partition", p);
            parts.add(n);
            if (!json) {
                System.out.printf("%s: %s  lobs %d, pending %d, pages live %d / history %d / free %d / uploading %d%n",
                        ts, r.ok() ? "ok" : "PROBLEMS", r.lobs(), r.versionsPending(), r.pagesLive(), r.pagesHistory(), r.pagesFree(),
                        r.pagesUploading());
                r.problems().forEach(pr -> System.out.println("  " + pr));
            }
        }
        root.setAll(LobHttpServer.fsckJson(total));
        if (json) {
            System.out.println(mapper.writeValueAsString(root));
        } else {
            System.out.println(total.ok() ? "fsck: clean" : "fsck: " + total.problems().size() + " problem(s)");
        }
        return total.ok() ? 0 : 1;
    }

    /**
     * Whether a process holds the index's RocksDB lock (a POSIX lock, as Java's), i.e. a node has
     * the tablespace open. A lock file that cannot be opened for writing (a read-only mount, another
     * user's directory) says nothing: the check goes on, read-only. The lock is not kept while
     * checking (a node may not be started meanwhile; what it changed would show as problems).
     */
    private static boolean heldByANode(Path ts) {
        try (FileChannel lock = FileChannel.open(ts.resolve(TablespaceDirs.INDEX).resolve("LOCK"), StandardOpenOption.WRITE);
             FileLock held = lock.tryLock()) {
            return held == null;
        } catch (IOException | java.nio.channels.OverlappingFileLockException e) {
            return false;
        }
    }
}
