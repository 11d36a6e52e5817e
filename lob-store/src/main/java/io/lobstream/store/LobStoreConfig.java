package io.lobstream.store;

import io.lobstream.store.config.ConfigException;
import io.lobstream.store.config.ConfigKey;
import io.lobstream.store.index.IndexMemory;
import io.lobstream.store.layout.VersionLayout;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The engine's configuration: every key, its default and its meaning, in one place.
 * The six switches of the TaurusDB LOB write optimisations are all on by default; with
 * all of them off the engine is the coarse-latched baseline the benchmarks compare against.
 */
public final class LobStoreConfig {
    /** The page sizes a tablespace may have: powers of two between these, in bytes. */
    public static final int MIN_PAGE_SIZE = 4 * 1024;
    public static final int MAX_PAGE_SIZE = 64 * 1024;

    public static final ConfigKey<Integer> PAGE_SIZE = ConfigKey.integer("lob.page.size", 16 * 1024, MIN_PAGE_SIZE, MAX_PAGE_SIZE,
            "Tablespace page size in bytes (4 KiB to 64 KiB, a power of two). Fixed when a tablespace is created. It bounds "
                    + "the longest value: about 440 MiB with 4 KiB pages, 28 GiB with 16 KiB (a node warns when lob.value.max.bytes "
                    + "is above).");
    public static final ConfigKey<Boolean> PREALLOC = ConfigKey.bool("lob.prealloc", true,
            "A writer is granted a batch of contiguous pages in one allocator latch acquisition (or shorter holes, which are "
                    + "filled before the file grows) and the file grows a batch at a time. Off: one page per latch acquisition.");
    public static final ConfigKey<Integer> PREALLOC_BATCH = ConfigKey.integer("lob.prealloc.data.batch.size", 8, 1, 32,
            "Pages per preallocation batch (1-32).");
    public static final ConfigKey<Boolean> LATCH_DOWNGRADE = ConfigKey.bool("lob.latch.downgrade", true,
            "Data pages are written with no exclusive latch held; the exclusive section covers only the index swap. "
                    + "Off: the tablespace latch is held exclusively across allocation, page writes and the index update.");
    public static final ConfigKey<Boolean> OPTIMISTIC_UPDATE = ConfigKey.bool("lob.optimistic.update", true,
            "An update publishes its new version under the LOB's latch with the tablespace latch shared, checking that the "
                    + "version it replaces is the one it read (compare-and-set: a conflict is counted and the update refused, its "
                    + "pages given back; the LOB's write latch orders writes to one LOB, so none is expected). Off: every publish and reclaim, and a reader's unpin that frees a reclaim deferred "
                    + "for it, takes the tablespace latch exclusively. With lob.latch.downgrade off a write's publish is inside "
                    + "that switch's exclusive section, so this changes only deletes, reclaims and unpins.");
    public static final ConfigKey<Boolean> PURGE_PREFETCH = ConfigKey.bool("lob.purge.prefetch", true,
            "Purge reads ahead, asynchronously, the pages of the next undo records. Off: one synchronous read at a time.");
    public static final ConfigKey<Integer> PURGE_PREFETCH_WINDOW = ConfigKey.integer("lob.purge.prefetch.window", 16, 1, 1024,
            "Undo records whose page reads purge keeps in flight when prefetch is on.");
    public static final ConfigKey<Boolean> PURGE_SKIP_LOAD = ConfigKey.bool("lob.purge.skip.load", true,
            "Purge never reads DATA pages; it frees them by the page numbers in root and index pages. "
                    + "Off: every data page is read and its header checked before it is freed.");
    /** The on/off switches of the optimisations; the sixth, the batch size, is a number. */
    public static final List<ConfigKey<Boolean>> SWITCHES = List.of(PREALLOC, LATCH_DOWNGRADE, OPTIMISTIC_UPDATE, PURGE_PREFETCH,
            PURGE_SKIP_LOAD);
    public static final ConfigKey<Boolean> SYNC = ConfigKey.bool("lob.sync", true,
            "flush() forces the page file and syncs the index WAL (called at every Kafka Streams commit), recording which "
                    + "versions the force covered: an open after a crash checks the pages of the others, and refuses the "
                    + "tablespace if a power loss took some (a node rebuilds it). "
                    + "Off: nothing is forced; a crash of the process loses nothing the OS took, and the first open after a restart "
                    + "of the machine (Linux tells; elsewhere every open after a crash) checks the pages of every version, and "
                    + "refuses the tablespace if a power loss took some (a node rebuilds it from Kafka, the redo log).");
    public static final ConfigKey<Boolean> SYNC_EACH_WRITE = ConfigKey.bool("lob.sync.each.write", false,
            "Each write returns only when durable: its pages are forced before its index entry is written, and the index WAL "
                    + "is synced after. Concurrent writers share these syncs (group commit). Off (the node's setting): writes are "
                    + "made durable by flush() at each Kafka Streams commit, and Kafka is the redo log. Needs lob.sync (refused without it).");
    public static final ConfigKey<Integer> GROUP_COMMIT_INTERVAL_MS = ConfigKey.integer("lob.group.commit.interval.ms", 0, 0, 1000,
            "With lob.sync.each.write: how long a group commit leader waits for more writers to join its sync (a "
                    + "compaction move never waits for it; with lob.latch.downgrade off, nor does a write's page force, which no "
                    + "other writer can join under the exclusive latch). 0 = sync at once; writers arriving meanwhile share the "
                    + "next sync.");

