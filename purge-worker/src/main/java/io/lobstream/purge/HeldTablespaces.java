package io.lobstream.purge;

import io.lobstream.schema.LogOncePerMinute;
import io.lobstream.store.tablespace.TablespaceDirs;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Set;

/**
 * The partitions whose tablespaces a standalone purge worker's data directory holds, as it last told the purge group
 * ({@link TablespacePartitionAssignor} sends them at each join) and as they are now: the worker asks the group to
 * reassign when the two differ, so a partition whose tablespace appears here (a node beside this worker opened it, a
 * volume was mounted) comes to this worker, and one whose tablespace went leaves it.
 */
final class HeldTablespaces {
    private static final Logger log = LoggerFactory.getLogger(HeldTablespaces.class);

    private final Path dataDir;
    private final String workerId;
    private final LogOncePerMinute failureSaid = new LogOncePerMinute();
    /** What the last join told the group; null before the first. Written on the consumer's thread, as is every read. */
    private volatile Set<Integer> told;

    HeldTablespaces(Path dataDir, String workerId) {
        this.dataDir = dataDir;
        this.workerId = workerId;
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
    private Set<Integer> now() {
        try {
            return Set.copyOf(TablespaceDirs.partitions(dataDir));
        } catch (IOException e) {
            if (failureSaid.sayNow(e.toString()) >= 0) {
                log.error("purge worker {}: cannot list the tablespaces under {} ({}); the purge group is told what it held "
                        + "before (said once a minute)", workerId, dataDir.toAbsolutePath(), e.toString());
            }
            return null;
        }
    }
}
