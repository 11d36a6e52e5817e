package io.lobstream.ingest.writer;

import io.lobstream.store.LobStoreConfig;
import io.micrometer.core.instrument.MeterRegistry;
import org.apache.kafka.streams.state.StoreBuilder;

import java.nio.file.Path;
import java.util.Map;

/** Builds one {@link LobStateStore} per task. Logging (changelog) and caching do not apply. */
public final class LobStateStoreBuilder implements StoreBuilder<LobStateStore> {
    private final Path dataDir;
    private final LobStoreConfig config;
    private final MeterRegistry meters;
    private final TablespaceRegistry registry;
    private final TablespaceCatchUp catchUp;

    public LobStateStoreBuilder(Path dataDir, LobStoreConfig config, MeterRegistry meters, TablespaceRegistry registry) {
        this(dataDir, config, meters, registry, null);
    }

    public LobStateStoreBuilder(Path dataDir, LobStoreConfig config, MeterRegistry meters, TablespaceRegistry registry, TablespaceCatchUp catchUp) {
        this.dataDir = dataDir;
        this.config = config;
        this.meters = meters;
        this.registry = registry;
        this.catchUp = catchUp;
    }

    @Override public StoreBuilder<LobStateStore> withCachingEnabled() { return this; }
    @Override public StoreBuilder<LobStateStore> withCachingDisabled() { return this; }
    @Override public StoreBuilder<LobStateStore> withLoggingEnabled(Map<String, String> config) {
        throw new UnsupportedOperationException("the LOB tablespace is not changelogged: lob.commands is its redo log");
    }
    @Override public StoreBuilder<LobStateStore> withLoggingDisabled() { return this; }

    @Override
    public LobStateStore build() {
        return new LobStateStore(dataDir, config, meters, registry, catchUp);
    }

    @Override public Map<String, String> logConfig() { return Map.of(); }
    @Override public boolean loggingEnabled() { return false; }
    @Override public String name() { return LobStateStore.NAME; }
}
