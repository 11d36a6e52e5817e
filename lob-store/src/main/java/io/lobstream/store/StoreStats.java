package io.lobstream.store;

/**
 * Space and history of one tablespace at a moment.
 *
 * @param pagesUploading pages of chunked uploads begun and not yet published or expired (allocated whole with the first chunk)
 * @param historyLength  versions superseded and not yet reclaimed (undo records produced − reclaims applied)
 */
public record StoreStats(long lobs, long bytesLive, long pagesLive, long pagesHistory, long pagesFree, long pagesUploading,
                         long historyLength, int pageSize) {
    /** Every page of the page file: live, history, free and uploading. */
    public long pagesTotal() {
        return pagesLive + pagesHistory + pagesFree + pagesUploading;
    }

    public long tablespaceBytes() {
        return pagesTotal() * pageSize;
    }

    public StoreStats plus(StoreStats o) {
        return new StoreStats(lobs + o.lobs, bytesLive + o.bytesLive, pagesLive + o.pagesLive, pagesHistory + o.pagesHistory,
                pagesFree + o.pagesFree, pagesUploading + o.pagesUploading, historyLength + o.historyLength,
                pageSize == 0 ? o.pageSize : pageSize);
    }

    public static StoreStats empty() {
        return new StoreStats(0, 0, 0, 0, 0, 0, 0, 0);
    }
}
