package io.lobstream.store.page;

/**
 * A page that reads as all zeros: never written since the file grew over it (a preallocated
 * batch, or a file that a shrink cut and that grew back). A live version's pages are written before
 * it is published (and forced by the flush that makes its entry durable, or checked by the open
 * after a power loss: {@code TornWrites}), so for a reader of one this is corruption (a lost
 * write); for purge, seeing an undo record again after its version was reclaimed, it is a stale
 * root.
 */
public class UnwrittenPageException extends CorruptPageException {
    public UnwrittenPageException(long pageNo) {
        super(pageNo, "never written (all zero)");
    }
}
