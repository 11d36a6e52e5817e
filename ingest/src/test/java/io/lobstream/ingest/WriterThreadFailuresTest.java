package io.lobstream.ingest;

import org.apache.kafka.common.errors.FencedInstanceIdException;
import org.apache.kafka.common.errors.InvalidTxnTimeoutException;
import org.apache.kafka.common.errors.TransactionalIdAuthorizationException;
import org.apache.kafka.streams.errors.MissingSourceTopicException;
import org.apache.kafka.streams.errors.StreamsException;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.concurrent.atomic.AtomicLong;

import static org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.REPLACE_THREAD;
import static org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
import static org.assertj.core.api.Assertions.assertThat;

class WriterThreadFailuresTest {
    private final AtomicLong nanos = new AtomicLong(1);
    private final WriterThreadFailures failures = new WriterThreadFailures(null, nanos::get);

    @Test
    void aTasksFailureReplacesTheThreadAndAnErrorOfTheJvmStopsTheWriter() {
        assertThat(failures.handle(new StreamsException(new UncheckedIOException(new IOException("disk refuses"))))).isEqualTo(REPLACE_THREAD);
        assertThat(failures.handle(new IllegalStateException("a bug"))).isEqualTo(REPLACE_THREAD);
        assertThat(failures.handle(new StreamsException(new OutOfMemoryError("Java heap space")))).isEqualTo(SHUTDOWN_CLIENT);
    }

    /** What it handled is reported; the process's handler of the thread's death, which sees it next, need not say it again. */
    @Test
    void whatItHandledIsKnownReportedAndNothingElse() {
        StreamsException handled = new StreamsException(new UncheckedIOException(new IOException("No space left on device")));
        failures.handle(handled);
        assertThat(LobNode.writerReported(handled)).isTrue();
        assertThat(LobNode.writerReported(new IllegalStateException("a replacement thread that could not be made"))).isFalse();
    }

    /** Another process with this node's id took its static member: replaced, the thread would fence that one in turn. */
    @Test
    void aThreadFencedAsAStaticMemberStopsTheWriter() {
        assertThat(failures.handle(new StreamsException(new FencedInstanceIdException("instance id n1-1 fenced"))))
                .isEqualTo(SHUTDOWN_CLIENT);
    }

    /** Refused by the cluster (an ACL, a transaction timeout over its maximum): a new thread would be refused again. */
    @Test
    void aThreadTheClusterRefusesStopsTheWriter() {
        assertThat(failures.handle(new StreamsException("Error encountered trying to initialize transactions",
                new TransactionalIdAuthorizationException("Transactional Id authorization failed.")))).isEqualTo(SHUTDOWN_CLIENT);
        assertThat(failures.handle(new StreamsException(new InvalidTxnTimeoutException("The transaction timeout is larger than "
                + "the maximum value allowed by the broker")))).isEqualTo(SHUTDOWN_CLIENT);
    }

    /** A topic just made may be missing from a broker's metadata for a moment; a topic deleted stays missing. */
    @Test
    void aSourceTopicMissingStopsTheWriterOnlyWhenItStaysMissingForTheGrace() {
        long grace = WriterThreadFailures.MISSING_TOPIC_GRACE.toNanos();
        assertThat(failures.handle(missing())).isEqualTo(REPLACE_THREAD);
        nanos.addAndGet(grace - 1);
        assertThat(failures.handle(missing())).isEqualTo(REPLACE_THREAD);
        nanos.addAndGet(1);
        assertThat(failures.handle(missing())).isEqualTo(SHUTDOWN_CLIENT);
    }

    @Test
    void anotherFailureInBetweenStartsTheGraceAgain() {
        long grace = WriterThreadFailures.MISSING_TOPIC_GRACE.toNanos();
        assertThat(failures.handle(missing())).isEqualTo(REPLACE_THREAD);
        nanos.addAndGet(grace - 1);
        assertThat(failures.handle(new IllegalStateException("a bug"))).isEqualTo(REPLACE_THREAD);
        nanos.addAndGet(1);
        assertThat(failures.handle(missing())).isEqualTo(REPLACE_THREAD);
        nanos.addAndGet(grace);
        assertThat(failures.handle(missing())).isEqualTo(SHUTDOWN_CLIENT);
    }

    /** A topic missing for a moment at start, and again days later: the second is a new row, with a grace of its own. */
    @Test
    void aMissingTopicLongAfterTheLastStartsTheGraceAgain() {
        long grace = WriterThreadFailures.MISSING_TOPIC_GRACE.toNanos();
        assertThat(failures.handle(missing())).isEqualTo(REPLACE_THREAD);
        nanos.addAndGet(WriterThreadFailures.MISSING_TOPIC_ROW_BREAK.toNanos() + 1);
        assertThat(failures.handle(missing())).isEqualTo(REPLACE_THREAD);
        nanos.addAndGet(grace);
        assertThat(failures.handle(missing())).isEqualTo(SHUTDOWN_CLIENT);
    }

    private static Throwable missing() {
        return new MissingSourceTopicException("One or more source topics were missing during rebalance");
    }
}
