package io.lobstream.store.tablespace;

import io.lobstream.store.DiskErrors;

import java.io.Closeable;
import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * The data file of a tablespace: fixed-size pages addressed by number, read and written with
 * positional I/O so that any number of threads use it at once without a file-position lock.
 * It knows nothing about page contents; {@link io.lobstream.store.page.PageCodec} does.
 */
public final class PageFile implements Closeable {
    private final Path path;
    private final int pageSize;
    private final FileChannel channel;
    private final boolean readOnly;

    private PageFile(Path path, int pageSize, FileChannel channel, boolean readOnly) {
        this.path = path;
        this.pageSize = pageSize;
        this.channel = channel;
        this.readOnly = readOnly;
    }

    public static PageFile openReadWrite(Path path, int pageSize) throws IOException {
        Files.createDirectories(path.getParent());
        FileChannel ch = FileChannel.open(path, StandardOpenOption.CREATE, StandardOpenOption.READ, StandardOpenOption.WRITE);
        return new PageFile(path, pageSize, ch, false);
    }

    /** Opens an existing file for reading only, as purge workers do: they never write the tablespace. */
    public static PageFile openReadOnly(Path path, int pageSize) throws IOException {
        return new PageFile(path, pageSize, FileChannel.open(path, StandardOpenOption.READ), true);
    }

    public int pageSize() {
        return pageSize;
    }

    public Path path() {
        return path;
    }

    /** Reads page {@code pageNo} into {@code dst} (capacity = page size), which is left flipped for reading from 0. */
    public void read(long pageNo, ByteBuffer dst) throws IOException {
        dst.clear();
        long pos = pageNo * pageSize;
        while (dst.hasRemaining()) {
            int n;
            try {
                n = channel.read(dst, pos + dst.position());
            } catch (java.nio.channels.ClosedChannelException e) {
                throw e; // not the page's
            } catch (IOException e) {
                throw new PageReadException(pageNo, "reading page " + pageNo + " of " + path + ": " + e.getMessage(), e);
            }
            if (n < 0) {
                throw new EOFException("page " + pageNo + " is past the end of " + path + " (" + sizeInPages() + " pages)");
            }
        }
        dst.clear();
    }

    /** Writes {@code src} (a whole number of pages, from position to limit) starting at page {@code firstPage}. */
    public void write(long firstPage, ByteBuffer src) throws IOException {
        if (readOnly) {
            throw new IOException(path + " is open read-only");
        }
        if (src.remaining() % pageSize != 0) {
            throw new IllegalArgumentException("write of " + src.remaining() + " bytes is not a whole number of pages");
        }
        long pos = firstPage * pageSize;
        int pages = src.remaining() / pageSize;
        try {
            while (src.hasRemaining()) {
                pos += channel.write(src, pos);
            }
        } catch (IOException e) {
            throw refused(pages == 1 ? "writing page " + firstPage : "writing pages " + firstPage + "-" + (firstPage + pages - 1), e);
        }
    }

    /** As {@link #failed}; a write the disk refused for room is a {@link PageWriteRefusedException}. */
    private IOException refused(String what, IOException e) {
        IOException failed = failed(what, e);
        return failed != e && DiskErrors.full(e) ? new PageWriteRefusedException(failed.getMessage(), e) : failed;
    }

    /**
     * The JDK's message alone ("No space left on device", "Input/output error") names no file: the operator is told
     * which file and pages. A closed channel is passed on as it is: callers tell it from a disk failure by its type.
     */
    private IOException failed(String what, IOException e) {
        if (e instanceof java.nio.channels.ClosedChannelException) {
            return e;
        }
        return new IOException(what + " of " + path + ": " + e.getMessage(), e);
    }

    /**
     * Forces written pages to the device. A {@link FileChannel} is interruptible: an I/O call by an
     * interrupted thread closes it, for every thread. The force, which writers and commits run on
     * behalf of others too, therefore runs with the caller's interrupt status clear (set again after).
     */
    public void force() throws IOException {
        if (!readOnly) {
            boolean interrupted = Thread.interrupted();
            try {
                channel.force(false);
            } catch (IOException e) {
                throw failed("forcing the pages", e);
            } finally {
                if (interrupted) {
                    Thread.currentThread().interrupt();
                }
            }
        }
    }

    public long sizeInPages() throws IOException {
        return channel.size() / pageSize;
    }

    /** Grows the file (sparsely) to at least {@code pages} pages. */
    public void extendTo(long pages) throws IOException {
        long size = pages * pageSize;
        try {
            if (channel.size() < size) {
                channel.write(java.nio.ByteBuffer.allocate(1), size - 1);
            }
        } catch (IOException e) {
            throw refused("growing to " + pages + " pages", e);
        }
    }

    /**
     * Cuts the file to {@code pages} pages, giving the rest back to the file system (a tablespace
     * shrink); a file already no longer than that is left as it is.
     */
    public void truncate(long pages) throws IOException {
        try {
            channel.truncate(pages * pageSize);
        } catch (IOException e) {
            throw failed("cutting to " + pages + " pages", e);
        }
    }

    @Override
    public void close() throws IOException {
        channel.close();
    }
}
