package io.lobstream.app.bench;

import io.lobstream.app.cli.DataDir;
import io.lobstream.app.embedded.Cluster;
import io.lobstream.ingest.WriterStreamsSettings;
import io.lobstream.schema.LobSerdes;
import io.lobstream.schema.LobStreamConfig;
import io.lobstream.store.LobStoreConfig;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/** The options every pipeline benchmark shares: outputs, data directory and configuration keys. */
final class BenchOptions {
    @Option(names = "--json", description = "End with one JSON object on the last line of stdout.")
    boolean json;

    @Option(names = "--csv", paramLabel = "FILE", description = "Write the rows of the table as CSV.")
    Path csv;

    @Option(names = "--chart", paramLabel = "FILE.png", description = "Write a PNG chart.")
    Path chart;

    @Option(names = "--data-dir", converter = DataDir.class, description = "Data directory (default: a new temporary directory, deleted afterwards).")
    Path dataDir;

    @Option(names = {"-c", "--config"}, paramLabel = "KEY=VALUE", description = "Any configuration key (see ./lobstream config).")
    Map<String, String> config = new HashMap<>();

    /**
     * Refuses an unknown key or a bad value (a usage error) before anything starts, and a key that one of the bench's own
     * options sets: the option would win without a word, and the run measure what was not asked.
     *
     * @param optionOfKey the keys the bench's options set, each with the option that sets it
     */
    void checkConfig(CommandSpec spec, Map<String, String> optionOfKey) {
        Cluster.refuseOwnKeys(config);
        LobStreamConfig given = new LobStreamConfig(config);
        WriterStreamsSettings.checkValues(given);
        LobSerdes.checkClasses(given);
        new LobStoreConfig(config);
        optionOfKey.forEach((key, option) -> {
            if (config.containsKey(key)) {
                throw new ParameterException(spec.commandLine(), "-c " + key + " is not taken: this bench sets it with " + option);
            }
        });
    }

    /**
     * The --partitions given, or else lob.topic.partitions (8 unless -c sets it): either way, as the demo takes them. One
     * out of the key's range is a usage error now, not a refused key once the broker has started.
     */
    int partitions(CommandSpec spec, Integer option) {
        if (option == null) {
            return new LobStreamConfig(config).get(LobStreamConfig.PARTITIONS);
        }
        String problem = LobStreamConfig.PARTITIONS.problem(option);
        if (problem != null) {
            throw new ParameterException(spec.commandLine(), "--partitions " + option + ": " + problem);
        }
        return option;
    }

    /**
     * Refuses a --data-dir that holds anything (a usage error), for the benches that measure a fresh tablespace and fresh
     * topics: a kept run's topics and tablespaces would be read and counted (bench purge copied the last run's undo records
     * into its window, then failed its check on the reclaims), or a killed run's set begun on its history (bench engine).
     */
    void checkDataDirEmpty(CommandSpec spec) {
        if (dataDir == null || !Files.exists(dataDir)) {
            return;
        }
        String problem;
        try (var entries = Files.list(dataDir)) {
            problem = entries.findAny().map(p -> "is not empty (it holds " + p.getFileName() + "): give a new or empty directory, "
                    + "as this bench measures fresh topics and tablespaces and would count a previous run's").orElse(null);
        } catch (IOException e) {
            problem = "cannot be read (" + e + ")";
        }
        if (problem != null) {
            throw new ParameterException(spec.commandLine(), "--data-dir " + dataDir + " " + problem);
        }
    }

    /** Refuses a --csv or --chart that cannot be written (a usage error) before the run, not after it has taken minutes. */
    void checkOutputs(CommandSpec spec) {
        for (Path out : new Path[]{csv, chart}) {
            if (out == null) {
                continue;
            }
            Path dir = out.toAbsolutePath().getParent();
            while (dir != null && !Files.exists(dir)) {
                dir = dir.getParent(); // the output's directories are made: the nearest one there is must take them
            }
            String problem = Files.isDirectory(out) ? "is a directory"
                    : dir == null || !Files.isDirectory(dir) ? "is under a file, not a directory"
                    : !Files.isWritable(Files.exists(out) ? out : dir) ? "cannot be written" : null;
            if (problem != null) {
                throw new ParameterException(spec.commandLine(), (out == csv ? "--csv " : "--chart ") + out + " " + problem);
            }
        }
    }
}
