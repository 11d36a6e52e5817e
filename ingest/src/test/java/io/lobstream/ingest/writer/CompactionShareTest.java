package io.lobstream.ingest.writer;

import org.junit.jupiter.api.Test;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

/** The compaction runs of one stream thread's tasks share 200 ms a second. */
class CompactionShareTest {
    private final AtomicLong now = new AtomicLong(1_000_000_000L);
    private final CompactionShare share = new CompactionShare(now::get);
    private final AtomicInteger runs = new AtomicInteger();

    @Test
    void runsStopOnceTheyTookTheShareAndResumeAsItGrowsBack() throws Exception {
        run(150); // 50 ms left
        run(150); // 30 ms back meanwhile: 80 left, so it runs, and goes 70 ms past
        run(10); // 30 ms back: -40
        assertThat(runs).as("the third finds the share spent").hasValue(2);
        now.addAndGet(ms(100)); // 20 ms back: -20
        run(10);
        assertThat(runs).hasValue(2);
        now.addAndGet(ms(150)); // 30 ms back: 10 left
        run(10);
        assertThat(runs).hasValue(3);
        now.addAndGet(ms(5_000)); // a long quiet fills the share, and no more
        run(250); // 200 left: runs, 50 past
        run(1); // 50 ms back: 0 left
        assertThat(runs).as("the share, not five seconds' worth").hasValue(4);
    }

    /** A run that fails still counts the time it took. */
    @Test
    void aRunThatFailsCountsToo() {
        try {
            share.run(() -> {
                now.addAndGet(ms(300));
                throw new java.io.IOException("disk");
            });
        } catch (java.io.IOException expected) {
            // counted below
        }
        assertThat(runs).hasValue(0);
        try {
            run(1);
        } catch (Exception e) {
            throw new AssertionError(e);
        }
        assertThat(runs).as("300 ms spent of 200").hasValue(0);
    }

    private void run(long tookMs) throws Exception {
        share.run(() -> {
            runs.incrementAndGet();
            now.addAndGet(ms(tookMs));
        });
    }

    private static long ms(long ms) {
        return TimeUnit.MILLISECONDS.toNanos(ms);
    }
}
