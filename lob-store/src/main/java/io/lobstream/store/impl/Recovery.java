package io.lobstream.store.impl;

import io.lobstream.store.TablespaceCheckDueException;
import io.lobstream.store.allocator.Extent;
import io.lobstream.store.index.LobIndex;
import io.lobstream.store.index.VersionEntry;
import io.lobstream.store.tablespace.PageFile;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.function.LongPredicate;

/**
 * What opening a tablespace derives from its index and page file; nothing of it is stored.
 *
 * <p>The index entries of live versions, versions pending purge and uploads in progress name
 * every page they own, so free space is the complement of those pages. Pages written by a
 * command that never published are thereby free again: a crash leaks nothing and frees nothing
 * twice. The tablespace's length is the larger of the file's length and the end of the last page
 * the index names; pages past the end of the file that no entry names are free ones (granted and
 * never written with lob.prealloc off, of a batch the file's growth failed to make, or one a power
 * loss undid). The free-space checkpoint a clean close writes is only
 * compared with what is derived, never trusted.
 *
 * <p>After an unclean shutdown the versions the last flush did not cover are checked too ({@link TornWrites}); without
 * lob.sync no flush covers any, and all are checked if the machine may have restarted since the last open ({@link BootId}).
 *
 * @param usage            live and pending counts, for the store's statistics and backpressure
 * @param highWaterMark    the tablespace's length in pages
 * @param free             the pages no entry names, below the high-water mark
 * @param highestVersion   the highest version number any entry holds (0 if none)
 * @param deferredReclaims pending versions whose reclaim had arrived but waited for a reader: no
 *                         reader survives a restart, so the store frees them on open
 * @param uploads          the uploads in progress, by version: how many bytes of each its entry counts as written (its
 *                         pages are still being written)
 * @param tornWrites       after an unclean shutdown, the versions the last flush did not cover whose pages do not
 *                         verify (a power loss took them); empty after a clean one
 */
