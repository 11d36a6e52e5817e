package io.lobstream.store.page;

/**
 * A page that is intact but belongs to another version (or is of another type) than the reader
 * expected: the version it looked for was reclaimed and its page granted again. For purge, which
 * may see an undo record again after a crash, that is expected; for a reader of a live version it
 * is corruption.
 */
public class StalePageException extends CorruptPageException {
    public StalePageException(long pageNo, String reason) {
        super(pageNo, reason);
    }
}
