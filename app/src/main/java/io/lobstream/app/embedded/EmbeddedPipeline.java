package io.lobstream.app.embedded;

import io.lobstream.app.DataDirs;
import io.lobstream.ingest.LobNode;
import io.lobstream.schema.LobStreamConfig;
import io.lobstream.store.LobStoreConfig;

import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

/**
 * The embedded default in one JVM, as demo and the benchmarks run it: a KRaft broker and a
 * registry on free loopback ports, and a writer node (no purge workers: the caller starts
 * those, in this JVM or as processes). A data directory of null means a temporary one, deleted
 * on close.
 */
public final class EmbeddedPipeline implements AutoCloseable {
    private final Path dir;
    private final boolean temporary;
    private final EmbeddedCluster cluster;
    private final LobStreamConfig config;
    private final LobStoreConfig storeConfig;
    private LobNode node;

    private EmbeddedPipeline(Path dir, boolean temporary, EmbeddedCluster cluster, LobStreamConfig config, LobStoreConfig storeConfig) {
        this.dir = dir;
        this.temporary = temporary;
        this.cluster = cluster;
        this.config = config;
        this.storeConfig = storeConfig;
    }

    /** Starts the broker, the registry and a node with {@code partitions} tablespaces; waits until the node runs. */
    public static EmbeddedPipeline start(Path dataDir, String tempPrefix, int partitions, Map<String, String> config) throws Exception {
        boolean temporary = dataDir == null;
        Path dir = temporary ? DataDirs.temporary(tempPrefix) : dataDir;
        EmbeddedCluster cluster = null;
        LobNode node = null;
        try {
            cluster = EmbeddedCluster.start(dir, 0, 0, 0);
            Map<String, Object> props = new HashMap<>(config);
            props.put(LobStreamConfig.BOOTSTRAP.name(), cluster.bootstrap());
            props.put(LobStreamConfig.REGISTRY_URL.name(), cluster.registryUrl());
            props.put(LobStreamConfig.DATA_DIR.name(), dir.toString());
            props.put(LobStreamConfig.HTTP_PORT.name(), 0);
            props.put(LobStreamConfig.PARTITIONS.name(), partitions);
            EmbeddedPipeline p = new EmbeddedPipeline(dir, temporary, cluster, new LobStreamConfig(props), new LobStoreConfig(config));
            node = new LobNode(p.config, p.storeConfig).start();
            p.node = node;
            node.awaitRunning(Duration.ofSeconds(120));
            return p;
        } catch (Exception e) {
            try {
                if (node != null) {
                    node.close(); // its stream and HTTP threads would keep the JVM alive, on files about to be deleted
                }
            } catch (RuntimeException closing) {
                e.addSuppressed(closing);
            }
            try {
                if (cluster != null) {
                    cluster.close();
                }
            } catch (RuntimeException closing) {
                e.addSuppressed(closing);
            }
            if (temporary) {
                DataDirs.deleteTree(dir);
            }
            throw e;
        }
    }

    public Path dir() {
        return dir;
    }

    public EmbeddedCluster cluster() {
        return cluster;
    }

    public LobStreamConfig config() {
        return config;
    }

    public LobStoreConfig storeConfig() {
        return storeConfig;
    }

    public LobNode node() {
        return node;
    }

    @Override
    public void close() {
        try {
            if (node != null) {
                node.close();
            }
        } finally {
            cluster.close();
            if (temporary) {
                DataDirs.deleteTree(dir);
            }
        }
    }
}
