package io.lobstream.store.impl;

import io.lobstream.store.StoreMetrics;
import io.lobstream.store.StoreStats;
import io.lobstream.store.index.VersionEntry;

import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * What a tablespace holds, kept up to date by every publish, delete and free: LOBs, live bytes
 * and pages, history (versions superseded and not yet reclaimed, and their pages), and the pages
 * of chunked uploads in progress. Recovery
 * sets it from the index; it is never stored. Its figures feed the gauges, {@link StoreStats} and
 * backpressure ({@link #historyExcess}).
 */
final class TablespaceUsage {
    private final AtomicLong lobs = new AtomicLong();
    private final AtomicLong bytesLive = new AtomicLong();
    private final AtomicLong pagesLive = new AtomicLong();
    private final AtomicLong pagesHistory = new AtomicLong();
    private final AtomicLong historyLength = new AtomicLong();
    private final AtomicLong pagesUploading = new AtomicLong();

    /** A current version found at open. */
    void recoveredCurrent(VersionEntry e) {
        lobs.incrementAndGet();
        bytesLive.addAndGet(e.byteLength());
        pagesLive.addAndGet(e.pageCount());
    }

    /** {@code written} became current, replacing {@code old} (which {@link #pending} then counts). */
    void published(VersionEntry written, Optional<VersionEntry> old) {
        lobs.addAndGet(old.isPresent() ? 0 : 1);
        bytesLive.addAndGet(written.byteLength() - old.map(VersionEntry::byteLength).orElse(0L));
        pagesLive.addAndGet(written.pageCount() - old.map(VersionEntry::pageCount).orElse(0L));
    }

    /** {@code old} was deleted (and {@link #pending} counts it). */
    void deleted(VersionEntry old) {
        lobs.decrementAndGet();
        bytesLive.addAndGet(-old.byteLength());
        pagesLive.addAndGet(-old.pageCount());
    }

    /** A version became pending: its pages are history; it is history (awaits purge) unless compaction moved it. */
    void pending(VersionEntry e) {
        if (e.cause() != VersionEntry.Cause.RELOCATE) {
            historyLength.incrementAndGet();
        }
        pagesHistory.addAndGet(e.pageCount());
    }

    /**
     * {@code pages} more (or, negative, fewer) pages belong to uploads in progress: an upload's entry written, naming the
     * pages its first chunk allocated; or dropped, its pages then live (published) or free (expired, checksum failed).
     */
    void uploading(long pages) {
        pagesUploading.addAndGet(pages);
    }

    /** A pending version was freed. */
    void freed(VersionEntry e) {
        if (e.cause() != VersionEntry.Cause.RELOCATE) {
            historyLength.decrementAndGet();
        }
        pagesHistory.addAndGet(-e.pageCount());
    }

    /**
     * How far history is past its limits, as a share of the limit: the larger of {@code
     * historyMax} versions and {@code historyMaxRatio} of the live pages (0 if within both; a
     * setting of 0 is no limit). The ratio's limit is at least one page: with nothing live (every
     * LOB deleted) it would be 0, read as no limit, and history would grow without bound.
     */
    double historyExcess(long historyMax, double historyMaxRatio) {
        double pagesLimit = historyMaxRatio > 0 ? Math.max(1, historyMaxRatio * pagesLive.get()) : 0;
        return Math.max(excess(historyLength.get(), historyMax), excess(pagesHistory.get(), pagesLimit));
    }

    private static double excess(double value, double limit) {
        return limit <= 0 || value <= limit ? 0 : (value - limit) / limit;
    }

    void registerGauges(StoreMetrics metrics, LongSupplier pagesFree) {
        metrics.gauge("lob_tablespace_pages", "Tablespace pages by state", "live", pagesLive::get);
        metrics.gauge("lob_tablespace_pages", "Tablespace pages by state", "history", pagesHistory::get);
        metrics.gauge("lob_tablespace_pages", "Tablespace pages by state", "free", pagesFree::getAsLong);
        metrics.gauge("lob_tablespace_pages", "Tablespace pages by state", "uploading", pagesUploading::get);
        metrics.gauge("lob_history_length", "Versions superseded and not yet reclaimed", null, historyLength::get);
        metrics.gauge("lob_live_bytes", "Bytes of current LOB versions", null, bytesLive::get);
        metrics.gauge("lob_lobs", "LOBs with a current version", null, lobs::get);
    }

    /** Gauges of the tablespace's file size and how far history is past its limit (0 within it: no backpressure). */
    void registerLimitGauges(StoreMetrics metrics, LongSupplier pagesFree, int pageSize, long historyMax, double historyMaxRatio) {
        metrics.gauge("lob_tablespace_bytes", "Bytes of the page file: live, history, free and uploading pages", null,
                () -> stats(pagesFree.getAsLong(), pageSize).tablespaceBytes());
        metrics.gauge("lob_history_excess_ratio", "How far history is past lob.history.max (or .ratio), as a share of it; above 0 "
                + "writes are slowed (lob_backpressure_delay_seconds), reaching lob.history.max.delay.ms at 1", null,
                () -> historyExcess(historyMax, historyMaxRatio));
    }

    StoreStats stats(long pagesFree, int pageSize) {
        return StoreStats.of(lobs.get(), bytesLive.get(), pagesLive.get(), pagesHistory.get(), pagesFree, pagesUploading.get(),
                historyLength.get(), pageSize);
    }
}
