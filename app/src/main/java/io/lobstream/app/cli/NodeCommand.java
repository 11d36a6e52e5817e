package io.lobstream.app.cli;

import io.lobstream.app.embedded.EmbeddedCluster;
import io.lobstream.ingest.LobNode;
import io.lobstream.purge.PurgeWorker;
import io.lobstream.schema.LobStreamConfig;
import io.lobstream.store.LobStoreConfig;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

/** {@code ./lobstream node}: a writer node; with no --bootstrap, also the embedded broker and registry. */
@Command(name = "node", mixinStandardHelpOptions = true,
        description = {"Run a writer node: the Kafka Streams writer and the HTTP read API.",
                "With no --bootstrap it first starts the embedded default: a KRaft broker in this JVM (port 9092) "
                        + "and an Apicurio Registry child process (port 8081), under the data directory."})
final class NodeCommand implements Runnable {
    @Option(names = "--data-dir", defaultValue = "lobstream-data", description = "Data directory (default: ${DEFAULT-VALUE}).")
    Path dataDir;

    @Option(names = "--bootstrap", paramLabel = "HOST:PORT", description = "Kafka to use; absent = start the embedded broker and registry.")
    String bootstrap;

    @Option(names = "--registry", paramLabel = "URL", description = "Registry to use with --bootstrap (default http://127.0.0.1:8081/apis/registry/v2).")
    String registry;

    @Option(names = "--http-port", defaultValue = "8080", description = "HTTP API port (default: ${DEFAULT-VALUE}).")
    int httpPort;

    @Option(names = "--node-id", paramLabel = "ID",
            description = "Stable node id (sets lob.node.id): static membership, so a node restarted within "
                    + "lob.writer.session.timeout.ms gets its partitions back without a rebalance. Give each node its own.")
    String nodeId;

    @Mixin
    EmbeddedClusterOptions embedded;

    @Option(names = "--purge-workers", defaultValue = "1",
            description = "Purge workers to run inside this process (default: ${DEFAULT-VALUE}); 0 = run them as separate `purge` processes.")
    int purgeWorkers;

    @Option(names = {"-c", "--config"}, paramLabel = "KEY=VALUE", description = "Any configuration key (see ./lobstream config).")
    Map<String, String> config = new HashMap<>();

    @Override
    public void run() {
        EmbeddedCluster cluster = null;
        List<PurgeWorker> workers = new ArrayList<>();
        LobNode node = null;
        CountDownLatch stopped = new CountDownLatch(1);
        try {
            Map<String, Object> props = new HashMap<>(config);
            props.put(LobStreamConfig.DATA_DIR.name(), dataDir.toString());
            props.put(LobStreamConfig.HTTP_PORT.name(), httpPort);
            if (nodeId != null) {
                props.put(LobStreamConfig.NODE_ID.name(), nodeId);
            }
            if (bootstrap == null) {
                cluster = embedded.start(dataDir);
                props.put(LobStreamConfig.BOOTSTRAP.name(), cluster.bootstrap());
                props.put(LobStreamConfig.REGISTRY_URL.name(), cluster.registryUrl());
            } else {
                props.put(LobStreamConfig.BOOTSTRAP.name(), bootstrap);
                if (registry != null) {
                    props.put(LobStreamConfig.REGISTRY_URL.name(), registry);
                }
            }
            LobStreamConfig cfg = new LobStreamConfig(props);
            LobStoreConfig storeCfg = new LobStoreConfig(config);
            node = new LobNode(cfg, storeCfg).start();
            for (int i = 0; i < purgeWorkers; i++) {
                PurgeWorker w = new PurgeWorker(cfg, storeCfg, "node-" + ProcessHandle.current().pid() + "-" + i, 0, node.meters());
                workers.add(w);
                new Thread(w, "purge-" + i).start();
            }
            System.err.printf("LobStream node ready: bootstrap %s, registry %s, HTTP http://127.0.0.1:%d (Ctrl-C to stop)%n",
                    cfg.bootstrap(), cfg.get(LobStreamConfig.REGISTRY_URL), node.httpPort());
            LobNode n = node;
            EmbeddedCluster c = cluster;
            Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                workers.forEach(PurgeWorker::close);
                n.close();
                if (c != null) {
                    c.close();
                }
                stopped.countDown();
            }, "node-shutdown"));
            stopped.await();
        } catch (Exception e) {
            workers.forEach(PurgeWorker::close);
            if (node != null) {
                node.close();
            }
            if (cluster != null) {
                cluster.close();
            }
            throw new IllegalStateException("node failed to start: " + e.getMessage(), e);
        }
    }
}
