package io.lobstream.ingest.writer;

import io.lobstream.store.DiskErrors;
import io.lobstream.store.LaterFormatException;
import org.apache.kafka.streams.errors.LockException;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class TaskRetriesTest {
    private static final long S = 1_000_000_000L;
    private static final RuntimeException DISK = new UncheckedIOException("partition 3: commit", new IOException("No space left on device"));

    @Test
    void aTaskThatFailsAgainAndAgainWaitsLongerAtItsInitAndAQuietSpellStartsAgain() {
        TaskRetries retries = new TaskRetries();
        long now = 0;
        assertThat(retries.failed(3, DISK, now)).isEqualTo(Duration.ZERO);
        assertThatCode(() -> retries.awaitRetry(3, 0)).doesNotThrowAnyException();
        assertThat(retries.failed(3, DISK, now += S)).isEqualTo(Duration.ofSeconds(1));
        assertThat(retries.failed(3, DISK, now += S)).isEqualTo(Duration.ofSeconds(2));
        long at = now;
        assertThatThrownBy(() -> retries.awaitRetry(3, at + S)).isInstanceOf(LockException.class)
                .hasMessage("partition 3: its task failed 3 times in a row (logged); it starts again in 1 s");
        assertThatCode(() -> retries.awaitRetry(3, at + 2 * S)).doesNotThrowAnyException();
        assertThatCode(() -> retries.awaitRetry(4, at)).as("another partition").doesNotThrowAnyException();
        for (int i = 0; i < 40; i++) {
            retries.failed(3, DISK, now += S);
        }
        assertThat(retries.failed(3, DISK, now += S)).isEqualTo(TaskRetries.MAX);
        assertThat(retries.failed(3, DISK, now + TaskRetries.QUIET.toNanos() + 1)).isEqualTo(Duration.ZERO);
    }

    /** What {@code status} shows: a partition whose task failed and has not started since, with why and when it tries again. */
    @Test
    void aTaskWaitsFromItsFailureToItsNextStart() {
        TaskRetries retries = new TaskRetries();
        retries.failed(3, DISK, 0);
        retries.failed(3, DISK, S);
        assertThat(retries.waiting(S)).containsExactly(new TaskFailure(3, "task", 2, "partition 3: commit: No space left on device",
                Duration.ofSeconds(1)));
        assertThat(retries.waiting(3 * S)).extracting(TaskFailure::nextTryIn).containsExactly(Duration.ZERO);
        retries.started(3);
        assertThat(retries.waiting(3 * S)).isEmpty();
        assertThat(retries.failed(3, DISK, 4 * S)).as("still in a row").isEqualTo(Duration.ofSeconds(2));
        assertThat(retries.waiting(6 * S + TaskRetries.OVERDUE.toNanos())).hasSize(1);
        assertThat(retries.waiting(6 * S + TaskRetries.OVERDUE.toNanos() + 1)).as("moved to another node").isEmpty();
    }

    /** A rolled-back node's copies are sound: its log must not advise moving them aside (a rebuild would throw them away). */
    @Test
    void aLaterReleasesFormatIsToldFromItsCause() {
        assertThat(TaskRetries.laterFormat(new UncheckedIOException("cannot open tablespace of partition 3",
                new LaterFormatException("tablespace /d/p-3", 9, 2)))).isTrue();
        assertThat(TaskRetries.laterFormat(DISK)).isFalse();
    }

    @Test
    void aFullDiskIsToldFromItsCause() {
        assertThat(DiskErrors.full(new UncheckedIOException("partition 3 offset 7",
                new IOException("writing page 12 of /d/p-3/lobs.pages: No space left on device")))).isTrue();
        assertThat(DiskErrors.full(new IllegalStateException("other"))).isFalse();
        assertThat(DiskErrors.readOnly(new UncheckedIOException("partition 3", new IOException("/d/p-3/x: Read-only file system"))))
                .isTrue();
        assertThat(TaskRetries.messages(new UncheckedIOException("partition 3 offset 7", new IOException("writing page 12: No space"))))
                .isEqualTo("partition 3 offset 7: writing page 12: No space");
    }

    /** Said in /status and in dead-letter reasons: no "null" for an exception without a message, no cause said twice. */
    @Test
    void messagesSayNoNullAndNoWrappedCauseTwice() {
        assertThat(TaskRetries.messages(new IOException("reading the log's end", new java.util.concurrent.ExecutionException(
                new org.apache.kafka.common.errors.TimeoutException("Timed out waiting for a node assignment. Call: listOffsets")))))
                .isEqualTo("reading the log's end: Timed out waiting for a node assignment. Call: listOffsets");
        assertThat(TaskRetries.messages(new java.util.concurrent.TimeoutException())).isEqualTo("TimeoutException");
        assertThat(TaskRetries.messages(new IllegalStateException("registry at https://ann:s3/cr@t@registry:8081/apis/ccompat/v7 "
                + "refused", new java.io.IOException("Server returned HTTP response code: 401 for URL: http://ann:pw@registry/x"))))
                .as("a URL's user and password, whatever the password holds, masked")
                .isEqualTo("registry at https://***@registry:8081/apis/ccompat/v7 refused: Server returned HTTP response code: 401 for "
                        + "URL: http://***@registry/x");
        assertThat(TaskRetries.messages(new IllegalStateException("x", new NullPointerException()))).isEqualTo("x: NullPointerException");
    }

    /** The JDK's exception for a file this user may not open is its path alone: /status and the log said no more. */
    @Test
    void aFileThisUserMayNotOpenIsSaidSoNotOnlyNamed() {
        UncheckedIOException e = new UncheckedIOException("cannot open tablespace of partition 3",
                new java.nio.file.AccessDeniedException("/d/tablespaces/p-3/lob.pages"));
        assertThat(TaskRetries.messages(e)).isEqualTo("cannot open tablespace of partition 3: permission denied: /d/tablespaces/p-3/lob.pages");
        assertThat(DiskErrors.denied(e)).isTrue();
        assertThat(DiskErrors.denied(new IOException("While opening a file for sequentially reading: /d/index/CURRENT: Permission denied")))
                .as("RocksDB's words").isTrue();
        assertThat(DiskErrors.denied(new IOException("/d/p-3/lob.pages: No space left on device"))).isFalse();
        assertThat(DiskErrors.fileProblem(new java.nio.file.NoSuchFileException("/d/p-3", null, "no tablespace here")))
                .as("a reason its thrower gave is kept").isEqualTo("no such file or directory (no tablespace here): /d/p-3");
    }
}
