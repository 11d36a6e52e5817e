package io.lobstream.app.logging;

import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.filter.Filter;
import ch.qos.logback.core.spi.FilterReply;

/**
 * Drops Kafka Streams' own report of a stream thread it replaces. The writer's handler (the ingest module's
 * {@code WriterThreadFailures}) has already said why, in one line where the cause says it all (a registry away, a full
 * disk), and Kafka's report repeats the failure at ERROR with its whole stack trace: dozens of lines at each retry of a
 * partition whose registry is away for minutes, and an alert on "Exception" at each. With {@code LOBSTREAM_DEBUG} set,
 * it is kept.
 */
public final class ReplacedThreadFilter extends Filter<ILoggingEvent> {
    static final String LOGGER = "org.apache.kafka.streams.KafkaStreams";
    static final String MESSAGE = "Replacing thread in the streams uncaught exception handler";

    private final boolean debug;

    public ReplacedThreadFilter() {
        this(System.getenv("LOBSTREAM_DEBUG") != null);
    }

    ReplacedThreadFilter(boolean debug) {
        this.debug = debug;
    }

    @Override
    public FilterReply decide(ILoggingEvent event) {
        // Kafka Streams' log context puts its client before the message: "stream-client [id] Replacing thread ..."
        return !debug && LOGGER.equals(event.getLoggerName()) && event.getMessage() != null && event.getMessage().endsWith(MESSAGE)
                ? FilterReply.DENY : FilterReply.NEUTRAL;
    }
}
