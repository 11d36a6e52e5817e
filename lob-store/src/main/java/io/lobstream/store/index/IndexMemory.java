package io.lobstream.store.index;

import org.rocksdb.LRUCache;
import org.rocksdb.RocksDB;
import org.rocksdb.WriteBufferManager;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The off-heap memory of every RocksDB index in the process, together, as Kafka Streams bounds its stores' memory: one
 * block cache, which holds the SST files' index and filter blocks too (a tenth of it at high priority), and to which the
 * memtables of all indexes are charged (a {@link WriteBufferManager} allowed half of it). A target, not a hard cap: once
 * the memtables together pass it, the index being written flushes its oldest memtable early (writes are not stalled), and
 * the cache may run over rather than fail a read. Before it each tablespace had a 32 MiB cache and up to 64 MiB of
 * memtables of its own, and its SST files' index and filter blocks beside them, so a node's memory outside the heap grew
 * with the partitions it held.
 *
 * <p>Made once per process, by the first open, with that open's size ({@code lob.index.memory.bytes}); never closed: open
 * indexes use it, and the process ends with it.
 */
public final class IndexMemory {
    private static final Logger log = LoggerFactory.getLogger(IndexMemory.class);
    /** 128 MiB: what 4 tablespaces' caches alone took before, for every tablespace of a node together. */
    public static final long DEFAULT_BYTES = 128L << 20;

    static {
        RocksDB.loadLibrary();
    }

    private static IndexMemory shared;
    private static boolean warned;

    private final long bytes;
    final LRUCache cache;
    final WriteBufferManager writeBuffers;

    private IndexMemory(long bytes) {
        this.bytes = bytes;
        this.cache = new LRUCache(bytes, -1, false, 0.1);
        this.writeBuffers = new WriteBufferManager(bytes / 2, cache);
    }

    /** The process's, made with {@code bytes} if it is the first; a later different size is warned of, not applied. */
    public static synchronized IndexMemory shared(long bytes) {
        if (shared == null) {
            shared = new IndexMemory(bytes);
        } else if (shared.bytes != bytes && !warned) {
            warned = true;
            log.warn("lob.index.memory.bytes={} asked for, but the indexes of this process share {} bytes already: the first "
                    + "tablespace opened sets it", bytes, shared.bytes);
        }
        return shared;
    }

    /** Made apart from the process's: for a test of what a budget bounds. */
    static IndexMemory unshared(long bytes) {
        return new IndexMemory(bytes);
    }

    public long bytes() {
        return bytes;
    }

    /** What the cache holds now, the memtables charged to it included. */
    public long usedBytes() {
        return cache.getUsage();
    }
}
