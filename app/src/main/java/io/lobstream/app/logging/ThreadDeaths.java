package io.lobstream.app.logging;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The process's default handler of an exception that ends a thread: a log line, dated and filtered like the rest, in
 * place of the JVM's bare stack trace on stderr. A writer stream thread's exception is at DEBUG: Kafka Streams gives it
 * to the writer's handler first (the ingest module's {@code WriterThreadFailures}), which says why, and then lets it
 * end the thread, whose stack trace the JVM printed again at every retry of a failing task.
 */
public final class ThreadDeaths implements Thread.UncaughtExceptionHandler {
    private static final Logger log = LoggerFactory.getLogger(ThreadDeaths.class);
    /** In the name of each of Kafka Streams' stream threads: "CLIENT-ID-StreamThread-N". */
    static final String STREAM_THREAD = "-StreamThread-";

    @Override
    public void uncaughtException(Thread thread, Throwable e) {
        if (thread.getName().contains(STREAM_THREAD)) {
            log.debug("{} ended (the writer said why, above)", thread.getName(), e);
        } else {
            log.error("{} ended on an uncaught exception", thread.getName(), e);
        }
    }
}
