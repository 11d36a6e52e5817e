package io.lobstream.app.cli;

import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

/**
 * The FILE argument of the write commands: a file, {@code -} for standard input, or anything else
 * that can be read through once (a pipe, {@code <(cmd)}). All but a regular file are first spooled
 * to a temporary file, because a chunked upload states its length in its first chunk.
 */
final class InputFile implements Closeable {
    private final Path path;
    private final boolean temporary;

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
     * through once (a pipe, {@code <(cmd)}, {@code /dev/stdin}), or a file of length 0 (which may
     * hold bytes all the same), copied to a temporary file first.
     */
    static InputFile open(String arg) throws IOException {
        String problem = problem(arg);
        if (problem != null) {
            throw new IOException(problem);
        }
        // a regular file that says it is empty may not be (/proc, /sys: the kernel makes their bytes as they are read)
        if (!arg.equals("-") && Files.isRegularFile(Path.of(arg)) && Files.size(Path.of(arg)) > 0) {
            return new InputFile(Path.of(arg), false);
        }
        Path tmp = Files.createTempFile("lobstream-stdin-", ".bin");
        tmp.toFile().deleteOnExit(); // Ctrl-C (or SIGTERM) while spooling or sending: close() never runs, the JVM's exit still does
        if (arg.equals("-")) {
            Files.copy(System.in, tmp, StandardCopyOption.REPLACE_EXISTING);
        } else {
            try (InputStream in = Files.newInputStream(Path.of(arg))) {
                Files.copy(in, tmp, StandardCopyOption.REPLACE_EXISTING);
            }
        }
        return new InputFile(tmp, true);
    }

    long length() throws IOException {
        return Files.size(path);
    }

    InputStream stream() throws IOException {
        return Files.newInputStream(path);
    }

    @Override
    public void close() throws IOException {
        if (temporary) {
            Files.deleteIfExists(path);
        }
    }
}