record Recovery(TablespaceUsage usage, long highWaterMark, List<Extent> free, long highestVersion, List<VersionEntry> deferredReclaims,
                SortedMap<Long, Long> uploads, List<String> tornWrites) {
    private static final Logger log = LoggerFactory.getLogger(Recovery.class);
    /** Set by a clean close, deleted by the open after it: the free-space checkpoint is current only while it is set. */
    static final String META_CLEAN = "clean.shutdown";

    /**
     * For fsck of a closed copy, which runs no recovery: what this open's check of the pages the end of the last run may
     * have lost would find ({@link TornWrites}: by version, the problem), judged as {@link #scan} judges it. None after a
     * clean close, or after a crash of the process alone without lob.sync (the kernel kept its writes: {@link BootId});
     * of the versions and uploads the last flush did not cover ({@link SyncedFrontier}); else, the machine may have
     * restarted since, of all (then none with {@code readData} false: that would read every data page).
     */
    static Map<Long, String> tornWrites(String name, PageFile file, LobIndex index, boolean readData) throws IOException {
        if (index.metaLong(META_CLEAN, 0) == 1) {
            return Map.of();
        }
        Optional<SyncedFrontier> frontier = SyncedFrontier.read(index, name);
        boolean checkAll = frontier.isEmpty() && !BootId.isCurrent(index.metaBytes(BootId.META_KEY));
        if (!readData && (checkAll || frontier.isPresent() && frontier.get() == SyncedFrontier.NONE)) {
            return Map.of(); // every version's data pages to read: not for fsck told not to read data pages
        }
        LongPredicate uncovered = frontier.<LongPredicate>map(f -> f::uncovered).orElse(version -> checkAll);
        TornWrites torn = new TornWrites(file, index, uncovered);
        try {
            index.forEachCurrent(e -> torn.versionIf(e, uncovered));
            index.forEachPending(e -> {
                if (!e.reclaimRequested()) { // (freed at the next open, unread: as scan)
                    torn.versionIf(e, uncovered);
                }
            });
            index.forEachUpload(u -> {
                if (uncovered.test(u.version())) {
                    torn.upload(u, frontier.map(f -> f.uploadBytesCovered(u.version())).orElse(0L));
                }
            });
        } catch (UncheckedIOException notThePages) {
            throw notThePages.getCause();
        }
        return torn.result().lost();
    }

    /** @param fullCheck whether to check every version's pages here when that is due, or throw {@link TablespaceCheckDueException} */
    static Recovery scan(String name, Path dir, PageFile file, LobIndex index, boolean fullCheck) throws IOException {
        boolean clean = index.metaLong(META_CLEAN, 0) == 1;
        // none: a clean shutdown, a new tablespace, or an unclean shutdown of a run without lob.sync (or of an earlier release)
        Optional<SyncedFrontier> frontier = clean ? Optional.empty() : SyncedFrontier.read(index, name);
        // Without a frontier nothing says which pages were forced. After a crash of the process alone the kernel holds
        // them all; after a restart of the machine any may be lost while the index, which RocksDB syncs on its own
        // (its flushes, and the WAL at each reservation of version numbers), names them and counts their commands as
        // applied: then every version and upload is checked.
        // One that does not decode (SyncedFrontier.NONE) covers nothing: every page is read, so not on a caller's thread
        // that said not to either.
        boolean undecodable = frontier.isPresent() && frontier.get() == SyncedFrontier.NONE;
        boolean checkAll = !clean && (undecodable || frontier.isEmpty() && !BootId.isCurrent(index.metaBytes(BootId.META_KEY)))
                && index.namesPages();
        String why = undecodable ? "the record of what the last flush covered does not decode"
                : "no flush covered them, the last run ended uncleanly, and the machine may have restarted since";
        if (checkAll && !fullCheck) {
            throw new TablespaceCheckDueException(dir, why);
        }
        LongPredicate uncovered = frontier.<LongPredicate>map(f -> f::uncovered).orElse(version -> checkAll);
        if (checkAll) {
            log.info("{}: checking the pages of every version and upload before it opens ({}): {} pages", name, why,
                    file.path().toFile().length() / file.pageSize());
        }
        long start = System.nanoTime();
        TornWrites torn = new TornWrites(file, index, uncovered);
        SortedMap<Long, Long> uploads = new TreeMap<>();
        List<Extent> referenced = new ArrayList<>();
        TablespaceUsage usage = new TablespaceUsage();
        long[] maxVersion = {0};
        List<VersionEntry> deferred = new ArrayList<>();
        try {
            index.forEachCurrent(e -> {
                usage.recoveredCurrent(e);
                maxVersion[0] = Math.max(maxVersion[0], e.version());
                referenced.addAll(e.extents());
                if (uncovered.test(e.version())) {
                    torn.version(e);
                }
            });
            index.forEachPending(e -> {
                usage.pending(e);
                maxVersion[0] = Math.max(maxVersion[0], e.version());
                referenced.addAll(e.extents());
                if (e.reclaimRequested()) {
                    // freed below, its bytes never read again: not checked, as its pages may already hold another's (a
                    // compaction move's old copy is released at once, with no flush between it and the next write)
                    deferred.add(e);
                } else if (uncovered.test(e.version())) {
                    torn.version(e);
                }
            });
            index.forEachUpload(u -> {
                maxVersion[0] = Math.max(maxVersion[0], u.version());
                referenced.addAll(u.pages());
                usage.uploading(Extent.totalPages(u.pages()));
                uploads.put(u.version(), u.bytesDone());
                if (uncovered.test(u.version())) {
                    torn.upload(u, frontier.map(f -> f.uploadBytesCovered(u.version())).orElse(0L));
                }
            });
        } catch (UncheckedIOException notThePages) {
            throw notThePages.getCause(); // the index failing, or the page file closed, under the torn-write check (TornWrites)
        }
        long referencedEnd = 0;
        for (Extent e : referenced) {
            referencedEnd = Math.max(referencedEnd, e.endPage());
        }
        long filePages = (file.path().toFile().length() + file.pageSize() - 1) / file.pageSize();
        long hwm = Math.max(filePages, referencedEnd);
        List<Extent> free;
        try {
            free = Extent.gaps(referenced, hwm);
        } catch (IllegalArgumentException overlap) {
            throw new IOException("index of " + name + " is inconsistent, run fsck: " + overlap.getMessage(), overlap);
        }
        if (clean) {
            List<Extent> checkpoint = Extent.coalesce(index.freeCheckpoint());
            if (!checkpoint.equals(Extent.coalesce(free)) && !checkpoint.isEmpty()) {
                log.warn("{}: free-space checkpoint differs from the space derived from the index; using the derived one", name);
            }
        } else if (hwm > 0) {
            log.info("{}: recovering after an unclean shutdown: {} pages, {} free", name, hwm, Extent.totalPages(free));
        }
        TornWrites.Result checked = torn.result();
        if (frontier.isPresent() || checkAll) {
            log.info("{}: checked the pages of {} versions and {} uploads {}: {} pages read, the open's scan took {} ms, {}", name,
                    checked.versions(), checked.uploads(), checkAll ? "(" + why + ")" : "the last flush did not cover", checked.pagesRead(), (System.nanoTime() - start) / 1_000_000,
                    checked.problems().isEmpty() ? "all on disk" : checked.problems().size() + " not");
        }
        List<String> tornWrites = checked.problems();
        return new Recovery(usage, hwm, free, maxVersion[0], deferred, uploads, tornWrites);
    }
}
