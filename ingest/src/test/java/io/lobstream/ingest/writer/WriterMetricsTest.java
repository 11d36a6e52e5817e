package io.lobstream.ingest.writer;

import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

class WriterMetricsTest {
    /** A ReclaimRecord's time is any long its producer sends: one from the year 1685 threw out of the task that applied it. */
    @Test
    void aLagPastWhatATimerHoldsIsItsLongestNotAFailedTask() {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        WriterMetrics metrics = new WriterMetrics(meters);
        metrics.reclaimApplyLag(Duration.ofDays(365L * 341));
        metrics.commandApplyLag(10_000, 5_000); // a producer's clock ahead
        Timer reclaims = meters.get("lob_reclaim_apply_lag_seconds").timer();
        assertThat(reclaims.count()).isEqualTo(1);
        assertThat(reclaims.max(TimeUnit.NANOSECONDS)).isEqualTo(Long.MAX_VALUE);
        assertThat(meters.get("lob_command_apply_lag_seconds").timer().max(TimeUnit.NANOSECONDS)).isZero();
    }

    /** Counted from 1970, it was the histogram's max (56 years) until the node restarted. */
    @Test
    void aCommandWithoutATimeFirstInItsPartitionIsNotCounted() {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        WriterMetrics metrics = new WriterMetrics(meters);
        metrics.commandApplyLag(CommandTime.of(-1, -1), System.currentTimeMillis());
        assertThat(meters.get("lob_command_apply_lag_seconds").timer().count()).isZero();
        metrics.commandApplyLag(1_000, 1_250);
        assertThat(meters.get("lob_command_apply_lag_seconds").timer().max(TimeUnit.MILLISECONDS)).isEqualTo(250);
    }

    /** Made on first use, these appeared at 1: a dashboard's increase() and an alert on it never saw the first refusal. */
    @Test
    void theRefusalsToAlertOnAreThereAtZeroForEveryPartition() {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        WriterMetrics metrics = new WriterMetrics(meters);
        metrics.registerAtZero("lob.commands", "lob.reclaim", 3);
        for (String name : new String[] {"lob_log_lost_checks", "lob_partition_count_changed_checks"}) {
            assertThat(meters.get(name).counters()).hasSize(3).allSatisfy(c -> assertThat(c.count()).isZero());
        }
        metrics.logLost(2);
        assertThat(meters.get("lob_log_lost_checks").tag("partition", "2").counter().count()).isEqualTo(1);
    }
}
