package io.lobstream.app.cli;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

class ShutdownHookTest {
    private final List<String> closed = Collections.synchronizedList(new ArrayList<>());

    private AutoCloseable resource(String name) {
        return () -> closed.add(name);
    }

    @Test
    void closesNewestFirstAndGoesOnPastOneThatFails() {
        ShutdownHook hook = new ShutdownHook();
        hook.started(resource("cluster"));
        hook.started(() -> {
            throw new IllegalStateException("refused");
        });
        hook.started(resource("purge"));
        hook.closeAll();
        hook.closeAll();
        assertThat(closed).containsExactly("purge", "cluster");
    }

    @Test
    void aResourceStartedAfterTheShutdownIsClosedAtOnce() {
        ShutdownHook hook = new ShutdownHook();
        hook.closeAll();
        assertThatThrownBy(() -> hook.started(resource("node"))).isInstanceOf(IllegalStateException.class).hasMessageContaining("stopping");
        assertThat(closed).containsExactly("node");
    }

    /** A Ctrl-C during the start: the hook waits for the step under way, then closes it too. */
    @Test
    void aShutdownDuringTheStartWaitsForItThenClosesWhatStarted() throws Exception {
        ShutdownHook hook = new ShutdownHook();
        hook.started(resource("cluster"));
        Thread shutdown = new Thread(hook::onShutdown);
        shutdown.start();
        // parked in its wait for the start to end (nothing else in onShutdown waits), and has closed nothing
        await().atMost(Duration.ofSeconds(10)).until(() -> shutdown.getState() == Thread.State.TIMED_WAITING);
        assertThat(closed).isEmpty();
        // the start takes no further step: one it asks about is refused, one already taken is closed at once
        assertThatThrownBy(hook::checkNotStopping).hasMessageContaining("stopping");
        assertThatThrownBy(() -> hook.started(resource("node"))).hasMessageContaining("stopping");
        assertThat(closed).containsExactly("node");
        hook.startEnded(); // as the command's catch does
        shutdown.join(TimeUnit.SECONDS.toMillis(10));
        assertThat(closed).containsExactly("node", "cluster");
        hook.awaitClosed(); // returns: the main thread's wait ends
    }

    /** A writer that stopped on its own ends the wait too: what started is closed, and the command learns why. */
    @Test
    void whatStopsOnItsOwnEndsTheWaitAndClosesEverything() throws Exception {
        ShutdownHook hook = new ShutdownHook();
        hook.started(resource("cluster"));
        hook.started(resource("node"));
        hook.startEnded();
        CompletableFuture<String> stopped = new CompletableFuture<>();
        CompletableFuture<Optional<String>> waited = CompletableFuture.supplyAsync(() -> {
            try {
                return hook.awaitClosedOr(stopped);
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        stopped.complete("the writer stopped");
        assertThat(waited.get(10, TimeUnit.SECONDS)).contains("the writer stopped");
        assertThat(closed).containsExactly("node", "cluster");
        hook.onShutdown(); // the exit's hook then: nothing left to close
        assertThat(closed).hasSize(2);
    }

    @Test
    void aShutdownEndsTheWaitWithNoReason() throws Exception {
        ShutdownHook hook = new ShutdownHook();
        hook.startEnded();
        hook.onShutdown();
        assertThat(hook.awaitClosedOr(new CompletableFuture<>())).isEmpty();
    }
}
