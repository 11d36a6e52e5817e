package io.lobstream.purge;

import io.lobstream.store.LobStoreConfig;
import io.lobstream.store.purge.PurgeReader;
import io.lobstream.store.tablespace.TablespaceDescriptor;
import io.lobstream.store.tablespace.TablespaceDirs;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;

/**
 * A purge worker's read-only view of a data directory: one {@link PurgeReader} for each
 * partition's tablespace it purges, opened at first use. A partition whose tablespace is not in
 * the directory has no reader (reported once until it appears), and a tablespace replaced under
 * the worker (a new copy, rebuilt by {@code replay} or after a failed sync) gets a new reader.
 */
final class TablespaceReaders implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(TablespaceReaders.class);

    private final Path dataDir;
    private final LobStoreConfig config;
    private final long readLatencyNanos;
    private final String workerId;
    /** Written by the worker's thread; summed by the metrics' gauges on a scrape's. */
    private final Map<Integer, PurgeReader> readers = new ConcurrentHashMap<>();
    /**
     * Why each partition's tablespace could not be opened, said once until it changes: a worker following a node's
     * partitions asks again every 10 s, and whenever the node's open tablespaces change.
     */
    private final Map<Integer, String> unopened = new ConcurrentHashMap<>();
    /**
     * The prefetch reads' threads, one window of them for every tablespace (null without prefetch): the partitions'
     * batches are scanned one after another, and a pool per partition would keep its threads for each.
     */
    private final ExecutorService prefetchThreads;

    TablespaceReaders(Path dataDir, LobStoreConfig config, long readLatencyNanos, String workerId) {
        this.dataDir = dataDir;
        this.config = config;
        this.readLatencyNanos = readLatencyNanos;
        this.workerId = workerId;
        this.prefetchThreads = config.purgePrefetch() ? PurgeReader.prefetchThreads(config) : null;
    }

    /** The reader of a partition's tablespace, or null (reported once) if this data directory lacks it. */
    PurgeReader reader(int partition) {
        PurgeReader r = readers.get(partition);
        if (r != null) {
            return r;
        }
        Path dir = TablespaceDirs.partitionDir(dataDir, partition);
        if (!Files.exists(dir.resolve(TablespaceDirs.DESCRIPTOR))) {
            if (!"missing".equals(unopened.put(partition, "missing"))) {
                log.error("purge worker {}: no tablespace for partition {} under {}; its undo records stay unconsumed. "
                        + "Run purge workers on the host (or shared volume) that holds the node's data directory.",
                        workerId, partition, dataDir.toAbsolutePath());
            }
            return null;
        }
        try {
            r = new PurgeReader(dir, config, readLatencyNanos, prefetchThreads);
            readers.put(partition, r);
            unopened.remove(partition);
            return r;
        } catch (IOException e) {
            if (!e.toString().equals(unopened.put(partition, e.toString()))) {
                log.error("purge worker {}: cannot open tablespace {}; its undo records stay unconsumed until it opens ({} "
                        + "checks it)", workerId, dir, "./lobstream fsck " + dataDir, e);
            }
            return null;
        }
    }

    /**
     * The reader of the partition's tablespace as it is on disk now. An undo record of another copy is
     * most often one produced before the partition moved here; but the tablespace may also have been
     * replaced under a running worker, whose reader still reads the old copy's file: it would skip
     * every undo record of the new copy for good.
     *
     * @return null if the descriptor cannot be read, or the new copy not opened: the batch's records are to wait, as a
     *         missing tablespace's, not be taken for another copy's and consumed
     */
    PurgeReader reopenedIfReplaced(int partition, PurgeReader reader) {
        Path dir = TablespaceDirs.partitionDir(dataDir, partition);
        String onDisk;
        try {
            onDisk = TablespaceDescriptor.read(dir).copyId();
        } catch (IOException e) {
            if (!("descriptor " + e).equals(unopened.put(partition, "descriptor " + e))) { // asked at each such batch
                log.error("purge worker {}: cannot read the tablespace descriptor under {}; its undo records stay unconsumed "
                        + "until it can: {}", workerId, dir, e.toString());
            }
            return null;
        }
        if (onDisk == null || onDisk.equals(reader.copyId())) {
            unopened.remove(partition);
            return reader;
        }
        try {
            PurgeReader fresh = new PurgeReader(dir, config, readLatencyNanos, prefetchThreads);
            unopened.remove(partition);
            readers.put(partition, fresh);
            reader.close();
            log.info("purge worker {}: the tablespace of partition {} was replaced (copy {}, was {}); reading the new one", workerId,
                    partition, onDisk, reader.copyId());
            return fresh;
        } catch (IOException e) {
            if (!e.toString().equals(unopened.put(partition, e.toString()))) {
                log.error("purge worker {}: cannot open the new copy {} of partition {}'s tablespace; its undo records stay "
                        + "unconsumed until it opens", workerId, onDisk, partition, e);
            }
            return null;
        }
    }

    /**
     * Closes the reader of every partition but {@code partitions}: the worker no longer purges those. By what is open,
     * not by what the worker last assigned itself: an assignment that failed half-way must not leave a reader (and its
     * file, which the node may delete) open.
     */
    void retainOnly(Set<Integer> partitions) {
        unopened.keySet().retainAll(partitions); // one given up that never opened: its reason said again if it comes back
        for (Integer p : List.copyOf(readers.keySet())) {
            if (!partitions.contains(p)) {
                close(p);
            }
        }
    }

    /** Closes the partition's reader, if open: the worker no longer purges it (and says again why one cannot open, if it comes back). */
    void close(int partition) {
        unopened.remove(partition);
        PurgeReader r = readers.remove(partition);
        if (r != null) {
            try {
                r.close();
            } catch (RuntimeException e) { // said, not thrown: the callers close the others' next, which would stay open
                log.warn("purge: closing the reader of partition {} failed: {}", partition, e.toString());
            }
        }
    }

    /** Versions whose page reads are in flight, over all open tablespaces. */
    int inFlight() {
        return readers.values().stream().mapToInt(PurgeReader::inFlight).sum();
    }

    /** The prefetch window: the partitions' batches are scanned one after another, so at most one window is in flight. */
    int window() {
        return readers.values().stream().mapToInt(PurgeReader::window).max().orElse(0);
    }

    @Override
    public void close() {
        try {
            List.copyOf(readers.keySet()).forEach(this::close);
        } finally {
            if (prefetchThreads != null) {
                prefetchThreads.shutdownNow();
            }
        }
    }
}
