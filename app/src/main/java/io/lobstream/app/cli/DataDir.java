package io.lobstream.app.cli;

import picocli.CommandLine;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Converts a {@code --data-dir} value: a directory, or a path where none exists yet. A regular file there is a bad
 * argument (usage, exit 2) before anything starts: found later, a node would have started its embedded broker first,
 * and the error would say only "already exists".
 */
public final class DataDir implements CommandLine.ITypeConverter<Path> {
    @Override
    public Path convert(String value) {
        Path p = Path.of(value);
        if (Files.exists(p) && !Files.isDirectory(p)) {
            throw new CommandLine.TypeConversionException("'" + value + "' is not a directory");
        }
        return p;
    }
}
