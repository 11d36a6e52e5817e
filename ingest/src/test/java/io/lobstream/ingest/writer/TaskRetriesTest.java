package io.lobstream.ingest.writer;

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

    @Test
    void aTaskThatFailsAgainAndAgainWaitsLongerAtItsInitAndAQuietSpellStartsAgain() {
        TaskRetries retries = new TaskRetries();
        long now = 0;
        assertThat(retries.failed(3, now)).isEqualTo(Duration.ZERO);
        assertThatCode(() -> retries.awaitRetry(3, 0)).doesNotThrowAnyException();
        assertThat(retries.failed(3, now += S)).isEqualTo(Duration.ofSeconds(1));
        assertThat(retries.failed(3, now += S)).isEqualTo(Duration.ofSeconds(2));
        long at = now;
        assertThatThrownBy(() -> retries.awaitRetry(3, at + S)).isInstanceOf(LockException.class)
                .hasMessage("partition 3: its task failed 3 times in a row (logged); it starts again in 1 s");
        assertThatCode(() -> retries.awaitRetry(3, at + 2 * S)).doesNotThrowAnyException();
        assertThatCode(() -> retries.awaitRetry(4, at)).as("another partition").doesNotThrowAnyException();
        for (int i = 0; i < 40; i++) {
            retries.failed(3, now += S);
        }
        assertThat(retries.failed(3, now += S)).isEqualTo(TaskRetries.MAX);
        assertThat(retries.failed(3, now + TaskRetries.QUIET.toNanos() + 1)).isEqualTo(Duration.ZERO);
    }

    @Test
    void aFullDiskIsToldFromItsCause() {
        assertThat(TaskRetries.diskFull(new UncheckedIOException("partition 3 offset 7",
                new IOException("writing page 12 of /d/p-3/lobs.pages: No space left on device")))).isTrue();
        assertThat(TaskRetries.diskFull(new IllegalStateException("other"))).isFalse();
        assertThat(TaskRetries.messages(new UncheckedIOException("partition 3 offset 7", new IOException("writing page 12: No space"))))
                .isEqualTo("partition 3 offset 7: writing page 12: No space");
    }
}
