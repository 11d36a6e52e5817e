package io.lobstream.app.bench;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** What {@code bench pipeline} reads off the node's {@code /metrics}. */
class PrometheusSumTest {
    private static final String METRICS = """
            # HELP lob_commands_dead_lettered_total records sent to the dead-letter topic
            # TYPE lob_commands_dead_lettered_total counter
            lob_commands_dead_lettered_total{kind="crc",topic="lob.commands"} 2.0
            lob_commands_dead_lettered_total{kind="invalid",topic="lob.commands",} 1.0
            lob_commands_dead_lettered_total{kind="invalid",topic="lob.reclaim"} 5.0
            lob_commands_dead_lettered_total{kind="invalid",topic="lob.commands.old"} 7.0
            lob_commands_dead_lettered_totalx{topic="lob.commands"} 11.0
            """;

    /** The bench's commands_dead_lettered counted the reclaims the writer dead-letters too, which the demo's does not. */
    @Test
    void sumsOnlyTheSamplesWithTheLabel() {
        assertThat(PipelineBench.prometheusSum(METRICS, "lob_commands_dead_lettered_total", "topic", "lob.commands")).isEqualTo(3.0);
        assertThat(PipelineBench.prometheusSum(METRICS, "lob_commands_dead_lettered_total", "topic", "lob.reclaim")).isEqualTo(5.0);
        assertThat(PipelineBench.prometheusSum(METRICS, "lob_commands_dead_lettered_total", "kind", "invalid")).isEqualTo(13.0);
        assertThat(PipelineBench.prometheusSum(METRICS, "lob_nothing_total", "topic", "lob.commands")).isZero();
    }
}
