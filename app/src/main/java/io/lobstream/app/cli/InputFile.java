package io.lobstream.app.cli;

import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

/**
 * The FILE argument of the write commands: a file, or {@code -} for standard input. Standard
 * input is first spooled to a temporary file, because a chunked upload states its length in its
 * first chunk.
 */
final class InputFile implements Closeable {
    private final Path path;
    private final boolean temporary;

    private InputFile(Path path, boolean temporary) {
        this.path = path;
        this.temporary = temporary;
    }

    static InputFile open(String arg) throws IOException {
        if (!arg.equals("-")) {
            Path p = Path.of(arg);
            if (!Files.isRegularFile(p)) {
                throw new IOException("no such file: " + arg);
            }
            return new InputFile(p, false);
        }
        Path tmp = Files.createTempFile("lobstream-stdin-", ".bin");
        tmp.toFile().deleteOnExit(); // Ctrl-C (or SIGTERM) while spooling or sending: close() never runs, the JVM's exit still does
        Files.copy(System.in, tmp, StandardCopyOption.REPLACE_EXISTING);
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
