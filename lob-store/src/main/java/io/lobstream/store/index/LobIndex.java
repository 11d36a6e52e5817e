package io.lobstream.store.index;

import io.lobstream.store.LaterFormatException;
import io.lobstream.store.allocator.Extent;
import org.rocksdb.AbstractNativeReference;
import org.rocksdb.BlockBasedTableConfig;
import org.rocksdb.BloomFilter;
import org.rocksdb.ColumnFamilyDescriptor;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.ColumnFamilyOptions;
import org.rocksdb.DBOptions;
import org.rocksdb.FlushOptions;
import org.rocksdb.InfoLogLevel;
import org.rocksdb.Options;
import org.rocksdb.ReadOptions;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;
import org.rocksdb.Slice;
import org.rocksdb.Status;
import org.rocksdb.WriteBatch;
import org.rocksdb.WriteOptions;

import java.io.Closeable;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;
import java.util.function.Predicate;
import java.util.regex.Pattern;

/**
 * The RocksDB index of one tablespace. It holds metadata, and no LOB bytes but the unfinished page of each chunked
 * upload in progress (every page is written once, whole: see {@link UploadEntry}):
 * <ul>
 *   <li>{@code current}: lobId → the visible {@link VersionEntry}</li>
 *   <li>{@code pending}: (lobId, version) → a superseded version waiting for purge</li>
 *   <li>{@code free}: firstPage → pageCount, a checkpoint of free space written at clean close</li>
 *   <li>{@code applied}: input source → offset of the last command applied from it, then the latest command time read
 *   from it (absent where a release before session 55 wrote the offset last: the next command starts it again)</li>
 *   <li>{@code uploads}: uploadId → a chunked upload in progress ({@link UploadEntry})</li>
 *   <li>{@code commands}: commandId → the commands' time at the command applied (the latest command time of its source, its
 *   own included; the clock's for a source without times), for de-duplicating re-sent commands</li>
 *   <li>{@code rejected}: (source, offset) → a command not applied, and why ({@link Rejection})</li>
 *   <li>{@code default}: the index's format version, reserved version numbers, clean-shutdown flag, the last flush's
 *   frontier ({@code SyncedFrontier}), the boot of the machine the last open ran in ({@code BootId}), the id of each
 *   source's log ({@code log.id.}source), the settings its commands were judged by ({@code setting.}key)</li>
 * </ul>
 * Every command is one {@link Batch}: applied whole or not at all.
 */
public final class LobIndex implements Closeable {
    /** Batches written so far (see {@link #writeCount()}). */
    private final AtomicLong writes = new AtomicLong();
    /** A write the disk refused since this index opened (the latest): no sync is tried after one. */
    private volatile IndexWriteRefusedException refused;
    private final AtomicInteger writesInFlight = new AtomicInteger();
    static {
        RocksDB.loadLibrary();
    }

    /**
     * The layout of the column families' keys and values this release reads and writes, kept in the index
     * ({@value #FORMAT_KEY}): an index of a later format is refused at open, with both numbers, not misread. Raise it
     * with any change an older release would misread, and have open migrate the formats below it.
     *
     * <p>2: a finished upload is known by its upload id, not by its chunks' command ids, and command ids carry their
     * command's fingerprint (format 1's releases, rolled back onto this index, would publish a retried upload again,
     * and skip a reused id with other bytes as a duplicate). Nothing to migrate: format 2 reads format 1's entries.
     */
    public static final int FORMAT_VERSION = 2;
    static final String FORMAT_KEY = "format.version";
    private static final byte[] CURRENT = "current".getBytes(StandardCharsets.UTF_8);
    private static final byte[] PENDING = "pending".getBytes(StandardCharsets.UTF_8);
    private static final byte[] FREE = "free".getBytes(StandardCharsets.UTF_8);
    private static final byte[] APPLIED = "applied".getBytes(StandardCharsets.UTF_8);
    private static final byte[] UPLOADS = "uploads".getBytes(StandardCharsets.UTF_8);
    private static final byte[] COMMANDS = "commands".getBytes(StandardCharsets.UTF_8);
    private static final byte[] REJECTED = "rejected".getBytes(StandardCharsets.UTF_8);

    private final RocksDB db;
    /** The options the database was opened with, closed after it, in this order. */
    private final List<AbstractNativeReference> options;
    private final List<ColumnFamilyHandle> handles;
    private final ColumnFamilyHandle meta;
    private final ColumnFamilyHandle current;
    private final ColumnFamilyHandle pending;
    private final ColumnFamilyHandle free;
    private final ColumnFamilyHandle applied;
    /** chunked uploads in progress: uploadId → {@link UploadEntry} */
    private final ColumnFamilyHandle uploads;
    /**
     * ids of commands applied recently: commandId → the commands' time at it (ms; the latest record timestamp of its
     * source, its own included, in which the de-duplication window is measured, so that a writer catching up forgets ids
     * as it would have), for de-duplicating re-sent commands
     */
    private final ColumnFamilyHandle commands;
    /** commands not applied, recently: (source, offset) → time (ms), kind and reason ({@link Rejection}) */
    private final ColumnFamilyHandle rejected;
    private boolean closed;
    private final WriteOptions writeOptions = new WriteOptions();
    private final WriteOptions syncWrite = new WriteOptions().setSync(true);
    /**
     * For the scans that walk the current versions or the de-duplication window (recovery, fsck, compaction's passes, the
     * window's rounds): their blocks are read once and would push out of the block cache, which every tablespace of the
     * process shares, the blocks that lookups by id need. Scans of the pending versions fill it: purge, reads' unpins and
     * re-read commands come back to those blocks. Each iterator copies its options.
     */
    private final ReadOptions scanReads = new ReadOptions().setFillCache(false);
    private final ReadOptions defaultReads = new ReadOptions();
    /** The de-duplication window's forgetting, in rounds. */
    private final CommandWindow window = new CommandWindow(this);

