package io.lobstream.ingest;

import org.apache.kafka.streams.errors.ErrorHandlerContext;
import org.apache.kafka.streams.errors.ProcessingExceptionHandler;
import org.apache.kafka.streams.processor.api.Record;

import java.util.Map;

/**
 * Fails the task on whatever its processing or punctuation throws, as Kafka Streams' default handler does, without that
 * handler's ERROR and stack trace: the writer reports the failure itself ({@link WriterThreadFailures}, and the task's
 * {@code LobStateStore} when it fails again), once. A bad command never gets here: the writer dead-letters it and goes on,
 * so what does is a failure that must stop the task (a full disk, a registry away), and the only answer is to fail.
 */
public final class ReportedFailureHandler implements ProcessingExceptionHandler {
    @Override
    public Response handleError(ErrorHandlerContext context, Record<?, ?> record, Exception exception) {
        return Response.fail();
    }

    @Override
    public void configure(Map<String, ?> configs) {
        // nothing to configure
    }
}
