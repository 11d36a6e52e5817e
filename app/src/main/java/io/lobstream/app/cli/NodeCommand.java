package io.lobstream.app.cli;

import io.lobstream.app.embedded.EmbeddedCluster;
import io.lobstream.ingest.LobNode;
import io.lobstream.ingest.WriterStreamsSettings;
import io.lobstream.ingest.http.LobHttpServer;
import io.lobstream.purge.PurgeWorkerPool;
import io.lobstream.schema.LobSerdes;
import io.lobstream.schema.LobStreamConfig;
import io.lobstream.store.LobStoreConfig;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/** {@code ./lobstream node}: a writer node; with no --bootstrap, also the embedded broker and registry. */
@Command(name = "node", mixinStandardHelpOptions = true,
        description = {"Run a writer node: the Kafka Streams writer and the HTTP read API.",
                "With no --bootstrap it first starts the embedded default: a KRaft broker in this JVM (port 9092) "
                        + "and an Apicurio Registry child process (port 8081), under the data directory."})
final class NodeCommand implements Runnable {
    @Option(names = "--data-dir", converter = DataDir.class, description = "Data directory (sets lob.data.dir; default: " + LobStreamConfig.DEFAULT_DATA_DIR + ").")
    Path dataDir;

    @Option(names = {"--bootstrap", "--bootstrap-server"}, paramLabel = "HOST:PORT",
            description = "Kafka to use (sets bootstrap.servers); absent, and no -c bootstrap.servers: start the embedded broker and registry.")
    String bootstrap;

    @Option(names = "--registry", paramLabel = "URL",
            description = "Registry to use with --bootstrap (sets lob.registry.url; default " + LobStreamConfig.DEFAULT_REGISTRY_URL + ").")
    String registry;

    @Option(names = "--http-port", description = "HTTP API port (sets lob.http.port; default: " + LobStreamConfig.DEFAULT_HTTP_PORT + ").")
    Integer httpPort;

    @Option(names = "--node-id", paramLabel = "ID",
            description = "Stable node id (sets lob.node.id): static membership, so a node restarted within "
                    + "lob.writer.session.timeout.ms gets its partitions back without a rebalance. Give each node its own.")
    String nodeId;

    @Mixin
    EmbeddedClusterOptions embedded;

    @Option(names = "--purge-workers", defaultValue = "1",
            description = "Purge workers to run inside this process (default: ${DEFAULT-VALUE}); 0 = run them as separate `purge` processes.")
    int purgeWorkers;

    @Mixin
    ConfigOptions configOptions;

    @Spec
    CommandSpec spec;