    public static final ConfigKey<Integer> SHRINK_MIN_PAGES = ConfigKey.integer("lob.shrink.min.pages", 64, 0, Integer.MAX_VALUE,
            "At flush() (every Kafka Streams commit) and close: when at least this many pages at the end of the page file are "
                    + "free, the file is cut back to its last used page plus one preallocation batch (lob.prealloc.data.batch.size) "
                    + "and the rest goes back to the file system, so a burst does not leave the file at its peak size. The default "
                    + "(1 MiB of 16 KiB pages) keeps the file from being cut and regrown at every commit. 0 = off: the file never shrinks (and compaction, which only serves a shrink, is off too).");

    public static final ConfigKey<Double> COMPACT_MIN_FREE_RATIO = ConfigKey.decimal("lob.compact.min.free.ratio", 0.1, 0, 100,
            "Compaction: when the free pages between used ones (holes, which a shrink cannot give back) pass this share of the "
                    + "live pages (a fraction: 0.1 = 10 %), compact() moves the current versions that reach highest in the page file into the lowest holes, "
                    + "so the free space gathers at the end, where the next flush() cuts it (lob.shrink.min.pages). The holes must "
                    + "also reach lob.shrink.min.pages, and no version may have been written since the last run (under load the "
                    + "allocator refills the lowest holes by itself). The node calls compact() every lob.compact.interval.ms (below 10 s: every 10 s on a partition idle for 5 runs), skipping a turn while its thread's tasks have "
                    + "spent their 200 ms a second of it (lob.compact.max.pages).");
    public static final ConfigKey<Integer> COMPACT_MAX_PAGES = ConfigKey.integer("lob.compact.max.pages", 512, 0, 65_536,
            "Compaction: pages moved per compact() call, about (the default is 8 MiB of 16 KiB pages): whole versions, so a call may go past it by a version's pages; a version of more pages is never moved "
                    + "(one move would hold the stream thread for as long as it takes to copy it), and the file does not shrink below it "
                    + "until it is rewritten or deleted. "
                    + "Up to 65536. A call's moves run in one punctuation, holding the writer's stream thread, and stop after 200 ms "
                    + "(each move syncs the page file and the index): the rest at the next call. The writer's tasks on one "
                    + "thread share 200 ms a second of calls, scans included. 0 = compaction off.");

