package io.lobstream.app.cli;

import io.lobstream.schema.LobStreamConfig;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.lobstream.app.embedded.EmbeddedCluster;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * {@code ./lobstream cluster}: the embedded default on its own, for running nodes, purge workers
 * and clients as separate processes without Docker. It keeps the layout a node uses when it embeds
 * the cluster itself ({@code kafka/} and {@code registry/} under the data directory), so the same
 * data directory works either way.
 */
@Command(name = "cluster", mixinStandardHelpOptions = true,
        description = {"Run the embedded default alone: a KRaft broker in this JVM and an Apicurio Registry child process.",
                "Then start nodes with --bootstrap and --registry. Prints {\"bootstrap\":...,\"registry\":...} on stdout "
                        + "once both are ready; runs until Ctrl-C."})
final class ClusterCommand implements Callable<Integer> {
    @Option(names = "--data-dir", converter = DataDir.class, defaultValue = LobStreamConfig.DEFAULT_DATA_DIR, description = "Data directory (default: ${DEFAULT-VALUE}).")
    Path dataDir;

    @Mixin
    EmbeddedClusterOptions embedded;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        embedded.check(spec.commandLine());
        ShutdownHook shutdown = ShutdownHook.register("cluster-shutdown");
        EmbeddedCluster cluster;
        try {
            cluster = shutdown.started(embedded.start(dataDir));
        } finally {
            shutdown.startEnded();
        }
        System.err.printf("LobStream cluster ready: bootstrap %s, registry %s (Ctrl-C to stop)%n", cluster.bootstrap(), cluster.registryUrl());
        System.out.println(new ObjectMapper().writeValueAsString(Map.of("bootstrap", cluster.bootstrap(), "registry", cluster.registryUrl())));
        System.out.flush();
        shutdown.awaitClosed();
        return 0;
    }
}
