package io.lobstream.store.page;

import java.io.IOException;

/** A page that is torn, stale, misdirected or of the wrong kind. Always names the page number. */
public class CorruptPageException extends IOException {
    private final long pageNo;

    public CorruptPageException(long pageNo, String reason) {
        super("page " + pageNo + ": " + reason);
        this.pageNo = pageNo;
    }

    public long pageNo() {
        return pageNo;
    }
}
