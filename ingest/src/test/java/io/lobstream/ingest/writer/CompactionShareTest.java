package io.lobstream.ingest.writer;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The compaction runs of one stream thread's tasks share 200 ms a second. */
class CompactionShareTest {
    private final AtomicLong now = new AtomicLong(1_000_000_000L);
    private final CompactionShare share = new CompactionShare(now::get);
    private final Map<String, Integer> runs = new HashMap<>();

    @Test
    void runsStopOnceTheyTookTheShareAndResumeAsItGrowsBack() throws Exception {
        run("a", 150); // 50 ms left
        run("a", 150); // 30 ms back meanwhile: 80 left, so it runs, and goes 70 ms past
        run("a", 10); // 30 ms back: -40
        assertThat(runs("a")).as("the third finds the share spent").isEqualTo(2);
        now.addAndGet(ms(100)); // 20 ms back: -20
        run("a", 10);
        assertThat(runs("a")).isEqualTo(2);
        now.addAndGet(ms(150)); // 30 ms back: 10 left
        run("a", 10);
        assertThat(runs("a")).isEqualTo(3);
        now.addAndGet(ms(5_000)); // a long quiet fills the share, and no more
        run("a", 250); // 200 left: runs, 50 past
        run("a", 1); // 50 ms back: 0 left
        assertThat(runs("a")).as("the share, not five seconds' worth").isEqualTo(4);
    }

    /** A run far past the share is paid back at the share's rate, however long the thread waits before the next. */
    @Test
    void aLongRunIsPaidBack() throws Exception {
        run("a", 3_000); // -2,800
        now.addAndGet(ms(1_000)); // 4 s since it began, 800 ms back: -2,000
        run("a", 1);
        assertThat(runs("a")).isEqualTo(1);
        now.addAndGet(ms(10_000)); // 2,000 back: 0
        run("a", 1);
        assertThat(runs("a")).isEqualTo(1);
        now.addAndGet(ms(100));
        run("a", 1);
        assertThat(runs("a")).isEqualTo(2);
    }

    /** The task whose run spent the share lets those turned away meanwhile go first, once, when the share is back. */
    @Test
    void theTaskThatSpentTheShareLetsTheOthersGoFirst() throws Exception {
        run("big", 250); // -50
        run("small", 1); // turned away
        now.addAndGet(ms(400)); // 80 left
        run("big", 250); // yields, once
        run("small", 1);
        assertThat(runs("big")).isEqualTo(1);
        assertThat(runs("small")).isEqualTo(1);
        run("big", 250);
        assertThat(runs("big")).as("its turn again").isEqualTo(2);
    }

    /** A run that fails still counts the time it took. */
    @Test
    void aRunThatFailsCountsToo() throws Exception {
        assertThatThrownBy(() -> share.run("a", () -> {
            now.addAndGet(ms(300));
            throw new IOException("disk");
        })).isInstanceOf(IOException.class);
        run("a", 1);
        assertThat(runs("a")).as("300 ms spent of 200, 60 back").isZero();
    }

    private void run(String task, long tookMs) throws IOException {
        share.run(task, () -> {
            runs.merge(task, 1, Integer::sum);
            now.addAndGet(ms(tookMs));
        });
    }

    private int runs(String task) {
        return runs.getOrDefault(task, 0);
    }

    private static long ms(long ms) {
        return TimeUnit.MILLISECONDS.toNanos(ms);
    }
}
