package io.lobstream.app.embedded;

import io.lobstream.schema.LobStreamConfig;
import io.lobstream.store.config.ConfigException;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** A Kafka broker and a schema registry, wherever they run. */
public interface Cluster extends AutoCloseable {
    String bootstrap();

    String registryUrl();

    /**
     * A node's configuration on this cluster: {@code overrides} (any keys; a command's {@code -c} checked first with
     * {@link #refuseOwnKeys}), then this broker and registry, {@code dataDir}, {@code partitions} and an HTTP port picked
     * at run time.
     */
    default LobStreamConfig nodeConfig(Path dataDir, int partitions, Map<String, ?> overrides) {
        Map<String, Object> props = new HashMap<>(overrides);
        props.put(LobStreamConfig.BOOTSTRAP.name(), bootstrap());
        props.put(LobStreamConfig.REGISTRY_URL.name(), registryUrl());
        props.put(LobStreamConfig.DATA_DIR.name(), dataDir.toString());
        props.put(LobStreamConfig.HTTP_PORT.name(), 0);
        props.put(LobStreamConfig.PARTITIONS.name(), partitions);
        return new LobStreamConfig(props);
    }

    /**
     * Refuses a key {@link #nodeConfig} sets itself: a command that runs its own cluster (demo, bench) would otherwise drop
     * {@code -c lob.data.dir=/keep} without a word, and delete the temporary directory it ran in instead.
     *
     * @throws ConfigException naming the key and what to use instead
     */
    static void refuseOwnKeys(Map<String, ?> config) {
        // and the keys that win over the first two where they reach: the writer's clients, the serdes
        for (String own : List.of(LobStreamConfig.BOOTSTRAP.name(), LobStreamConfig.REGISTRY_URL.name(), LobStreamConfig.DATA_DIR.name(),
                LobStreamConfig.HTTP_PORT.name(), LobStreamConfig.STREAMS_PREFIX + LobStreamConfig.BOOTSTRAP.name(),
                "apicurio.registry.url", "schema.registry.url", LobStreamConfig.SERDE_PREFIX + "apicurio.registry.url",
                LobStreamConfig.SERDE_PREFIX + "schema.registry.url")) {
            if (config.containsKey(own)) {
                throw new ConfigException(own + " is not taken: this command sets it itself (the data directory with --data-dir)");
            }
        }
        for (String key : config.keySet()) { // as lob.streams.producer.bootstrap.servers
            if (LobStreamConfig.isStreamsBootstrap(key)) {
                throw new ConfigException(key + " is not taken: this command sets the cluster itself");
            }
        }
    }

    @Override
    void close();
}
