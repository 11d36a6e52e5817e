package io.lobstream.app.logging;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.LoggingEvent;
import ch.qos.logback.core.spi.FilterReply;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class EchoedFailureFilterTest {
    private final LoggerContext context = new LoggerContext();

    @Test
    void kafkaStreamsReportsOfAFailedTaskAreDroppedUnlessDebugging() {
        EchoedFailureFilter.ECHOES.forEach((logger, words) -> {
            LoggingEvent echo = event(logger, "stream-thread [lobstream-writer-node-StreamThread-1] " + words + " 0_5 ...");
            assertThat(new EchoedFailureFilter(false).decide(echo)).as(logger).isEqualTo(FilterReply.DENY);
            assertThat(new EchoedFailureFilter(true).decide(echo)).as(logger).isEqualTo(FilterReply.NEUTRAL);
            // the same words from another logger stay
            assertThat(new EchoedFailureFilter(false).decide(event("io.lobstream.ingest.WriterThreadFailures", words)))
                    .isEqualTo(FilterReply.NEUTRAL);
        });
        // Kafka's own words (4.4), a task's processing and its punctuation
        assertThat(new EchoedFailureFilter(false).decide(event("org.apache.kafka.streams.processor.internals.TaskExecutor",
                "stream-thread [t] Failed to punctuate stream task 0_5 due to the following error:"))).isEqualTo(FilterReply.DENY);
        // anything else Kafka Streams says stays: a task fenced as a zombie, which the writer does not report
        assertThat(new EchoedFailureFilter(false).decide(event("org.apache.kafka.streams.processor.internals.TaskExecutor",
                "stream-thread [t] Failed to process stream task 0_5 since it got migrated to another thread already. Will trigger "
                        + "a new rebalance and close all tasks as zombies together."))).isEqualTo(FilterReply.NEUTRAL);
        assertThat(new EchoedFailureFilter(false).decide(event("org.apache.kafka.streams.KafkaStreams",
                "State transition from RUNNING to ERROR"))).isEqualTo(FilterReply.NEUTRAL);
    }

    private LoggingEvent event(String logger, String message) {
        return new LoggingEvent(getClass().getName(), context.getLogger(logger), Level.ERROR, message, new IllegalStateException("x"), null);
    }
}
