package io.lobstream.store;

/**
 * Space and history of one tablespace at a moment.
 *
 * @param historyLength versions superseded and not yet reclaimed (undo records produced − reclaims applied)
 */
public record StoreStats(long lobs, long bytesLive, long pagesLive, long pagesHistory, long pagesFree,
                         long historyLength, int pageSize) {
    public long pagesTotal() {
        return pagesLive + pagesHistory + pagesFree;
    }

    public long tablespaceBytes() {
        return pagesTotal() * pageSize;
    }

    public StoreStats plus(StoreStats o) {
        return new StoreStats(lobs + o.lobs, bytesLive + o.bytesLive, pagesLive + o.pagesLive, pagesHistory + o.pagesHistory,
                pagesFree + o.pagesFree, historyLength + o.historyLength, pageSize == 0 ? o.pageSize : pageSize);
    }

    public static StoreStats empty() {
        return new StoreStats(0, 0, 0, 0, 0, 0, 0);
    }
}
