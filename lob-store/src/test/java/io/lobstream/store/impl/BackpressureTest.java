package io.lobstream.store.impl;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

class BackpressureTest {
    private static final long MAX_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

    @Test
    void noDelayWithinTheLimitsThenInProportionToTheExcessUpToTheMaximumAtTwiceTheLimit() {
        double[] excess = {0};
        Backpressure b = new Backpressure(() -> excess[0], 50, slept -> { });
        assertThat(b.delayNanos()).isZero();
        excess[0] = -0.5; // history shrank below its limit
        assertThat(b.delayNanos()).isZero();
        excess[0] = 0.25;
        assertThat(b.delayNanos()).isEqualTo(MAX_NANOS / 4);
        excess[0] = 1.0; // twice the limit
        assertThat(b.delayNanos()).isEqualTo(MAX_NANOS);
        excess[0] = 7.0;
        assertThat(b.delayNanos()).as("capped").isEqualTo(MAX_NANOS);
    }

    @Test
    void aWriteWithinTheLimitsDoesNotSleepNorCountAndOnePastThemCountsWhatItSlept() {
        double[] excess = {0};
        List<Long> slept = new ArrayList<>();
        Backpressure b = new Backpressure(() -> excess[0], 5, slept::add);
        b.await();
        assertThat(slept).isEmpty();
        excess[0] = 0.5;
        b.await();
        assertThat(slept).hasSize(1).allSatisfy(nanos -> assertThat(nanos).isPositive());
    }

    @Test
    void aZeroMaximumDelayTurnsItOff() {
        List<Long> slept = new ArrayList<>();
        Backpressure b = new Backpressure(() -> 3.0, 0, slept::add);
        assertThat(b.delayNanos()).isZero();
        b.await();
        assertThat(slept).isEmpty();
    }
}
