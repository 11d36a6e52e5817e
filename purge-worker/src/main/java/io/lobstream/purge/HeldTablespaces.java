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

    /** The partitions held now, taken as told to the group (the assignor's, at a join). */
    Set<Integer> tell() {
        Set<Integer> now = now();
        told = now;
        return now;
    }

    /** The partitions held now if they are not those the group was last told; null if they are, or no join told it yet. */
    Set<Integer> changedSinceTold() {
        Set<Integer> last = told;
        if (last == null) {
            return null;
        }
        Set<Integer> now = now();
        return now.equals(last) ? null : now;
    }

    Set<Integer> told() {
        return told;
    }

    /**
     * A directory that cannot be listed holds none, as far as the group goes: its tablespaces could not be read either.
     * The group then gives this worker only partitions no member holds, and the failure is said once a minute.
     */
    private Set<Integer> now() {
        try {
            return Set.copyOf(TablespaceDirs.partitions(dataDir));
        } catch (IOException e) {
            if (failureSaid.sayNow(e.toString()) >= 0) {
                log.error("purge worker {}: cannot list the tablespaces under {} ({}); the purge group is told it holds none "
                        + "(said once a minute)", workerId, dataDir.toAbsolutePath(), e.toString());
            }
            return Set.of();
        }
    }
}
