package io.lobstream.app.cli;

import io.lobstream.app.embedded.EmbeddedCluster;
import picocli.CommandLine.Option;

import java.nio.file.Path;

/** The ports of the embedded default, for {@code node} (without --bootstrap) and {@code cluster}. */
final class EmbeddedClusterOptions {
    @Option(names = "--kafka-port", defaultValue = "9092", description = "Embedded broker port (default: ${DEFAULT-VALUE}).")
    int kafkaPort;

    @Option(names = "--controller-port", defaultValue = "9093", description = "Embedded KRaft controller port (default: ${DEFAULT-VALUE}).")
    int controllerPort;

    @Option(names = "--registry-port", defaultValue = "8081", description = "Embedded registry port (default: ${DEFAULT-VALUE}).")
    int registryPort;

    /** Starts broker and registry under {@code dataDir} ({@code kafka/}, {@code registry/}). */
    EmbeddedCluster start(Path dataDir) throws Exception {
        return EmbeddedCluster.start(dataDir, kafkaPort, controllerPort, registryPort);
    }
}
