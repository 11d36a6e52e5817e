package io.lobstream.ingest.writer;

import io.lobstream.schema.LobStreamConfig;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.apache.kafka.streams.errors.LockException;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** A catch-up that fails is not started again at once: the next waits, longer after each failure in a row. */
class TablespaceCatchUpTest {

    @Test
    void aFailedCatchUpIsTriedAgainOnlyAfterAWaitThatGrows() throws Exception {
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
                Thread.sleep(1); // not a spin: on two cores it would take the time of the thread it waits for
            }
            assertThat(meters.get("lob_rebuild_failures").counter().count()).isEqualTo(1);
            // asked within the wait: on a machine so slow that it had passed, reported as skipped, not as passed
            assumeTrue(System.nanoTime() - started < TablespaceCatchUp.RETRY_FIRST.toNanos(), "the first retry's wait had passed");
            assertThatThrownBy(() -> catchUps.awaitRebuilt(3)).isInstanceOf(LockException.class)
                    .hasMessageContaining("partition 3: its catch-up from lob.commands failed (1 in a row, logged); the next starts in");
        }
    }

    /**
     * A broker away fails each try after default.api.timeout.ms, a minute: counted as the rest, the waits between tries
     * grew to five minutes, which a partition sat out after its brokers were back. Tries that time out in a row wait from
     * 5 s up to a minute, and leave the wait after other failures where it was.
     */
    @Test
    void aTryKafkaDidNotAnswerInTimeIsFollowedSoonerAndDoesNotGrowTheWait() {
        Throwable away = new IOException("replay of lob.commands-3",
                new org.apache.kafka.common.errors.TimeoutException("Timeout of 60000ms expired before the position was determined"));
        Throwable stalled = new IOException("cannot read lob.commands.dlq to its end (a partition without a leader?)",
                new java.util.concurrent.TimeoutException("no progress for 120 s"));
        Throwable full = new IOException("writing page 9 of /d/p-3/lobs.pages: No space left on device");
        TablespaceCatchUp.Retry r = null;
        for (int i = 0; i < 10; i++) {
            r = TablespaceCatchUp.Retry.after(r, i % 2 == 0 ? away : stalled, 0);
            assertThat(r.notBeforeNanos()).isLessThanOrEqualTo(TablespaceCatchUp.TIMED_OUT_MAX.toNanos());
        }
        assertThat(r.notBeforeNanos()).isEqualTo(TablespaceCatchUp.TIMED_OUT_MAX.toNanos());
        assertThat(r.inARow()).isEqualTo(10);
        assertThat(r.lastError()).isEqualTo("cannot read lob.commands.dlq to its end (a partition without a leader?): no progress for 120 s");
        r = TablespaceCatchUp.Retry.after(r, full, 0);
        assertThat(r.inARow()).isEqualTo(11);
        assertThat(r.notBeforeNanos()).as("the first failure that grows the wait").isEqualTo(TablespaceCatchUp.RETRY_FIRST.toNanos());
        r = TablespaceCatchUp.Retry.after(r, full, 0);
        assertThat(r.notBeforeNanos()).isEqualTo(TablespaceCatchUp.retryAfter(2).toNanos());
        r = TablespaceCatchUp.Retry.after(r, away, 0);
        assertThat(r.notBeforeNanos()).as("timed out in a row: counted again from the first").isEqualTo(TablespaceCatchUp.RETRY_FIRST.toNanos());
        r = TablespaceCatchUp.Retry.after(r, full, 0);
        assertThat(r.notBeforeNanos()).as("grown from where the full disk left it").isEqualTo(TablespaceCatchUp.retryAfter(3).toNanos());
    }

    /** A node given many partitions and no copies ran every catch-up at once; at most {@code CONCURRENT} run now. */
    @Test
    void atMostSoManyCatchUpsRunAtOnceAndTheOthersWaitTheirTurn() throws Exception {
        LobStreamConfig config = new LobStreamConfig(Map.of(LobStreamConfig.BOOTSTRAP.name(), "127.0.0.1:1"));
        CountDownLatch release = new CountDownLatch(1);
        AtomicInteger running = new AtomicInteger();
        AtomicInteger most = new AtomicInteger();
        try (TablespaceCatchUp catchUps = new TablespaceCatchUp(config, new WriterMetrics(new SimpleMeterRegistry()))) {
            int partitions = TablespaceCatchUp.CONCURRENT + 3;
            for (int p = 0; p < partitions; p++) {
                catchUps.checkInBackground(p, () -> {
                    most.accumulateAndGet(running.incrementAndGet(), Math::max);
                    release.await();
                    running.decrementAndGet();
                    return null;
                });
            }
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (running.get() < TablespaceCatchUp.CONCURRENT && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            Thread.sleep(300); // the others, had they not waited, would have begun by now
            assertThat(most.get()).isEqualTo(TablespaceCatchUp.CONCURRENT);
            assertThat(catchUps.catchingUp()).hasSize(partitions); // waiting ones count as catching up
            release.countDown();
            while (!catchUps.catchingUp().isEmpty() && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            assertThat(catchUps.catchingUp()).as("every one ran in the end").isEmpty();
            assertThat(most.get()).isEqualTo(TablespaceCatchUp.CONCURRENT);
        }
    }
}