    private LobIndex(RocksDB db, List<AbstractNativeReference> options, List<ColumnFamilyHandle> handles) {
        this.db = db;
        this.options = options;
        this.handles = handles;
        this.meta = handles.get(0);
        this.current = handles.get(1);
        this.pending = handles.get(2);
        this.free = handles.get(3);
        this.applied = handles.get(4);
        this.uploads = handles.get(5);
        this.commands = handles.get(6);
        this.rejected = handles.get(7);
    }

    /** Opens (creating if needed) the index in {@code dir}, its memory shared with the process's other indexes at the default size. */
    public static LobIndex open(Path dir) throws IOException {
        return open(dir, IndexMemory.shared(IndexMemory.DEFAULT_BYTES));
    }

    public static LobIndex open(Path dir, IndexMemory memory) throws IOException {
        Files.createDirectories(dir);
        refuseUnknownColumnFamilies(dir);
        // Index entries are small; keep memtables small so many partitions fit one heap-light process.
        // Bloom filters: a command's de-duplication (commandApplied) looks up an id that is almost always
        // absent. Without them that search walks both memtables and reads a block of every SST file that
        // might hold the id: 5.0 µs a lookup among 300,000 ids, against 1.15 µs with them. The memtable's
        // filter costs 5 % of its size, so only the commands' column family has one. The block cache and the
        // memtables' budget are the process's, shared by every index (IndexMemory); the SST files' index and filter
        // blocks are kept in that cache too (at high priority, L0's pinned), not beside it, where they grew with the data.
        // The budget charges a memtable an arena block at a time from its first entry: 64 KiB blocks, not RocksDB's
        // 512 KiB (an eighth of the write buffer), or the few column families a command touches in each of 64
        // tablespaces passed the budget with KBs of entries, and every write flushed (IndexMemoryTest).
        BloomFilter bloom = new BloomFilter(10);
        ColumnFamilyOptions cfOptions = new ColumnFamilyOptions().setWriteBufferSize(4L << 20).setMaxWriteBufferNumber(2)
                .setArenaBlockSize(64L << 10)
                .setTableFormatConfig(new BlockBasedTableConfig().setFilterPolicy(bloom).setBlockCache(memory.cache)
                        .setCacheIndexAndFilterBlocks(true).setCacheIndexAndFilterBlocksWithHighPriority(true)
                        .setPinL0FilterAndIndexBlocksInCache(true));
        ColumnFamilyOptions commandsOptions = new ColumnFamilyOptions(cfOptions)
                .setMemtablePrefixBloomSizeRatio(0.05).setMemtableWholeKeyFiltering(true);
        DBOptions dbOptions = new DBOptions().setCreateIfMissing(true).setCreateMissingColumnFamilies(true)
                .setMaxBackgroundJobs(2).setKeepLogFileNum(2).setInfoLogLevel(InfoLogLevel.WARN_LEVEL)
                .setWriteBufferManager(memory.writeBuffers);
        List<AbstractNativeReference> options = List.of(dbOptions, cfOptions, commandsOptions, bloom);
        // `rejected` is created in an index from before it
        List<ColumnFamilyDescriptor> descriptors = descriptors(cfOptions, commandsOptions);
        List<ColumnFamilyHandle> handles = new ArrayList<>();
        try {
            RocksDB db = RocksDB.open(dbOptions, dir.toString(), descriptors, handles);
            LobIndex index = new LobIndex(db, options, handles);
            try {
                if (index.checkFormat(dir) < FORMAT_VERSION) { // new, from before the key (format 1), or an earlier one
                    index.writeSync(index.newBatch().putMeta(FORMAT_KEY, FORMAT_VERSION));
                }
            } catch (IOException | RuntimeException e) {
                index.close();
                throw e;
            }
            return index;
        } catch (RocksDBException e) {
            options.forEach(AbstractNativeReference::close);
            String msg = heldByAnother(e)
                    ? "index " + dir + " is in use by another process (is a node running on this data directory?): " + e.getMessage()
                    : "cannot open index " + dir + ": " + e.getMessage();
            throw new IOException(msg, e);
        }
    }

