package io.lobstream.store;

/**
 * The disk's errors that say nothing is wrong with a tablespace, only with where it lives: they pass once an operator acts
 * on the disk (frees room, remounts it writable), and neither a retry sooner nor a rebuild of the copy would help. Told
 * from the kernel's words, which the JDK and RocksDB pass on in their messages (ENOSPC, EROFS): neither has a type.
 */
public final class DiskErrors {
    private DiskErrors() {
    }

    /** Whether {@code e} or a cause of it is the disk's "no space left". */
    public static boolean full(Throwable e) {
        return said(e, "No space left on device");
    }

    /** Whether {@code e} or a cause of it is a file system mounted read-only (as Linux remounts one after errors). */
    public static boolean readOnly(Throwable e) {
        return said(e, "Read-only file system");
    }

    private static boolean said(Throwable e, String words) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t.getMessage() != null && t.getMessage().contains(words)) {
                return true;
            }
        }
        return false;
    }
}
