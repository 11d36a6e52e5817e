package io.lobstream.app.logging;

import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.filter.Filter;
import ch.qos.logback.core.spi.FilterReply;

import java.util.Map;

/**
 * Drops Kafka Streams' own reports of a writer task that failed. The writer has already said why (the ingest module's
 * {@code WriterThreadFailures}, and {@code LobStateStore} for a task that fails again), in one line where the cause says
 * it all (a registry away, a full disk), with the stack trace where it does not; Kafka Streams repeats the failure three
 * times at ERROR, twice with the whole stack trace: about a hundred lines at each retry of a partition whose disk is full
 * or whose registry is away for minutes, and an alert on "Exception" at each. With {@code LOBSTREAM_DEBUG} on ({@link DebugSwitch}), they are
 * kept.
 */
public final class EchoedFailureFilter extends Filter<ILoggingEvent> {
    /** Logger, and words of its message (after Kafka's log context: "stream-client [id] ", "stream-thread [name] "). */
    static final Map<String, String> ECHOES = Map.of(
            "org.apache.kafka.streams.KafkaStreams", "Replacing thread in the streams uncaught exception handler",
            // "Failed to process (or punctuate) stream task 0_5 due to the following error:", not the same words "since it
            // got migrated" (a task fenced as a zombie), which the writer does not report
            "org.apache.kafka.streams.processor.internals.TaskExecutor", "due to the following error",
            "org.apache.kafka.streams.processor.internals.ProcessorNode", "Processing exception handler is set to fail",
            "org.apache.kafka.streams.processor.internals.StreamTask", "Processing exception handler is set to fail"); // punctuation

    private final boolean debug;

    public EchoedFailureFilter() {
        this(DebugSwitch.on());
    }

    EchoedFailureFilter(boolean debug) {
        this.debug = debug;
    }

    @Override
    public FilterReply decide(ILoggingEvent event) {
        String words = debug || event.getMessage() == null ? null : ECHOES.get(event.getLoggerName());
        return words != null && event.getMessage().contains(words) ? FilterReply.DENY : FilterReply.NEUTRAL;
    }
}