    /**
     * RocksDB's own words for a LOCK file another process (or this one) holds. Not any "lock": the message names the path,
     * and "block checksum mismatch" or a directory under /srv/clock would have sent a damaged index to the wrong diagnosis.
     */
    private static boolean heldByAnother(RocksDBException e) {
        String m = e.getMessage();
        return m != null && (m.contains("While lock file") || m.contains("lock hold by current process"));
    }

    /** The column families, in the order the constructor takes their handles. */
    private static List<ColumnFamilyDescriptor> descriptors(ColumnFamilyOptions cfOptions, ColumnFamilyOptions commandsOptions) {
        return List.of(
                new ColumnFamilyDescriptor(RocksDB.DEFAULT_COLUMN_FAMILY, cfOptions),
                new ColumnFamilyDescriptor(CURRENT, cfOptions),
                new ColumnFamilyDescriptor(PENDING, cfOptions),
                new ColumnFamilyDescriptor(FREE, cfOptions),
                new ColumnFamilyDescriptor(APPLIED, cfOptions),
                new ColumnFamilyDescriptor(UPLOADS, cfOptions),
                new ColumnFamilyDescriptor(COMMANDS, commandsOptions),
                new ColumnFamilyDescriptor(REJECTED, cfOptions));
    }

    /**
     * Opens an index to read it only (fsck of a stopped node): nothing is written, not even the
     * column families a newer version adds (their handles are null; reading them fails).
     */
    public static LobIndex openReadOnly(Path dir) throws IOException {
        ColumnFamilyOptions cfOptions = new ColumnFamilyOptions();
        DBOptions dbOptions = new DBOptions().setInfoLogLevel(InfoLogLevel.WARN_LEVEL);
        try (Options listing = new Options()) {
            List<byte[]> existing = RocksDB.listColumnFamilies(listing, dir.toString());
            List<ColumnFamilyDescriptor> all = descriptors(cfOptions, cfOptions);
            List<ColumnFamilyDescriptor> present = all.stream()
                    .filter(d -> existing.stream().anyMatch(name -> Arrays.equals(name, d.getName()))).toList();
            List<ColumnFamilyHandle> opened = new ArrayList<>();
            RocksDB db = RocksDB.openReadOnly(dbOptions, dir.toString(), present, opened);
            List<ColumnFamilyHandle> handles = new ArrayList<>();
            for (ColumnFamilyDescriptor d : all) {
                int at = present.indexOf(d);
                handles.add(at < 0 ? null : opened.get(at));
            }
            LobIndex index = new LobIndex(db, List.of(dbOptions, cfOptions), handles);
            try {
                index.checkFormat(dir);
            } catch (IOException | RuntimeException e) {
                index.close();
                throw e;
            }
            return index;
        } catch (RocksDBException e) {
            dbOptions.close();
            cfOptions.close();
            throw new IOException("cannot open index " + dir + " to read it: " + e.getMessage(), e);
        }
    }

    /**
     * An index with a column family this release does not know is a later release's (as {@code rejected} was new once):
     * RocksDB would refuse to open it read-write with "Column families not opened", which says nothing of releases. Read
     * only, its format is checked first, and refused naming both numbers as any later format is.
     */
    private static void refuseUnknownColumnFamilies(Path dir) throws IOException {
        if (!Files.exists(dir.resolve("CURRENT"))) {
            return; // a new index
        }
        List<String> unknown = new ArrayList<>();
        try (Options listing = new Options(); ColumnFamilyOptions cf = new ColumnFamilyOptions()) {
            List<ColumnFamilyDescriptor> known = descriptors(cf, cf);
            for (byte[] name : RocksDB.listColumnFamilies(listing, dir.toString())) {
                if (known.stream().noneMatch(d -> Arrays.equals(d.getName(), name))) {
                    unknown.add(new String(name, StandardCharsets.UTF_8));
                }
            }
        } catch (RocksDBException e) {
            return; // the open below says what is wrong with it
        }
        if (!unknown.isEmpty()) {
            try (LobIndex readOnly = openReadOnly(dir)) { // throws LaterFormatException for a later release's
                throw new IOException("index " + dir + " has column families this release does not know (" + String.join(", ", unknown)
                        + ") but no later format: written by another program, or damaged");
            }
        }
    }

    /** The index's format version, -1 if it has none; refuses one this release does not read. */
    private long checkFormat(Path dir) throws IOException {
        long format = metaLong(FORMAT_KEY, -1);
        if (format > FORMAT_VERSION) {
            throw new LaterFormatException("index " + dir, format, FORMAT_VERSION);
        }
        return format;
    }

    // ---- keys ----

    static byte[] lobKey(String lobId) {
        return lobId.getBytes(StandardCharsets.UTF_8);
    }

    /** (lobId, version) sorted by lobId then version: a 2-byte length keeps ids that prefix each other apart. */
    static byte[] pendingKey(String lobId, long version) {
        return lengthPrefixed(lobId, 8).putLong(version).array();
    }

    static byte[] sourceOffsetKey(String source, long offset) {
        return lengthPrefixed(source, 8).putLong(offset).array();
    }

