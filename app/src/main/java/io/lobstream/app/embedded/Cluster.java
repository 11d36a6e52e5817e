package io.lobstream.app.embedded;

import io.lobstream.schema.LobStreamConfig;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/** A Kafka broker and a schema registry, wherever they run. */
public interface Cluster extends AutoCloseable {
    String bootstrap();

    String registryUrl();

    /**
     * A node's configuration on this cluster: {@code overrides} (any keys), then this broker and
     * registry, {@code dataDir}, {@code partitions} and an HTTP port picked at run time.
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

    @Override
    void close();
}
