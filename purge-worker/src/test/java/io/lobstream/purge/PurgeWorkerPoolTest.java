package io.lobstream.purge;

import io.lobstream.schema.LobStreamConfig;
import io.lobstream.store.LobStoreConfig;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;

import java.util.Map;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

class PurgeWorkerPoolTest {
    /** {@code node --purge-workers 0}, as the compose file runs its node (purge runs in its own container): no worker. */
    @Test
    void aNodeMayHaveNoPurgeWorkersOfItsOwn() {
        try (PurgeWorkerPool pool = PurgeWorkerPool.following(new LobStreamConfig(Map.of()), LobStoreConfig.defaults(), "none",
                new SimpleMeterRegistry(), () -> Set.of(0, 1), 0)) {
            assertThat(pool.workers()).isEmpty();
        }
    }
}
