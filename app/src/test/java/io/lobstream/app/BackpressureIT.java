package io.lobstream.app;

import io.lobstream.purge.PurgeWorker;
import io.lobstream.schema.LobStreamConfig;
import io.lobstream.store.LobStoreConfig;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Backpressure in a node, set as an operator sets it ({@code -c lob.history.max=4}): with purge stopped, history passes
 * the limit, the writer slows its writes and its metrics say so and by how much; with purge back, history drains and
 * the writes go at full speed again. The engine's own tests check the delay's size; this checks it is wired in a node.
 */
class BackpressureIT {
    private static final int HISTORY_MAX = 4;

    @TempDir
    static Path dir;

    @Test
    void aNodeSlowsItsWritesWhileHistoryIsPastItsLimitAndSaysSo() throws Exception {
        try (TestPipeline pipeline = TestPipeline.start(dir, Map.of(LobStreamConfig.PARTITIONS.name(), 1,
                LobStoreConfig.HISTORY_MAX.name(), HISTORY_MAX, LobStoreConfig.HISTORY_MAX_DELAY_MS.name(), 20))) {
            MeterRegistry meters = pipeline.node.meters();
            pipeline.purge.close();
            pipeline.purgeThread.join(10_000);
            assertThat(pipeline.purgeThread.isAlive()).as("purge stopped").isFalse();

            for (int i = 0; i < 3 * HISTORY_MAX; i++) {
                pipeline.client.put("bp", TestPipeline.bytes(20_000, i), null).get();
            }
            await().atMost(Duration.ofSeconds(60)).until(() -> pipeline.node.tablespaces().totals().historyLength() == 3 * HISTORY_MAX - 1);
            long delayed = delayedWrites(meters);
            assertThat(delayed).as("writes delayed past lob.history.max").isPositive();
            assertThat(excessRatio(meters)).as("how far past it").isGreaterThan(1.0); // 11 versions waiting against 4

            PurgeWorker purge = TestPipeline.purgeWorker(pipeline.config, pipeline.node, "it-bp-again");
            Thread purgeThread = new Thread(purge, "purge-it-again");
            purgeThread.start();
            try {
                await().atMost(Duration.ofSeconds(60)).until(() -> pipeline.node.tablespaces().totals().historyLength() == 0);
                assertThat(excessRatio(meters)).isZero();
                assertThat(pipeline.client.put("bp", TestPipeline.bytes(20_000, 99), null).applied(Duration.ofSeconds(60)).get()
                        .applied()).isTrue();
                assertThat(delayedWrites(meters)).as("a write under the limit is not delayed").isEqualTo(delayed);
                assertThat(pipeline.fsck().problems()).isEmpty();
            } finally {
                purge.close();
                purgeThread.join(10_000);
            }
        }
    }

    private static long delayedWrites(MeterRegistry meters) {
        return meters.find("lob_backpressure_delay_seconds").timers().stream().mapToLong(Timer::count).sum();
    }

    private static double excessRatio(MeterRegistry meters) {
        return meters.find("lob_history_excess_ratio").gauges().stream().mapToDouble(Gauge::value).max().orElseThrow();
    }
}
