package io.lobstream.app.cli;

import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class DurationsTest {
    @Test
    void parsesTheShortFormsAndIso() {
        assertThat(Durations.parse("250us")).isEqualTo(Duration.ofNanos(250_000));
        assertThat(Durations.parse("500ms")).isEqualTo(Duration.ofMillis(500));
        assertThat(Durations.parse("30")).isEqualTo(Duration.ofSeconds(30));
        assertThat(Durations.parse("2m")).isEqualTo(Duration.ofMinutes(2));
        assertThat(Durations.parse("PT1H")).isEqualTo(Duration.ofHours(1));
        assertThat(Durations.parse("1m 500ms")).isEqualTo(Duration.ofMillis(60_500));
        assertThatThrownBy(() -> Durations.parse("soon")).hasMessageContaining("not a duration: 'soon'");
        assertThatThrownBy(() -> Durations.parse("1h30")).hasMessageContaining("a bare number is seconds");
    }

    /** Used to overflow into a negative duration, or to fail later, as an error that was not a usage error. */
    @Test
    void negativeAndOverLongDurationsAreRefused() {
        for (String s : new String[]{"9300000000000000us", "-PT5S", "PT9999999999999H", "999999999999999999h", "P366D", "8761h"}) {
            assertThatThrownBy(() -> Durations.parse(s)).as(s).isInstanceOf(IllegalArgumentException.class);
        }
        assertThat(Durations.parse("8760h")).isEqualTo(Durations.MAX);
    }

    @Test
    void printsThemAsWritten() {
        assertThat(Durations.format(Duration.ofSeconds(60))).isEqualTo("1m");
        assertThat(Durations.format(Duration.ofSeconds(90))).isEqualTo("1m30s");
        assertThat(Durations.format(Duration.ofMinutes(150))).isEqualTo("2h30m");
        assertThat(Durations.format(Duration.ofMillis(1500))).isEqualTo("1500ms");
        assertThat(Durations.format(Duration.ZERO)).isEqualTo("0s");
        for (String s : new String[]{"45s", "2m", "1h", "250ms", "1h30m", "2m5s"}) {
            assertThat(Durations.format(Durations.parse(s))).isEqualTo(s);
        }
    }
}
