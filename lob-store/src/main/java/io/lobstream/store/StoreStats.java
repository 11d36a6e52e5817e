package io.lobstream.store;

/**
 * Space and history of one tablespace at a moment.
 *
 * @param pagesUploading pages of chunked uploads begun and not yet published or expired (allocated whole with the first chunk)
 * @param historyLength  versions superseded and not yet reclaimed (undo records produced − reclaims applied)
 * @param tablespaceBytes every page of the page file × its page size; a sum of tablespaces adds each one's own, as
 *                       partitions created under another {@code lob.page.size} keep the size they were made with
 */
public record StoreStats(long lobs, long bytesLive, long pagesLive, long pagesHistory, long pagesFree, long pagesUploading,
                         long historyLength, long tablespaceBytes) {
    /** One tablespace's figures, its bytes counted from its pages. */
    public static StoreStats of(long lobs, long bytesLive, long pagesLive, long pagesHistory, long pagesFree, long pagesUploading,
                                long historyLength, int pageSize) {
        return new StoreStats(lobs, bytesLive, pagesLive, pagesHistory, pagesFree, pagesUploading, historyLength,
                (pagesLive + pagesHistory + pagesFree + pagesUploading) * pageSize);
    }

    /** Every page of the page file: live, history, free and uploading. */
    public long pagesTotal() {
        return pagesLive + pagesHistory + pagesFree + pagesUploading;
    }

    public StoreStats plus(StoreStats o) {
        return new StoreStats(lobs + o.lobs, bytesLive + o.bytesLive, pagesLive + o.pagesLive, pagesHistory + o.pagesHistory,
                pagesFree + o.pagesFree, pagesUploading + o.pagesUploading, historyLength + o.historyLength,
                tablespaceBytes + o.tablespaceBytes);
    }

    public static StoreStats empty() {
        return new StoreStats(0, 0, 0, 0, 0, 0, 0, 0);
    }
}
