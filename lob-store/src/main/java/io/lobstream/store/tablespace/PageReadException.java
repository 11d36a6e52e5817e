package io.lobstream.store.tablespace;

import java.io.IOException;

/**
 * The device failed to read a page (EIO): a sector whose write a power loss cut, say, which fails its ECC or a checksumming
 * layer's check. Unlike the page file closed under a read (a {@link java.nio.channels.ClosedChannelException}), it says
 * the page is lost. Names the page number.
 */
public final class PageReadException extends IOException {
    private final long pageNo;

    PageReadException(long pageNo, String message, IOException cause) {
        super(message, cause);
        this.pageNo = pageNo;
    }

    public long pageNo() {
        return pageNo;
    }
}
