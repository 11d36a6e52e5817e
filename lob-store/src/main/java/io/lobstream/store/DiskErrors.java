package io.lobstream.store;

import java.nio.file.AccessDeniedException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;

/**
 * The disk's errors that say nothing is wrong with a tablespace, only with where it lives: they pass once an operator acts
 * on the disk (frees room, remounts it writable, gives the files back to their user), and neither a retry sooner nor a rebuild of the copy would help. Told
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

    /**
     * Whether {@code e} or a cause of it is a file this user may not open (a tablespace restored or replayed as root): a
     * chown, not a rebuild, mends it. The JDK says so by type, RocksDB in its words.
     */
    public static boolean denied(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof AccessDeniedException) {
                return true;
            }
        }
        return said(e, "Permission denied");
    }

    /** Java names only the path for the commonest of these ("/x/y.part"): what is wrong with it, then the path. */
    public static String fileProblem(FileSystemException e) {
        String typed = e instanceof NoSuchFileException ? "no such file or directory"
                : e instanceof AccessDeniedException ? "permission denied"
                : e instanceof FileAlreadyExistsException ? "already exists"
                : e instanceof NotDirectoryException ? "not a directory"
                : e instanceof DirectoryNotEmptyException ? "directory not empty"
                : null;
        String what = typed == null ? (e.getReason() != null ? e.getReason() : e.getClass().getSimpleName())
                : typed + (e.getReason() != null ? " (" + e.getReason() + ")" : ""); // a reason the thrower gave is kept
        return what + (e.getFile() != null ? ": " + e.getFile() : "") + (e.getOtherFile() != null ? " -> " + e.getOtherFile() : "");
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
