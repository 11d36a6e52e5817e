package io.lobstream.store.tablespace;

import java.io.IOException;

/**
 * A write to a page file that the disk refused for room (ENOSPC): the pages were not written, and the file is as it was
 * for every page already written. Not a failed fsync, whose pages may be lost, and which fences the tablespace: a caller
 * that can put off what it wrote (a compaction move) may go on.
 */
public final class PageWriteRefusedException extends IOException {
    PageWriteRefusedException(String message, IOException cause) {
        super(message, cause);
    }
}
