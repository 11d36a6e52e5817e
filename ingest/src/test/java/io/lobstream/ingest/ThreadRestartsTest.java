package io.lobstream.ingest;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;

class ThreadRestartsTest {
    private static final long S = 1_000_000_000L;

    @Test
    void failuresInARowWaitTwiceAsLongEachUpToTheMaximumAndAQuietSpellStartsAgain() {
        ThreadRestarts restarts = new ThreadRestarts();
        long now = 0;
        assertThat(restarts.afterFailure(now)).isEqualTo(Duration.ZERO);
        assertThat(restarts.afterFailure(now += S)).isEqualTo(Duration.ofSeconds(1));
        assertThat(restarts.afterFailure(now += S)).isEqualTo(Duration.ofSeconds(2));
        assertThat(restarts.afterFailure(now += S)).isEqualTo(Duration.ofSeconds(4));
        for (int i = 0; i < 40; i++) {
            restarts.afterFailure(now += S);
        }
        assertThat(restarts.afterFailure(now += S)).isEqualTo(ThreadRestarts.MAX);
        now += ThreadRestarts.QUIET.toNanos() + 1;
        assertThat(restarts.afterFailure(now)).isEqualTo(Duration.ZERO);
        assertThat(restarts.inARow()).isEqualTo(1);
    }

    @Test
    void aFullDiskIsToldFromItsCause() {
        assertThat(ThreadRestarts.diskFull(new UncheckedIOException("partition 3 offset 7",
                new IOException("writing page 12 of /d/p-3/lobs.pages: No space left on device")))).isTrue();
        assertThat(ThreadRestarts.diskFull(new IllegalStateException("other"))).isFalse();
        assertThat(ThreadRestarts.messages(new UncheckedIOException("partition 3 offset 7", new IOException("writing page 12: No space"))))
                .isEqualTo("partition 3 offset 7: writing page 12: No space");
    }
}