    /** A key's start: {@code s}'s UTF-8 length (2 bytes) and bytes, with room for {@code more} bytes after. */
    private static ByteBuffer lengthPrefixed(String s, int more) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        return ByteBuffer.allocate(2 + b.length + more).putShort((short) b.length).put(b);
    }

    private static byte[] longBytes(long v) {
        return ByteBuffer.allocate(8).putLong(v).array();
    }

    static long bytesLong(byte[] b) {
        return ByteBuffer.wrap(b).getLong();
    }

    // ---- reads ----

    public Optional<VersionEntry> current(String lobId) throws IOException {
        return get(current, lobKey(lobId));
    }

    public Optional<VersionEntry> pending(String lobId, long version) throws IOException {
        return get(pending, pendingKey(lobId, version));
    }

    private Optional<VersionEntry> get(ColumnFamilyHandle cf, byte[] key) throws IOException {
        return read(cf, key).map(v -> version(cf, key, v));
    }

    /** The entry {@code value} under {@code key} in {@code cf} ({@link #current} or {@link #pending}). */
    private VersionEntry version(ColumnFamilyHandle cf, byte[] key, byte[] value) {
        return decoded(cf == current ? "current" : "pending", key, value, VersionEntry::decode);
    }

    /**
     * {@code decode} of an entry, one that fails named by its column family and key: an entry that does not decode (a
     * later release's, damage RocksDB's checksums missed) stops an open, a scan and fsck, and "unknown index entry
     * format 7" alone said neither which entry nor which LOB.
     */
    private static <T> T decoded(String family, byte[] key, byte[] value, java.util.function.Function<byte[], T> decode) {
        try {
            return decode.apply(value);
        } catch (RuntimeException e) {
            throw new UncheckedIOException(new IOException("index entry " + family + "/" + printable(key) + " does not decode: "
                    + (e.getMessage() != null ? e.getMessage() : e.toString()), e));
        }
    }

    /** A key as an operator can read it: its printable ASCII as it is, other bytes as \xNN. */
    static String printable(byte[] key) {
        StringBuilder b = new StringBuilder(key.length);
        for (byte x : key) {
            if (x >= 0x20 && x < 0x7f) {
                b.append((char) x);
            } else {
                b.append(String.format("\\x%02x", x & 0xff));
            }
        }
        return b.toString();
    }

    /** The value under {@code key}, empty if there is none. */
    private Optional<byte[]> read(ColumnFamilyHandle cf, byte[] key) throws IOException {
        try {
            return Optional.ofNullable(db.get(cf, key));
        } catch (RocksDBException e) {
            throw new IOException(e);
        }
    }

    public Optional<UploadEntry> upload(String uploadId) throws IOException {
        byte[] key = uploadId.getBytes(StandardCharsets.UTF_8);
        return read(uploads, key).map(v -> decoded("uploads", key, v, UploadEntry::decode));
    }

    /**
     * Each upload in progress. A whole scan also learns the least touchedAt and appliedAt of the uploads, which
     * {@link #uploadTimesAtLeast} gives: the writer looks for idle uploads before each upload command and at every
     * housekeeping, and at every commit for their progress, and a scan copies each entry's unfinished page.
     */
    public void forEachUpload(Consumer<UploadEntry> action) {
        long putsBefore;
        boolean batchesOpen;
        synchronized (uploadFloor) {
            putsBefore = uploadsPut;
            batchesOpen = uploadBatchesOpen > 0;
        }
        long[] least = {Long.MAX_VALUE, Long.MAX_VALUE};
        // the uploads are few, and looked up by id right after
        forEach(uploads, defaultReads, (k, v) -> {
            UploadEntry u = decoded("uploads", k, v, UploadEntry::decode);
            least[0] = Math.min(least[0], u.touchedAtMillis());
            least[1] = Math.min(least[1], u.appliedAtMillis());
            action.accept(u);
        });
        synchronized (uploadFloor) {
            // an upload put since the scan began, or in a batch still open when it began (written after the scan's snapshot,
            // or not at all), may not be in it: then the bounds only go down
            boolean whole = !batchesOpen && uploadsPut == putsBefore;
            uploadFloor[0] = whole ? least[0] : Math.min(uploadFloor[0], least[0]);
            uploadFloor[1] = whole ? least[1] : Math.min(uploadFloor[1], least[1]);
        }
    }

    /**
     * Lower bounds of every upload's touchedAt and appliedAt, in that order: Long.MIN_VALUE before the first scan
     * ({@link #forEachUpload}), Long.MAX_VALUE when there is none; each upload put since lowers them.
     */
    public long[] uploadTimesAtLeast() {
        synchronized (uploadFloor) {
            return uploadFloor.clone();
        }
    }

    /**
     * A command applied: when (the latest command time of its source at it, its own included; the clock's for a source
     * without times), and its fingerprint (0: none recorded, as before fingerprints).
     */
    public record AppliedCommand(long atMillis, long fingerprint) {
    }

    /** The command with this id, if it was applied and is not yet forgotten. */
    public Optional<AppliedCommand> commandApplied(String commandId) throws IOException {
        return read(commands, commandId.getBytes(StandardCharsets.UTF_8)).map(v -> {
            ByteBuffer b = ByteBuffer.wrap(v);
            return new AppliedCommand(b.getLong(), b.remaining() >= 8 ? b.getLong() : 0);
        });
    }

    /** Why the command at {@code offset} of {@code source} was not applied, if that was recorded and not yet forgotten. */
    public Optional<Rejection> rejection(String source, long offset) throws IOException {
        return read(rejected, sourceOffsetKey(source, offset)).map(Rejection::decode);
    }

    /**
     * Forgets command ids applied before {@code idsBeforeMillis}, and rejections recorded before
     * {@code rejectionsBeforeMillis} (both values begin with their time); returns how many. Reads a round's share of each
     * ({@link #FORGET_SCAN_MAX}), going on from where the previous call stopped.
     */
    public int forgetCommandsBefore(long idsBeforeMillis, long rejectionsBeforeMillis) throws IOException {
        return window.forgetBefore(idsBeforeMillis, rejectionsBeforeMillis);
    }

    /**
     * The entries of each family one {@link #forgetCommandsBefore(long, long)} reads (twice the entries put in it since the
     * last call, if that is more: rounds keep ahead of a busy partition). Ids are keyed by id, not time, so finding
     * the old ones is a scan, and a window of an hour at a thousand commands a second holds millions: read whole at every
     * housekeeping, on the writer's stream thread inside its transaction, a million took 0.5-1 s on a 2-core VM (a round
     * of 100,000: 25-40 ms). In rounds, an id is forgotten up to a round of calls late, which changes no decision: a lookup
     * judges an id by its time too, and a rejection kept longer only keeps the first decision.
     */
    public static final int FORGET_SCAN_MAX = 100_000;

    /** {@link #uploadTimesAtLeast}'s bounds, and the uploads put (both guarded by the array). */
    private final long[] uploadFloor = {Long.MIN_VALUE, Long.MIN_VALUE};
    private long uploadsPut;
    /** Batches with an upload put in them not closed yet. */
    private int uploadBatchesOpen;

    /** Entries the rounds of forgetting read since the index opened. */
    long forgetReads() {
        return window.reads();
    }

    /** As {@link #forgetCommandsBefore(long, long)}, reading at most {@code scanMax} entries of each family. */
    public int forgetCommandsBefore(long idsBeforeMillis, long rejectionsBeforeMillis, int scanMax) throws IOException {
        return window.forget(idsBeforeMillis, rejectionsBeforeMillis, scanMax, scanMax);
    }

    /** {@link CommandWindow}'s family {@code f}: command ids [0], rejections [1]. */
    ColumnFamilyHandle windowFamily(int f) {
        return f == 0 ? commands : rejected;
    }

    /** An iterator over {@code cf} that leaves the block cache to the reads that matter. */
    RocksIterator scan(ColumnFamilyHandle cf) {
        return db.newIterator(cf, scanReads);
    }

    /**
     * Up to {@code max} versions pending purge that {@code filter} accepts, in key order (lobId's
     * length, lobId, version), starting after {@code after} (null: from the first).
     */
    public List<VersionEntry> pendingPage(VersionEntry after, int max, Predicate<VersionEntry> filter) {
        List<VersionEntry> out = new ArrayList<>();
        try (RocksIterator it = db.newIterator(pending)) {
            if (after == null) {
                it.seekToFirst();
            } else {
                byte[] from = pendingKey(after.lobId(), after.version());
                it.seek(from);
                if (it.isValid() && Arrays.equals(it.key(), from)) {
                    it.next();
                }
            }
            for (; it.isValid() && out.size() < max; it.next()) {
                VersionEntry e = version(pending, it.key(), it.value());
                if (filter.test(e)) {
                    out.add(e);
                }
            }
            ended(it);
        }
        return out;
    }

    /** The versions of {@code lobId} pending purge, oldest first. */
    public List<VersionEntry> pendingOf(String lobId) {
        List<VersionEntry> out = new ArrayList<>();
        forEachWithPrefix(pending, lengthPrefixed(lobId, 0).array(), (k, v) -> out.add(version(pending, k, v)));
        return out;
    }

    /**
     * Each entry of {@code cf} whose key starts with {@code prefix}, in key order. The iterator is bounded at the first key
     * past the prefix: unbounded, its seek walks every deleted key up to the next live one, and in {@code pending}, which
     * purge empties as fast as writes fill it, a LOB without history (every read's unpin asks) has thousands of them after
     * its place until compaction drops them.
     */
    private void forEachWithPrefix(ColumnFamilyHandle cf, byte[] prefix, java.util.function.BiConsumer<byte[], byte[]> action) {
        byte[] bound = successor(prefix);
        try (Slice upper = bound == null ? null : new Slice(bound);
             ReadOptions options = upper == null ? new ReadOptions() : new ReadOptions().setIterateUpperBound(upper);
             RocksIterator it = db.newIterator(cf, options)) {
            for (it.seek(prefix); it.isValid() && startsWith(it.key(), prefix); it.next()) {
                action.accept(it.key(), it.value());
            }
            ended(it);
        }
    }

    /** The least key past every key that starts with {@code prefix} (bytewise, unsigned), or null if there is none (all 0xFF). */
    static byte[] successor(byte[] prefix) {
        for (int i = prefix.length - 1; i >= 0; i--) {
            if (prefix[i] != (byte) 0xFF) {
                byte[] next = Arrays.copyOf(prefix, i + 1);
                next[i]++;
                return next;
            }
        }
        return null;
    }

    private static boolean startsWith(byte[] key, byte[] prefix) {
        return key.length >= prefix.length && Arrays.equals(key, 0, prefix.length, prefix, 0, prefix.length);
    }

    /** Whether any version or upload is recorded, that is whether the index names any page. */
    public boolean namesPages() {
        for (ColumnFamilyHandle cf : List.of(current, pending, uploads)) {
            try (RocksIterator it = db.newIterator(cf)) {
                it.seekToFirst();
                if (it.isValid()) {
                    return true;
                }
                ended(it);
            }
        }
        return false;
    }

    /**
     * Up to {@code max} current versions in key order (the lobId's bytes), from the first LOB after {@code after} (null:
     * from the first), each given to {@code action}.
     *
     * @return the last LOB given, or null once the scan has reached the end
     */
    public String forEachCurrentAfter(String after, int max, Consumer<VersionEntry> action) {
        try (RocksIterator it = db.newIterator(current, scanReads)) {
            if (after == null) {
                it.seekToFirst();
            } else {
                byte[] from = lobKey(after);
                it.seek(from);
                if (it.isValid() && Arrays.equals(it.key(), from)) {
                    it.next();
                }
            }
            String last = null;
            for (int read = 0; it.isValid() && read < max; it.next(), read++) {
                VersionEntry e = version(current, it.key(), it.value());
                action.accept(e);
                last = e.lobId();
            }
            ended(it);
            return it.isValid() ? last : null;
        }
    }

    public void forEachCurrent(Consumer<VersionEntry> action) {
        forEach(current, scanReads, (k, v) -> action.accept(version(current, k, v)));
    }

    public void forEachPending(Consumer<VersionEntry> action) {
        forEach(pending, defaultReads, (k, v) -> action.accept(version(pending, k, v)));
    }

    private void forEach(ColumnFamilyHandle cf, ReadOptions reads, java.util.function.BiConsumer<byte[], byte[]> action) {
        try (RocksIterator it = db.newIterator(cf, reads)) {
            for (it.seekToFirst(); it.isValid(); it.next()) {
                action.accept(it.key(), it.value());
            }
            ended(it);
        }
    }

    /**
     * Throws if {@code it} stopped on an error (a corrupt block, a read that failed), not at its end or where its loop
     * stopped: RocksDB says so only here, and its {@code isValid()} is false either way. A scan cut short would leave out
     * entries silently: recovery would take their pages for free, fsck would pass over them.
     */
    static void ended(RocksIterator it) {
        try {
            it.status();
        } catch (RocksDBException e) {
            throw new UncheckedIOException(new IOException("the index could not be read to the end of a scan: " + e.getMessage(), e));
        }
    }

    public long applied(String source) throws IOException {
        return read(applied, source.getBytes(StandardCharsets.UTF_8)).map(LobIndex::bytesLong).orElse(-1L);
    }

    /** The latest command time recorded with {@code source}'s applied offset; {@code absent} if none was. */
    public long latestTime(String source, long absent) throws IOException {
        return read(applied, source.getBytes(StandardCharsets.UTF_8))
                .filter(v -> v.length >= 16).map(v -> ByteBuffer.wrap(v, 8, 8).getLong()).orElse(absent);
    }

    /** Bytes in the memtables of every column family now. */
    long memtableBytes() throws IOException {
        try {
            return db.getAggregatedLongProperty("rocksdb.cur-size-all-mem-tables");
        } catch (RocksDBException e) {
            throw new IOException(e);
        }
    }

    public long metaLong(String key, long absent) throws IOException {
        return metaBytes(key).map(LobIndex::bytesLong).orElse(absent);
    }

    /** The bytes kept under {@code key} in the index's own column family, empty if there are none. */
    public Optional<byte[]> metaBytes(String key) throws IOException {
        return read(meta, key.getBytes(StandardCharsets.UTF_8));
    }

    /** The keys of the index's own column family that start with {@code prefix} (the prefix cut off), with their bytes. */
    public Map<String, byte[]> metaWithPrefix(String prefix) {
        byte[] p = prefix.getBytes(StandardCharsets.UTF_8);
        Map<String, byte[]> out = new TreeMap<>();
        forEachWithPrefix(meta, p, (k, v) -> out.put(new String(k, p.length, k.length - p.length, StandardCharsets.UTF_8), v));
        return out;
    }

    public List<Extent> freeCheckpoint() {
        List<Extent> out = new ArrayList<>();
        try (RocksIterator it = db.newIterator(free)) {
            for (it.seekToFirst(); it.isValid(); it.next()) {
                out.add(new Extent(bytesLong(it.key()), ByteBuffer.wrap(it.value()).getInt()));
            }
            ended(it);
        }
        return out;
    }

    // ---- writes ----

    public Batch newBatch() {
        return new Batch();
    }

    /** Batches written so far: a store whose count has not moved since its last sync has nothing to sync. */
    public long writeCount() {
        return writes.get();
    }

    public void write(Batch batch) throws IOException {
        try (WriteBatch wb = batch.wb) {
            write(wb, writeOptions);
            // after the write: a flush that reads the new count syncs a WAL that already holds this batch
            writes.incrementAndGet();
            window.counted(batch.familyPuts);
        }
    }

    /**
     * Writes {@code wb} with {@code options}. A write refused for want of space is remembered, and no sync is tried after
     * it ({@link #syncWal}); an fsync that failed is a plain IOException, which a guarded caller takes for a failed sync,
     * and any other failure is what {@link #failedUnlessRefused} makes of it.
     */
    private void write(WriteBatch wb, WriteOptions options) throws IOException {
        RocksDBException failure;
        writesInFlight.incrementAndGet();
        try {
            db.write(options, wb);
            return;
        } catch (RocksDBException e) {
            if (noSpace(e)) {
                IndexWriteRefusedException r = new IndexWriteRefusedException("a write to the index was refused: " + e.getMessage(), e);
                refused = r;
                throw r;
            }
            failure = e;
        } finally {
            writesInFlight.decrementAndGet(); // after refused is set: a sync that failed meanwhile looks at it
        }
        throw failedUnlessRefused(failure);
    }

    /**
     * Whether RocksDB refused the write for want of space in a write, not in a sync: an fsync that reports ENOSPC (space
     * allocated late, a thin volume) may have dropped the pages it could not write, and RocksDB answers every later write
     * with that error ("While fsync", "While fdatasync", "While sync_file_range"), which must fence as a failed sync.
     */
    static boolean noSpace(RocksDBException e) {
        Status status = e.getStatus();
        return status != null && status.getSubCode() == Status.SubCode.NoSpace && !failedSync(e);
    }

    /** RocksDB's context of an I/O error of an fsync (not a file's path that happens to hold "sync"). */
    private static final Pattern SYNC_CONTEXT = Pattern.compile("(?i)while (fsync|fdatasync|sync_file_range|fcntl)");

    /** Whether {@code e} is an fsync of RocksDB's that failed, now or earlier (it answers later writes with that error). */
    static boolean failedSync(RocksDBException e) {
        return SYNC_CONTEXT.matcher(String.valueOf(e.getMessage())).find()
                || (e.getStatus() != null && SYNC_CONTEXT.matcher(String.valueOf(e.getStatus().getState())).find());
    }

    /**
     * What a write or sync that failed with {@code e} throws. A write refused while it waited leaves RocksDB's WAL "with a
     * previous error", which it answers without an fsync: unless {@code e} is an fsync's own failure (fenced, whatever
     * else was refused meanwhile), once the writes in flight have come back, a refusal among them is what failed it.
     */
    private IOException failedUnlessRefused(RocksDBException e) {
        if (!failedSync(e)) {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(1);
            while (writesInFlight.get() > 0 && refused == null && System.nanoTime() < deadline) {
                LockSupport.parkNanos(50_000);
            }
            IndexWriteRefusedException meanwhile = refused;
            if (meanwhile != null) {
                return new IndexWriteRefusedException("the index is not synced: a write to it was refused meanwhile", meanwhile);
            }
        }
        return new IOException(e);
    }

    /** Not tried once a write was refused since the index opened (RocksDB would answer without an fsync, or stay stopped). */
    private void refuseIfRefused() throws IndexWriteRefusedException {
        IndexWriteRefusedException before = refused;
        if (before != null) {
            throw new IndexWriteRefusedException("the index is not synced: a write to it was refused before", before);
        }
    }

    /** Writes and syncs the WAL before returning. */
    public void writeSync(Batch batch) throws IOException {
        syncWalWith(batch);
        writes.incrementAndGet();
    }

    /**
     * Writes {@code batch} and syncs the WAL, making every write so far durable with it, as {@link #syncWal} does: a
     * sync's record of itself, not counted among the writes (a store that wrote nothing else has nothing to sync).
     * One synced write: a refusal of the write itself is told from a failed fsync by RocksDB's context ({@link #noSpace}).
     */
    public void syncWalWith(Batch batch) throws IOException {
        try (WriteBatch wb = batch.wb) {
            refuseIfRefused();
            write(wb, syncWrite);
            window.counted(batch.familyPuts);
        }
    }

    /** Makes every write so far durable; {@link IndexWriteRefusedException}, not a failure, once a write was refused. */
    public void syncWal() throws IOException {
        refuseIfRefused();
        try {
            db.flushWal(true);
        } catch (RocksDBException e) {
            throw failedUnlessRefused(e);
        }
    }

    /** Writes the free-space checkpoint and the clean flag together, synced. */
    public void checkpointFree(List<Extent> freeExtents, String cleanKey) throws IOException {
        try (Batch b = newBatch()) {
            b.wb.deleteRange(free, longBytes(0), longBytes(Long.MAX_VALUE));
            for (Extent e : freeExtents) {
                b.wb.put(free, longBytes(e.firstPage()), ByteBuffer.allocate(4).putInt(e.pageCount()).array());
            }
            b.wb.put(meta, cleanKey.getBytes(StandardCharsets.UTF_8), longBytes(1));
            writeSync(b);
        } catch (RocksDBException e) {
            throw new IOException(e);
        }
    }

    /**
     * One command's changes, written atomically by {@link #write}, which frees the batch. A batch given up before its
     * write is closed (try-with-resources): it holds native memory. Closing a batch twice does nothing.
     */
    public final class Batch implements AutoCloseable {
        private final WriteBatch wb = new WriteBatch();
        /** Whether an upload was put in this batch: until it is closed, a scan may miss the upload (written or not yet). */
        private boolean holdsUpload;
        /** Command ids [0] and rejections [1] put in this batch, counted by {@link CommandWindow} once it is written. */
        private final int[] familyPuts = new int[2];

        public Batch putCurrent(VersionEntry e) throws IOException {
            return put(current, lobKey(e.lobId()), e.encode());
        }

        public Batch deleteCurrent(String lobId) throws IOException {
            return delete(current, lobKey(lobId));
        }

        public Batch putPending(VersionEntry e) throws IOException {
            return put(pending, pendingKey(e.lobId(), e.version()), e.encode());
        }

        public Batch deletePending(String lobId, long version) throws IOException {
            return delete(pending, pendingKey(lobId, version));
        }

        /** The offset first, as {@link #applied} reads it (and releases before session 55); then the latest command time. */
        public Batch putApplied(String source, long offset, long latestTime) throws IOException {
            return put(applied, source.getBytes(StandardCharsets.UTF_8), ByteBuffer.allocate(16).putLong(offset).putLong(latestTime).array());
        }

        public Batch putUpload(UploadEntry u) throws IOException {
            synchronized (uploadFloor) { // when put, not written: a batch dropped only keeps the bounds lower
                uploadFloor[0] = Math.min(uploadFloor[0], u.touchedAtMillis());
                uploadFloor[1] = Math.min(uploadFloor[1], u.appliedAtMillis());
                uploadsPut++;
                if (!holdsUpload) {
                    holdsUpload = true;
                    uploadBatchesOpen++;
                }
            }
            return put(uploads, u.uploadId().getBytes(StandardCharsets.UTF_8), u.encode());
        }

        public Batch deleteUpload(String uploadId) throws IOException {
            return delete(uploads, uploadId.getBytes(StandardCharsets.UTF_8));
        }

        /** The time first, as {@link #forgetCommandsBefore} reads it; then the fingerprint, unless there is none. */
        public Batch putCommand(String commandId, long commandsTimeMillis, long fingerprint) throws IOException {
            byte[] v = fingerprint == 0 ? longBytes(commandsTimeMillis) : ByteBuffer.allocate(16).putLong(commandsTimeMillis).putLong(fingerprint).array();
            familyPuts[0]++;
            return put(commands, commandId.getBytes(StandardCharsets.UTF_8), v);
        }

        /** Records why the command at {@code offset} of {@code source} was not applied (forgotten with the command ids). */
        public Batch putRejected(String source, long offset, Rejection why, long atMillis) throws IOException {
            familyPuts[1]++;
            return put(rejected, sourceOffsetKey(source, offset), why.encode(atMillis));
        }

        public Batch putMeta(String key, long value) throws IOException {
            return put(meta, key.getBytes(StandardCharsets.UTF_8), longBytes(value));
        }

        public Batch putMeta(String key, byte[] value) throws IOException {
            return put(meta, key.getBytes(StandardCharsets.UTF_8), value);
        }

        public Batch deleteMeta(String key) throws IOException {
            return delete(meta, key.getBytes(StandardCharsets.UTF_8));
        }

        private Batch put(ColumnFamilyHandle cf, byte[] k, byte[] v) throws IOException {
            try {
                wb.put(cf, k, v);
                return this;
            } catch (RocksDBException e) {
                throw new IOException(e);
            }
        }

        Batch delete(ColumnFamilyHandle cf, byte[] k) throws IOException {
            try {
                wb.delete(cf, k);
                return this;
            } catch (RocksDBException e) {
                throw new IOException(e);
            }
        }

        /** Drops the batch if it is not written yet; a written one is freed already. */
        @Override
        public void close() {
            wb.close();
            if (holdsUpload) {
                holdsUpload = false;
                synchronized (uploadFloor) {
                    uploadBatchesOpen--;
                }
            }
        }
    }

    @Override
    public void close() {
        if (closed) {
            return; // RocksJava keeps its handles after a close: a second would free them again
        }
        closed = true;
        try (FlushOptions fo = new FlushOptions().setWaitForFlush(true)) {
            db.flush(fo, handles.stream().filter(Objects::nonNull).toList());
        } catch (RocksDBException ignored) {
            // the WAL still holds everything
        }
        writeOptions.close();
        syncWrite.close();
        scanReads.close();
        defaultReads.close();
        for (ColumnFamilyHandle h : handles) {
            if (h != null) { // a column family a read-only open did not find
                h.close();
            }
        }
        db.close();
        options.forEach(AbstractNativeReference::close);
    }
}
