package io.lobstream.app.cli;

import java.io.Closeable;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * The FILE argument of the write commands: a file, {@code -} for standard input, or anything else
 * that can be read through once (a pipe, {@code <(cmd)}). All but a regular file are first spooled
 * to a temporary file, because a chunked upload states its length in its first chunk.
 */
final class InputFile implements Closeable {
    private final Path path;
    private final boolean temporary;
    private final List<InputStream> opened = new ArrayList<>();

    private InputFile(Path path, boolean temporary) {
        this.path = path;
        this.temporary = temporary;
    }

    /** Why {@code arg} cannot be read as a value, or null. */
    static String problem(String arg) {
        if (arg.equals("-")) {
            return null;
        }
        Path p = Path.of(arg);
        return !Files.exists(p) ? "no such file: " + arg
                : Files.isDirectory(p) ? "a directory, not a file: " + arg
                : !Files.isReadable(p) ? "cannot read " + arg + ": permission denied"
                : null;
    }

    /**
     * The value's bytes, with their length known before the first is sent (an upload's first chunk says
     * it): a regular file as it is; standard input ({@code -}) or anything else one can only read
     * through once (a pipe, {@code <(cmd)}, {@code /dev/stdin}), or a file whose size says nothing of its bytes (one
     * of length 0, or any in /proc, /sys: the kernel makes their bytes as they are read), copied to a temporary file
     * first, at most {@code maxBytes} of it.
     *
     * @throws TooLong if what is copied runs past {@code maxBytes}: the copy stops there, not at the end of a stream
     *                 that may never end, or fill the temporary directory first
     */
    static InputFile open(String arg, long maxBytes) throws IOException {
        String problem = problem(arg);
        if (problem != null) {
            throw new IOException(problem);
        }
        if (!arg.equals("-") && Files.isRegularFile(Path.of(arg)) && Files.size(Path.of(arg)) > 0 && !madeAsRead(Path.of(arg))) {
            return new InputFile(Path.of(arg), false);
        }
        Path tmp = Files.createTempFile("lobstream-stdin-", ".bin");
        tmp.toFile().deleteOnExit(); // Ctrl-C (or SIGTERM) while spooling or sending: close() never runs, the JVM's exit still does
        try (InputStream in = arg.equals("-") ? System.in : Files.newInputStream(Path.of(arg));
             OutputStream out = Files.newOutputStream(tmp)) {
            in.transferTo(new LimitedOutput(out, maxBytes));
        } catch (TooLong | RuntimeException e) {
            Files.deleteIfExists(tmp);
            throw e;
        } catch (IOException e) {
            Files.deleteIfExists(tmp);
            // the JDK's "No space left on device" names no file: it is this machine's temporary directory, not the node's disk
            throw new IOException("copying " + (arg.equals("-") ? "standard input" : arg) + " to " + tmp + " (java.io.tmpdir) "
                    + "first: " + e.getMessage(), e);
        }
        return new InputFile(tmp, true);
    }

    /** What a spooled input held past the most bytes a command may send. */
    static final class TooLong extends IOException {
        TooLong(long max) {
            super("the input runs past " + max + " bytes");
        }
    }

    /** Writes up to {@code max} bytes; a write past them stops the copy ({@link TooLong}). */
    private static final class LimitedOutput extends FilterOutputStream {
        private final long max;
        private long written;

        LimitedOutput(OutputStream out, long max) {
            super(out);
            this.max = max;
        }

        @Override
        public void write(int b) throws IOException {
            write(new byte[] {(byte) b}, 0, 1);
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            if (len > max - written) {
                throw new TooLong(max);
            }
            out.write(b, off, len);
            written += len;
        }
    }

    /** A file on a file system whose sizes say nothing of the bytes a read gets (/sys says 4096 for 18 bytes). */
    private static boolean madeAsRead(Path file) {
        try {
            return KERNEL_FILE_SYSTEMS.contains(Files.getFileStore(file).type());
        } catch (IOException e) {
            return false;
        }
    }

    private static final Set<String> KERNEL_FILE_SYSTEMS = Set.of("proc", "sysfs", "debugfs", "configfs", "cgroup", "cgroup2",
            "securityfs", "tracefs");

    long length() throws IOException {
        return Files.size(path);
    }

    /** A stream of the file, closed with this (the client leaves its input open). */
    InputStream stream() throws IOException {
        InputStream in = Files.newInputStream(path);
        opened.add(in);
        return in;
    }

    @Override
    public void close() throws IOException {
        try {
            for (InputStream in : opened) { // before the delete: a spooled file's space is freed only once none holds it open
                in.close();
            }
        } finally {
            if (temporary) {
                Files.deleteIfExists(path);
            }
        }
    }
}