    @Override
    public void run() {
        if (purgeWorkers < 0) {
            throw new ParameterException(spec.commandLine(), "--purge-workers must be >= 0 (0: run them as separate `purge` processes)");
        }
        // named as the options they came from, with usage, as --kafka-port is: checked with the rest, they were "failed to
        // start: lob.node.id=..." on one line
        checkOption("--http-port", LobStreamConfig.HTTP_PORT, httpPort);
        checkOption("--node-id", LobStreamConfig.NODE_ID, nodeId == null ? null : nodeId.trim());
        Map<String, String> config = configOptions.map();
        if (bootstrap == null && !config.containsKey(LobStreamConfig.BOOTSTRAP.name())) { // else ignored, and said so
            embedded.check(spec.commandLine());
            LobStreamConfig keys = new LobStreamConfig(config);
            embedded.checkApart(spec.commandLine(), httpPort != null ? "--http-port" : LobStreamConfig.HTTP_PORT.name(),
                    keys.get(LobStreamConfig.HTTP_HOST), httpPort != null ? httpPort : keys.get(LobStreamConfig.HTTP_PORT));
        }
        ShutdownHook shutdown = ShutdownHook.register("node-shutdown");
        CompletableFuture<String> stopped;
        try {
            // an option given wins over the same key given with -c; one not given leaves the key to -c
            Map<String, Object> props = new HashMap<>(config);
            putIfGiven(props, LobStreamConfig.DATA_DIR.name(), dataDir);
            putIfGiven(props, LobStreamConfig.HTTP_PORT.name(), httpPort);
            putIfGiven(props, LobStreamConfig.NODE_ID.name(), nodeId);
            putIfGiven(props, LobStreamConfig.BOOTSTRAP.name(), bootstrap);
            putIfGiven(props, LobStreamConfig.REGISTRY_URL.name(), registry);
            LobStoreConfig storeCfg = new LobStoreConfig(config); // a bad value: a usage error before a broker starts
            LobStreamConfig given = new LobStreamConfig(props);
            WriterStreamsSettings.checkValues(given);
            LobSerdes.checkClasses(given);
            if (!props.containsKey(LobStreamConfig.BOOTSTRAP.name())) { // before the HTTP port the node there holds too
                EmbeddedCluster.requireDataDirFree(given.dataDir());
            }
            LobHttpServer.requireBindable(given.get(LobStreamConfig.HTTP_HOST), given.get(LobStreamConfig.HTTP_PORT)); // as early
            if (props.containsKey(LobStreamConfig.BOOTSTRAP.name())) {
                embedded.warnIgnored("node");
                RegistryCheck.warnIfNotApicurio(given, RegistryCheck.Looker.NODE, System.err);
            } else {
                if (props.containsKey(LobStreamConfig.REGISTRY_URL.name())) {
                    System.err.println("lobstream node: " + LobStreamConfig.REGISTRY_URL.name() + " is ignored without --bootstrap: the "
                            + "embedded broker comes with its own registry");
                }
                EmbeddedCluster cluster = shutdown.started(embedded.start(given.dataDir()));
                props.put(LobStreamConfig.BOOTSTRAP.name(), cluster.bootstrap());
                props.put(LobStreamConfig.REGISTRY_URL.name(), cluster.registryUrl());
            }
            LobStreamConfig cfg = new LobStreamConfig(props);
            shutdown.checkNotStopping(); // a signal during the cluster's start: no writer joins its group only to leave it
            LobNode node = shutdown.started(new LobNode(cfg, storeCfg).start());
            // A worker's id names its transactional id (lob.purge.group-ID). Derived from the node id, it is the same after a restart, so the new
            // worker aborts a killed predecessor's open transaction at once instead of waiting out its timeout. Without a
            // node id, random: not the pid, which nodes in containers share (all pid 1) and would fence each other with.
            String ids = "node-" + (cfg.get(LobStreamConfig.NODE_ID).isBlank() ? java.util.UUID.randomUUID().toString().substring(0, 8)
                    : cfg.get(LobStreamConfig.NODE_ID).strip());
            // each purges its share of the partitions this node owns, following the writers' rebalances
            shutdown.checkNotStopping();
            PurgeWorkerPool purge = shutdown.started(PurgeWorkerPool.following(cfg, storeCfg, ids, node.meters(),
                    () -> node.tablespaces().all().keySet(), purgeWorkers));
            System.err.printf("LobStream node ready: bootstrap %s, registry %s, HTTP %s (Ctrl-C to stop)%n",
                    cfg.bootstrap(), cfg.registryShown(), node.httpUrl());
            String local;
            try {
                local = new NodeUrl().convert(NodeUrl.local(cfg.get(LobStreamConfig.HTTP_HOST), node.httpPort()));
            } catch (picocli.CommandLine.TypeConversionException e) {
                local = null; // a host a URL cannot carry (node_1, which DNS may resolve): the commands would refuse it
            }
            boolean secured = cfg.originals().keySet().stream().anyMatch(k -> k.startsWith("security.") || k.startsWith("sasl.")
                    || k.startsWith("ssl.") || k.contains("apicurio.auth."));
            String hint = readyHint(cfg.bootstrap(), cfg.registryShown(), local, secured);
            if (!hint.isEmpty()) {
                System.err.println(hint);
            }
            shutdown.startEnded();
            stopped = node.writerStopped().applyToEither(purge.stopped(), why -> why); // either stopping is the node's
        } catch (Exception | Error e) { // an Error too: the embedded broker's threads would keep the JVM alive
            shutdown.closeAll();
            shutdown.startEnded();
            if (e instanceof Error error) {
                throw error;
            }
            throw new IllegalStateException("failed to start: " + e.getMessage(), e);
        }
        try {
            shutdown.awaitClosedOr(stopped).ifPresent(why -> {
                throw new IllegalStateException(why); // exit 1: a supervisor restarts the node
            });
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static void putIfGiven(Map<String, Object> props, String key, Object option) {
        if (option != null) {
            props.put(key, option.toString());
        }
    }

    private <T> void checkOption(String option, io.lobstream.store.config.ConfigKey<T> key, T value) {
        String problem = value != null ? key.problem(value) : null;
        if (problem != null) {
            throw new ParameterException(spec.commandLine(), option + " " + value + ": " + problem);
        }
    }

    /** What a ready node says its clients need beyond the defaults: the options, the security settings; empty if nothing. */
    static String readyHint(String bootstrap, String registryShown, String localUrl, boolean secured) {
        String clients = clientOptions(bootstrap, registryShown, localUrl);
        if (clients.isEmpty() && !secured) {
            return "";
        }
        String security = "the security settings it was given (-c, --command-config)";
        return "  commands on this machine reach it with: " + (clients.isEmpty() ? "their defaults and " + security
                : clients + (secured ? ", and " + security : ""));
    }

    /**
     * The options commands on this machine need to reach this node, those whose defaults do not ({@code put}, {@code get},
     * {@code status}: each default names a local node on the default ports); empty when none is needed. {@code httpUrl} is
     * the API as this machine reaches it ({@link NodeUrl#local}), not as other nodes do; null when no command would take
     * it. A registry URL's user and password are shown as {@code ***}, said.
     */
    static String clientOptions(String bootstrap, String registryShown, String httpUrl) {
        StringBuilder b = new StringBuilder();
        if (!bootstrap.equals(LobStreamConfig.DEFAULT_BOOTSTRAP)) {
            b.append("--bootstrap ").append(bootstrap).append(' ');
        }
        if (!registryShown.equals(LobStreamConfig.DEFAULT_REGISTRY_URL)) {
            b.append("--registry ").append(registryShown).append(registryShown.contains("://***@") ? " (its credentials for ***) " : " ");
        }
        if (httpUrl != null && !httpUrl.equals(LobStreamConfig.DEFAULT_NODE_URL)) {
            b.append("--node ").append(httpUrl).append(" (or export ").append(NodeUrl.ENV).append('=').append(httpUrl).append(')');
        }
        return b.toString().strip();
    }
}
