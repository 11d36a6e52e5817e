package io.lobstream.ingest.writer;

import io.lobstream.schema.LobStreamConfig;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.apache.kafka.streams.errors.LockException;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.time.Duration;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** A catch-up that fails is not started again at once: the next waits, longer after each failure in a row. */
class TablespaceCatchUpTest {

    @Test
    void aFailedCatchUpIsTriedAgainOnlyAfterAWaitThatGrows() {
        assertThat(TablespaceCatchUp.retryAfter(1)).isEqualTo(TablespaceCatchUp.RETRY_FIRST);
        assertThat(TablespaceCatchUp.retryAfter(2)).isEqualTo(TablespaceCatchUp.RETRY_FIRST.multipliedBy(2));
        assertThat(TablespaceCatchUp.retryAfter(40)).isEqualTo(TablespaceCatchUp.RETRY_MAX);

        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        LobStreamConfig config = new LobStreamConfig(Map.of(LobStreamConfig.BOOTSTRAP.name(), "127.0.0.1:1"));
        try (TablespaceCatchUp catchUps = new TablespaceCatchUp(config, new WriterMetrics(meters))) {
            long started = System.nanoTime();
            catchUps.rebuildInBackground(3, () -> {
                throw new IOException("writing page 9 of /d/p-3/lobs.pages: No space left on device");
            });
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (!catchUps.catchingUp().isEmpty() && System.nanoTime() < deadline) {
                Thread.onSpinWait();
            }
            assertThat(meters.get("lob_rebuild_failures").counter().count()).isEqualTo(1);
            // asked within the wait: on a machine so slow that it had passed, reported as skipped, not as passed
            assumeTrue(System.nanoTime() - started < TablespaceCatchUp.RETRY_FIRST.toNanos(), "the first retry's wait had passed");
            assertThatThrownBy(() -> catchUps.awaitRebuilt(3)).isInstanceOf(LockException.class)
                    .hasMessageContaining("partition 3: its catch-up from lob.commands failed (1 in a row, logged); the next starts in");
        }
    }
}
