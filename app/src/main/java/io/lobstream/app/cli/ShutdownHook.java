package io.lobstream.app.cli;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * What a long-running command ({@code node}, {@code cluster}, {@code demo}) has started, closed newest first by
 * a shutdown hook registered before anything starts. A SIGTERM or Ctrl-C that comes during the
 * 10–20 s start then waits for the step under way (up to {@link #START_GRACE}, or the command's own grace: the
 * demo's is longer, as its temporary directory goes last): the start takes no
 * further step ({@link #checkNotStopping}; what a step started after the signal is closed at once),
 * and the hook closes what has started; a hook registered only once started would leave the broker
 * and the writer to the JVM's exit, which their files survive but their group and their clients do
 * not notice until timeouts run out.
 */
final class ShutdownHook implements AutoCloseable {
    static final Duration START_GRACE = Duration.ofSeconds(60);
    /**
     * Said as a stop begins: the first line of the close's own comes only once the purge workers have stopped, up to 26 s
     * later, and a user who sees nothing meanwhile sends a kill -9, which leaves the tablespaces to recover as after a crash.
     */
    static final String STOPPING = "lobstream: stopping (SIGTERM or Ctrl-C): closing what started, newest first, which can take "
            + "a minute or two; a kill -9 meanwhile leaves tablespaces to recover at their next open, as after a crash";

    private final Deque<AutoCloseable> started = new ArrayDeque<>();
    private final CountDownLatch startEnded = new CountDownLatch(1);
    private final CompletableFuture<Void> closed = new CompletableFuture<>();
    private boolean closing;
    /** Set as the hook begins: the start, still under way, takes no further step (a writer joining its group only to leave it). */
    private volatile boolean stopRequested;
    private Thread thread;
    private Duration startGrace = START_GRACE;

    ShutdownHook() { // tests: one not registered
    }

    static ShutdownHook register(String name) {
        return register(name, START_GRACE);
    }

    /**
     * @param startGrace how long a stop waits for the step of the start under way: longer than that step's longest
     *                   where what closes after it must not run before it ends (the demo's temporary directory, deleted
     *                   under a broker whose registry may take 120 s to come up)
     */
    static ShutdownHook register(String name, Duration startGrace) {
        ShutdownHook hook = new ShutdownHook();
        hook.startGrace = startGrace;
        hook.thread = new Thread(hook::onShutdown, name);
        Runtime.getRuntime().addShutdownHook(hook.thread);
        return hook;
    }

    /**
     * For a command that ends on its own (the demo): closes what has started, newest first, and takes the hook back, so
     * that the JVM's exit does not run it (nor a run of tests keep one per command).
     */
    @Override
    public void close() {
        closeAll();
        if (thread != null) {
            try {
                Runtime.getRuntime().removeShutdownHook(thread);
            } catch (IllegalStateException shuttingDown) {
                // the hook is running, or has: it closed the same
            }
        }
    }

    /** Adds a resource just started; one started after the shutdown closed everything is closed at once. */
    <T extends AutoCloseable> T started(T resource) {
        synchronized (this) {
            if (!closing && !stopRequested) {
                started.push(resource);
                return resource;
            }
        }
        closeQuietly(resource);
        throw stopping();
    }

    /** Before a step of the start: throws if a stop was asked for meanwhile, so the step is not taken. */
    void checkNotStopping() {
        if (stopRequested) {
            throw stopping();
        }
    }

    private static IllegalStateException stopping() {
        return new IllegalStateException("stopping: the JVM is shutting down");
    }

    /** The start is over, done or failed: a shutdown waiting for it goes on. */
    void startEnded() {
        startEnded.countDown();
    }

    /** Until the shutdown hook has closed everything. */
    void awaitClosed() throws InterruptedException {
        awaitClosedOr(new CompletableFuture<>());
    }

    /**
     * Until the shutdown hook has closed everything, or {@code stopped} completes with why what runs stopped on its own
     * (a writer that reached Kafka Streams' ERROR state): then everything is closed here and the reason returned, for the
     * command to exit non-zero instead of serving on with nothing applying.
     */
    Optional<String> awaitClosedOr(CompletableFuture<String> stopped) throws InterruptedException {
        try {
            CompletableFuture.anyOf(closed, stopped).get();
        } catch (ExecutionException e) {
            // stopped exceptionally: stopped all the same
        }
        if (closed.isDone()) {
            return Optional.empty();
        }
        closeAll();
        return Optional.of(stopped.handle((why, e) -> why != null ? why : String.valueOf(e)).join());
    }

    /** Closes what has started, newest first; later calls close nothing more. */
    synchronized void closeAll() {
        closing = true;
        while (!started.isEmpty()) {
            closeQuietly(started.pop());
        }
    }

    void onShutdown() {
        stopRequested = true;
        if (!LobStreamCli.commandEnded()) { // a command that ended on its own (a failed start, a writer stopped) exits through here too
            System.err.println(STOPPING);
        }
        try {
            startEnded.await(startGrace.toSeconds(), TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        closeAll();
        closed.complete(null);
    }

    private static void closeQuietly(AutoCloseable resource) {
        try {
            resource.close();
        } catch (Exception e) { // closing goes on with the rest
            System.err.println("lobstream: closing " + resource.getClass().getSimpleName() + " failed: " + e);
        }
    }
}