    public static final ConfigKey<Integer> HISTORY_MAX = ConfigKey.integer("lob.history.max", 1_000, 0, Integer.MAX_VALUE,
            "Backpressure, like innodb_max_purge_lag but on by default: when more versions than this wait for purge, each "
                    + "write is delayed (up to lob.history.max.delay.ms, growing with the excess) so that purge catches up and "
                    + "space stays bounded while purge runs (with no purge at all, writes go on at the delayed rate and history "
                    + "grows). 0 = off.");
    public static final ConfigKey<Double> HISTORY_MAX_RATIO = ConfigKey.decimal("lob.history.max.ratio", 0, 0, 100,
            "Backpressure by space: when the pages of versions waiting for purge pass this share of the live pages (a fraction: 1 = as "
                    + "many as live), writes are delayed as for lob.history.max, so the tablespace stays within about (1 + this) times the live data. "
                    + "0 = off (the default: in the pipeline the delayed thread is also the one that applies reclaims, so a tight "
                    + "limit starves purge; use it where purge runs elsewhere, e.g. an embedded engine with its own purger).");
    public static final ConfigKey<Integer> HISTORY_MAX_DELAY_MS = ConfigKey.integer("lob.history.max.delay.ms", 50, 1, 10_000,
            "The longest delay backpressure adds to one write (reached at twice lob.history.max). In a node the delay is "
                    + "spent inside the writer's open transaction, for each command a stream thread processes between two commit "
                    + "checks (up to 16 per task): the node warns at start when that could pass half the transaction timeout.");

    public static final ConfigKey<Integer> READ_PIN_MAX_MS = ConfigKey.integer("lob.read.pin.max.ms", 300_000, 0, Integer.MAX_VALUE,
            "How long a reader's pin holds back purge of the versions it may read (a partial update shares pages with later "
                    + "versions). Past it, purge goes on (an InnoDB read view would hold purge for as long as it lives, which is how "
                    + "history grows without bound): a slow or stuck reader cannot grow the history of a LOB its writers update; if "
                    + "pages it still reads are reused it fails with a page error, never with other bytes. 0 = pins never lapse.");

    public static final ConfigKey<Long> INDEX_MEMORY_BYTES = ConfigKey.longValue("lob.index.memory.bytes", IndexMemory.DEFAULT_BYTES,
            16L << 20, 1L << 40,
            "Memory outside the heap for the RocksDB indexes of all tablespaces in the process together, however many "
                    + "partitions it holds: one block cache of this size, which holds the index and filter blocks too, and to "
                    + "which the memtables are charged (past half of it, the index being written flushes its oldest memtable "
                    + "early). A target, not a hard cap: writes are not stalled, and the cache may run over rather than fail a "
                    + "read. The first tablespace opened sets it for the process. Each tablespace written holds about 0.5 MiB of "
                    + "memtables from its first writes: give 1.5 MiB a partition a node may hold (every one, after a failover), "
                    + "or writes flush small table files one after another (128 partitions with the default); a node warns "
                    + "at start.");

    public static final List<ConfigKey<?>> KEYS = List.of(PAGE_SIZE, PREALLOC, PREALLOC_BATCH, LATCH_DOWNGRADE,
            OPTIMISTIC_UPDATE, PURGE_PREFETCH, PURGE_PREFETCH_WINDOW, PURGE_SKIP_LOAD, SYNC, SYNC_EACH_WRITE,
            GROUP_COMMIT_INTERVAL_MS, SHRINK_MIN_PAGES, COMPACT_MIN_FREE_RATIO, COMPACT_MAX_PAGES, HISTORY_MAX, HISTORY_MAX_RATIO, HISTORY_MAX_DELAY_MS,
            READ_PIN_MAX_MS, INDEX_MEMORY_BYTES);

    /** Every key's value, validated: what {@link #get} reads, and what {@link #with} copies. */
    private final Map<String, Object> values;

