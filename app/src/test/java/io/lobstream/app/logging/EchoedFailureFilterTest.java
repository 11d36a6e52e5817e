package io.lobstream.app.logging;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.LoggingEvent;
import ch.qos.logback.core.spi.FilterReply;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class ReplacedThreadFilterTest {
    private final LoggerContext context = new LoggerContext();

    @Test
    void kafkaStreamsReportOfAReplacedThreadIsDroppedUnlessDebugging() {
        LoggingEvent replaced = event(ReplacedThreadFilter.LOGGER, "stream-client [lobstream-writer-node-1] " + ReplacedThreadFilter.MESSAGE);
        assertThat(new ReplacedThreadFilter(false).decide(replaced)).isEqualTo(FilterReply.DENY);
        assertThat(new ReplacedThreadFilter(true).decide(replaced)).isEqualTo(FilterReply.NEUTRAL);
        // anything else Kafka Streams says, and the same words from another logger, stay
        assertThat(new ReplacedThreadFilter(false).decide(event(ReplacedThreadFilter.LOGGER, "State transition from RUNNING to ERROR")))
                .isEqualTo(FilterReply.NEUTRAL);
        assertThat(new ReplacedThreadFilter(false).decide(event("io.lobstream.ingest.WriterThreadFailures", ReplacedThreadFilter.MESSAGE)))
                .isEqualTo(FilterReply.NEUTRAL);
    }

    private LoggingEvent event(String logger, String message) {
        return new LoggingEvent(getClass().getName(), context.getLogger(logger), Level.ERROR, message, new IllegalStateException("x"), null);
    }
}
