package io.lobstream.app.logging;

import io.lobstream.ingest.LobNode;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.function.Predicate;

/**
 * The process's default handler of an exception that ends a thread: a log line, dated and filtered like the rest, in
 * place of the JVM's bare stack trace on stderr. An exception the writer has reported is at DEBUG: Kafka Streams gives a
 * stream thread's to the writer's handler first ({@link LobNode#writerReported}), which says why, and then lets it end
 * the thread, whose stack trace the JVM printed again at every retry of a failing task. Any other, a stream thread's
 * too (its replacement could not be made), is an ERROR with its stack trace.
 */
public final class ThreadDeaths implements Thread.UncaughtExceptionHandler {
    private static final Logger log = LoggerFactory.getLogger(ThreadDeaths.class);

    private final Predicate<Throwable> reported;

    public ThreadDeaths() {
        this(LobNode::writerReported);
    }

    ThreadDeaths(Predicate<Throwable> reported) {
        this.reported = reported;
    }

    /** Never fails: a check that cannot be made (a class that will not load when memory has run out) says no. */
    private boolean reportedByTheWriter(Throwable e) {
        try {
            return reported.test(e);
        } catch (Throwable cannotTell) {
            return false;
        }
    }

    @Override
    public void uncaughtException(Thread thread, Throwable e) {
        if (reportedByTheWriter(e)) {
            log.debug("{} ended (the writer said why, above)", thread.getName(), e);
        } else {
            log.error("{} ended on an uncaught exception", thread.getName(), e);
        }
    }
}