    public LobStoreConfig(Map<String, ?> props) {
        Map<String, Object> v = new HashMap<>();
        for (ConfigKey<?> key : KEYS) {
            v.put(key.name(), key.from(props));
        }
        this.values = Map.copyOf(v);
        int pageSize = get(PAGE_SIZE);
        if (!isPageSize(pageSize)) { // (its range checked by the key)
            throw new ConfigException(PAGE_SIZE.name() + "=" + pageSize + ": must be a power of two");
        }
        if (get(SYNC_EACH_WRITE) && !get(SYNC)) { // asked for durable writes, and for nothing ever forced
            throw new ConfigException(SYNC_EACH_WRITE.name() + "=true needs " + SYNC.name() + "=true");
        }
    }

    @SuppressWarnings("unchecked")
    private <T> T get(ConfigKey<T> key) {
        return (T) values.get(key.name());
    }

    /** Whether {@code bytes} is a page size a tablespace may have: a new one's (lob.page.size), or a descriptor's. */
    public static boolean isPageSize(int bytes) {
        return bytes >= MIN_PAGE_SIZE && bytes <= MAX_PAGE_SIZE && Integer.bitCount(bytes) == 1;
    }

    public static LobStoreConfig defaults() {
        return new LobStoreConfig(Map.of());
    }

    /**
     * The config with every on/off switch of the optimisations set to {@code on} (the sixth, the
     * batch size, is left as it is).
     */
    public LobStoreConfig withSwitches(boolean on) {
        Map<String, Object> v = new HashMap<>(values);
        for (ConfigKey<?> key : SWITCHES) {
            v.put(key.name(), on);
        }
        return new LobStoreConfig(v);
    }

    public LobStoreConfig with(String key, Object value) {
        Map<String, Object> v = new HashMap<>(values);
        v.put(key, value);
        return new LobStoreConfig(v);
    }

    public int pageSize() { return get(PAGE_SIZE); }

    /**
     * The longest value a tablespace of this page size holds (about 440 MiB with 4 KiB pages, 28 GiB
     * with 16 KiB); a longer one is refused with {@link ValueTooLargeException} before any page is
     * allocated.
     */
    public long layoutMaxBytes() { return VersionLayout.layoutMaxBytes(pageSize()); }
    public boolean prealloc() { return get(PREALLOC); }
    public int preallocBatch() { return get(PREALLOC_BATCH); }
    public boolean latchDowngrade() { return get(LATCH_DOWNGRADE); }
    public boolean optimisticUpdate() { return get(OPTIMISTIC_UPDATE); }
    public boolean purgePrefetch() { return get(PURGE_PREFETCH); }
    public int purgePrefetchWindow() { return get(PURGE_PREFETCH_WINDOW); }
    public boolean purgeSkipLoad() { return get(PURGE_SKIP_LOAD); }
    public boolean sync() { return get(SYNC); }
    public long indexMemoryBytes() { return get(INDEX_MEMORY_BYTES); }
    public boolean syncEachWrite() { return get(SYNC_EACH_WRITE); }
    public int groupCommitIntervalMs() { return get(GROUP_COMMIT_INTERVAL_MS); }
    public int shrinkMinPages() { return get(SHRINK_MIN_PAGES); }
    public double compactMinFreeRatio() { return get(COMPACT_MIN_FREE_RATIO); }
    public int compactMaxPages() { return get(COMPACT_MAX_PAGES); }
    public int historyMax() { return get(HISTORY_MAX); }
    public int historyMaxDelayMs() { return get(HISTORY_MAX_DELAY_MS); }
    public double historyMaxRatio() { return get(HISTORY_MAX_RATIO); }
    public int readPinMaxMs() { return get(READ_PIN_MAX_MS); }

    public Map<String, Object> values() { return values; }

    @Override
    public String toString() { return "LobStoreConfig" + values; }
}
