package io.lobstream.app.cli;

import io.lobstream.ingest.writer.TaskRetries;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.Option;
import picocli.CommandLine.TypeConversionException;

import java.io.IOException;
import java.io.Reader;
import java.nio.charset.CharacterCodingException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;

/**
 * Configuration keys as the commands that talk to a cluster take them: one by one ({@code -c KEY=VALUE}), or from a
 * Java properties file ({@code --command-config FILE}), as Kafka's own tools take a {@code client.properties}, so that
 * a cluster's security settings are written once for both. A key given with {@code -c} wins over the file's.
 */
final class ConfigOptions {
    @Option(names = {"-c", "--config"}, paramLabel = "KEY=VALUE",
            description = "Any configuration key (see ./lobstream config); repeatable; wins over --command-config.")
    Map<String, String> given = new HashMap<>();

    @Option(names = "--command-config", paramLabel = "FILE", converter = FileReader.class,
            description = "A Java properties file of configuration keys, as Kafka's tools take (client.properties): "
                    + "bootstrap.servers, lob.registry.url, security.protocol, sasl.*, ssl.*, any key of ./lobstream config.")
    FileKeys file = new FileKeys(Map.of());

    /** The keys of a {@code --command-config} file. */
    record FileKeys(Map<String, String> keys) {
    }

    /** The keys given: the file's, then -c's over them. */
    Map<String, String> map() {
        Map<String, String> all = new HashMap<>(file.keys());
        all.putAll(given);
        return all;
    }

    /** Reads the file when the option is parsed: one that cannot be read is a bad argument, said with usage. */
    static final class FileReader implements ITypeConverter<FileKeys> {
        @Override
        public FileKeys convert(String value) {
            Properties p = new Properties();
            try (Reader r = Files.newBufferedReader(Path.of(value))) { // UTF-8 (Kafka's tools read Latin-1: an ASCII file reads the same)
                p.load(r);
            } catch (FileSystemException e) {
                throw new TypeConversionException("cannot read " + value + ": " + io.lobstream.store.DiskErrors.fileProblem(e));
            } catch (CharacterCodingException e) {
                throw new TypeConversionException("cannot read " + value + ": it is not UTF-8 (write a character past ASCII as "
                        + "its \\" + "u escape, as Java properties files may)");
            } catch (IOException | RuntimeException e) {
                throw new TypeConversionException("cannot read " + value + ": " + TaskRetries.messages(e));
            }
            Map<String, String> keys = new HashMap<>();
            p.stringPropertyNames().forEach(k -> keys.put(k, p.getProperty(k)));
            return new FileKeys(keys);
        }
    }
}
