package io.lobstream.app.cli;

import io.lobstream.schema.LobStreamConfig;
import io.lobstream.store.LobStoreConfig;
import picocli.CommandLine.Option;

import java.util.HashMap;
import java.util.Map;

/** Where the cluster is and any configuration key: shared by every command that talks to Kafka. */
final class ClusterOptions {
    @Option(names = "--bootstrap", paramLabel = "HOST:PORT",
            description = "Kafka bootstrap servers (default: ${DEFAULT-VALUE}, the embedded broker of a local node).",
            defaultValue = "127.0.0.1:9092")
    String bootstrap;

    @Option(names = "--registry", paramLabel = "URL",
            description = "Schema registry URL (default: ${DEFAULT-VALUE}).",
            defaultValue = "http://127.0.0.1:8081/apis/registry/v2")
    String registry;

    @Option(names = {"-c", "--config"}, paramLabel = "KEY=VALUE",
            description = "Any configuration key (see ./lobstream config); repeatable.")
    Map<String, String> config = new HashMap<>();

    LobStreamConfig streamConfig(String dataDir) {
        Map<String, Object> p = new HashMap<>(config);
        p.put(LobStreamConfig.BOOTSTRAP.name(), bootstrap);
        p.put(LobStreamConfig.REGISTRY_URL.name(), registry);
        if (dataDir != null) {
            p.put(LobStreamConfig.DATA_DIR.name(), dataDir);
        }
        return new LobStreamConfig(p);
    }

    LobStoreConfig storeConfig() {
        return new LobStoreConfig(config);
    }
}
