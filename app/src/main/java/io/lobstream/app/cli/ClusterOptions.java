package io.lobstream.app.cli;

import io.lobstream.schema.LobStreamConfig;
import io.lobstream.store.LobStoreConfig;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.util.HashMap;
import java.util.Map;

/**
 * Where the cluster is and any configuration key: shared by every command that talks to Kafka.
 * An option given wins over the same key given with {@code -c} (or {@code --command-config}); an
 * option not given leaves the key to them, then to its default.
 */
final class ClusterOptions {
    @Option(names = {"--bootstrap", "--bootstrap-server"}, paramLabel = "HOST:PORT",
            description = "Kafka bootstrap servers (sets bootstrap.servers; default: " + LobStreamConfig.DEFAULT_BOOTSTRAP + ", the embedded broker of a local node).")
    String bootstrap;

    @Option(names = "--registry", paramLabel = "URL",
            description = "Schema registry URL (sets lob.registry.url; default: " + LobStreamConfig.DEFAULT_REGISTRY_URL + ").")
    String registry;

    @Mixin
    ConfigOptions config;

    LobStreamConfig streamConfig(String dataDir) {
        Map<String, Object> p = new HashMap<>(config.map());
        if (bootstrap != null) {
            p.put(LobStreamConfig.BOOTSTRAP.name(), bootstrap);
        }
        if (registry != null) {
            p.put(LobStreamConfig.REGISTRY_URL.name(), registry);
        }
        if (dataDir != null) {
            p.put(LobStreamConfig.DATA_DIR.name(), dataDir);
        }
        LobStreamConfig checked = new LobStreamConfig(p);
        storeConfig(); // the engine's keys too, which this one knows by name only: a bad value is a usage error before anything starts
        return checked;
    }

    LobStoreConfig storeConfig() {
        return new LobStoreConfig(config.map());
    }
}
