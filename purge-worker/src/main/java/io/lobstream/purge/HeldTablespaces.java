package io.lobstream.purge;

import io.lobstream.store.LogOncePerMinute;
import io.lobstream.store.tablespace.InUseFile;
import io.lobstream.store.tablespace.TablespaceDirs;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Optional;
import java.util.Set;
import java.util.function.LongSupplier;
import java.util.stream.Collectors;

/**
 * The partitions whose tablespaces a standalone purge worker's data directory holds, as it last told the purge group
 * ({@link TablespacePartitionAssignor} sends them at each join) and as they are now: the worker asks the group to
 * reassign when the two differ, so a partition whose tablespace appears here (a node beside this worker opened it, a
 * volume was mounted) comes to this worker, and one whose tablespace went leaves it.
 *
 * <p>Where a node runs on the directory, the copies it uses ({@link InUseFile}): a node keeps its copy of a partition
 * that moved to another node, and a worker that held that copy kept the partition and skipped the new owner's undo
 * records as another copy's. A file that has not changed for {@link InUseFile#STOPPED_AFTER} is a stopped node's: none held, as
 * the copies of a stopped node are not purged until it is back (its writer applies the reclaims), or its partitions are
 * rebuilt elsewhere. No file (no node here, or one of an older version): every copy, as before.
 */
final class HeldTablespaces {
    private static final Logger log = LoggerFactory.getLogger(HeldTablespaces.class);

    private final Path dataDir;
    private final String workerId;
    private final LongSupplier nanos;
    private final LogOncePerMinute failureSaid = new LogOncePerMinute();
    /** The node's file as last read, and when (this worker's clock) it last changed; under this object's lock. */
    private String nodeSaid;
    private long nodeSaidChangedAt;
    private boolean saidStopped;
    /** What the last join told the group; null before the first. Written on the consumer's thread, as is every read. */
    private volatile Set<Integer> told;

    HeldTablespaces(Path dataDir, String workerId) {
        this(dataDir, workerId, System::nanoTime);
    }

    HeldTablespaces(Path dataDir, String workerId, LongSupplier nanos) {
        this.dataDir = dataDir;
        this.workerId = workerId;
        this.nanos = nanos;
    }

    /**
     * The partitions held now, taken as told to the group (the assignor's, at a join). If the directory cannot be listed,
     * what was told last: a moment's failure (a network volume's) must not take every partition from this worker, each
     * over two rebalances, and give them back at the next look; the failure is said, and the readers report what they
     * cannot open. None if it never could be listed.
     */
    Set<Integer> tell() {
        Set<Integer> now = now();
        Set<Integer> last = told;
        told = now != null ? now : last != null ? last : Set.of();
        return told;
    }

    /**
     * The partitions held now if they are not those the group was last told; null if they are, if no join told it yet,
     * or if the directory cannot be listed now.
     */
    Set<Integer> changedSinceTold() {
        Set<Integer> last = told;
        if (last == null) {
            return null;
        }
        Set<Integer> now = now();
        return now == null || now.equals(last) ? null : now;
    }

    Set<Integer> told() {
        return told;
    }

    /** The partitions held now; null (said once a minute) if the directory cannot be listed. */
    private synchronized Set<Integer> now() {
        try {
            Set<Integer> copies = Set.copyOf(TablespaceDirs.partitions(dataDir));
            Optional<InUseFile.Contents> node = InUseFile.read(dataDir);
            if (node.isEmpty()) {
                return copies;
            }
            long at = nanos.getAsLong();
            if (!node.get().raw().equals(nodeSaid)) {
                // first seen: as old as the file says, on this host's clock (the content is what tells later, clocks aside),
                // so a worker started beside a node stopped long ago does not hold its copies for a minute first
                boolean first = nodeSaid == null;
                nodeSaid = node.get().raw();
                nodeSaidChangedAt = first && node.get().stale() ? at - InUseFile.STOPPED_AFTER.toNanos() - 1 : at;
                saidStopped = false;
            }
            if (at - nodeSaidChangedAt > InUseFile.STOPPED_AFTER.toNanos()) {
                if (!saidStopped) {
                    saidStopped = true;
                    log.info("purge worker {}: the node on {} has not written {} for {} s: it is stopped (or cannot write it), and "
                            + "this worker holds none of its tablespaces until it runs again", workerId, dataDir.toAbsolutePath(),
                            InUseFile.NAME, InUseFile.STOPPED_AFTER.toSeconds());
                }
                return Set.of();
            }
            return copies.stream().filter(node.get().partitions()::contains).collect(Collectors.toUnmodifiableSet());
        } catch (IOException e) {
            if (failureSaid.sayNow(e.toString()) >= 0) {
                log.error("purge worker {}: cannot list the tablespaces under {} ({}); the purge group is told what it held "
                        + "before (said once a minute)", workerId, dataDir.toAbsolutePath(), e.toString());
            }
            return null;
        }
    }
}
