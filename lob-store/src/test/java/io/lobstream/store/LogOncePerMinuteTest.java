package io.lobstream.store;

import org.junit.jupiter.api.Test;

import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

class LogOncePerMinuteTest {
    private long now = 1_000;
    private final LogOncePerMinute said = new LogOncePerMinute(() -> now);

    @Test
    void eachKindIsSaidFirstThenOnceAMinuteWithHowManyWereNot() {
        assertThat(said.sayNow("a")).isZero();
        assertThat(said.sayNow("a")).isEqualTo(-1);
        assertThat(said.sayNow("b")).as("another kind").isZero();
        now += TimeUnit.SECONDS.toNanos(59);
        assertThat(said.sayNow("a")).isEqualTo(-1);
        now += TimeUnit.SECONDS.toNanos(1);
        assertThat(said.sayNow("a")).as("a minute on: the two not said").isEqualTo(2);
        assertThat(said.sayNow("a")).isEqualTo(-1);
    }
}
