package io.lobstream.app;

import io.lobstream.app.embedded.EmbeddedCluster;
import io.lobstream.client.LobClient;
import io.lobstream.ingest.LobNode;
import io.lobstream.purge.PurgeWorker;
import io.lobstream.schema.LobStreamConfig;
import io.lobstream.store.LobStoreConfig;
import io.lobstream.store.fsck.FsckReport;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Random;

/**
 * What an integration test class runs against: a real broker and registry, one writer node and
 * one purge worker in this JVM, and a client. One per test class.
 */
final class TestPipeline implements AutoCloseable {
    final EmbeddedCluster cluster;
    final LobStreamConfig config;
    final LobNode node;
    final PurgeWorker purge;
    final Thread purgeThread;
    final LobClient client;

    private TestPipeline(EmbeddedCluster cluster, LobStreamConfig config, LobNode node, PurgeWorker purge, Thread purgeThread,
                         LobClient client) {
        this.cluster = cluster;
        this.config = config;
        this.node = node;
        this.purge = purge;
        this.purgeThread = purgeThread;
        this.client = client;
    }

    /** Starts everything; {@code settings} are extra configuration keys (partitions, timeouts, ...). */
    static TestPipeline start(Path dir, Map<String, Object> settings) throws Exception {
        EmbeddedCluster cluster = EmbeddedCluster.start(dir.resolve("cluster"), 0, 0, 0);
        LobNode started = null;
        PurgeWorker purge = null;
        Thread purgeThread = null;
        try {
            Map<String, Object> props = new HashMap<>(settings);
            props.put(LobStreamConfig.BOOTSTRAP.name(), cluster.bootstrap());
            props.put(LobStreamConfig.REGISTRY_URL.name(), cluster.registryUrl());
            props.put(LobStreamConfig.DATA_DIR.name(), dir.resolve("node").toString());
            props.put(LobStreamConfig.HTTP_PORT.name(), 0);
            LobStreamConfig config = new LobStreamConfig(props);
            LobNode node = Nodes.start(config);
            started = node;
            purge = purgeWorker(config, node, "it-" + dir.getFileName());
            purgeThread = new Thread(purge, "purge-it");
            purgeThread.start();
            return new TestPipeline(cluster, config, node, purge, purgeThread, new LobClient(config));
        } catch (Exception | Error e) {
            if (purge != null) {
                purge.close();
                purgeThread.join(10_000);
            }
            if (started != null) {
                started.close(true);
            }
            cluster.close();
            throw e;
        }
    }

    /** A purge worker that follows {@code node}'s partitions, as the node's own {@code --purge-workers} do. */
    static PurgeWorker purgeWorker(LobStreamConfig config, LobNode node, String workerId) {
        return PurgeWorker.following(config, new LobStoreConfig(config.originals()), workerId, node.meters(),
                () -> node.tablespaces().all().keySet());
    }

    /** fsck of every tablespace of the node, data pages included. */
    FsckReport fsck() throws Exception {
        return node.tablespaces().fsckAll(true);
    }

    static byte[] bytes(int n, long seed) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return b;
    }

    @Override
    public void close() throws Exception {
        try (cluster; node) { // closed whatever failed before them, the cluster last
            try {
                client.close();
            } finally {
                purge.close();
                purgeThread.join(60_000); // its release alone may take 5 s for the consumer and 5 s for the producer
            }
            if (purgeThread.isAlive()) {
                throw new AssertionError("the purge worker did not stop within 60 s");
            }
        }
    }
}
