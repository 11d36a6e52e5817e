package io.lobstream.schema.serde;

import io.apicurio.rest.client.JdkHttpClient;
import io.apicurio.rest.client.auth.Auth;
import io.apicurio.rest.client.error.RestClientErrorHandler;
import io.apicurio.rest.client.request.Request;
import io.apicurio.rest.client.spi.ApicurioHttpClient;
import io.apicurio.rest.client.spi.ApicurioHttpClientFactory;
import io.lobstream.schema.LobStreamConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Apicurio's HTTP client (the JDK's, with its TLS, headers and auth as configured) with a time limit on each request,
 * {@link LobStreamConfig#REGISTRY_REQUEST_TIMEOUT_MS}. Apicurio 2.6's client sets none: a registry that takes the
 * connection and never answers (a hung process, a balancer holding requests for a backend that is gone) held the thread
 * that asked until it did. That was a writer's stream thread, which then missed {@code max.poll.interval.ms}; a purge
 * worker's loop, which {@code close()} cannot wake; or a producer's {@code send}, past its {@code max.block.ms}.
 *
 * <p>The request runs on a thread of its own, interrupted when its time is up, and the caller gets a
 * {@link RegistryUnavailableException}: retried as any outage, never a dead letter. Its answer is read whole there too: a
 * schema's content comes back as a stream the resolver would read later, on the caller's thread, with no limit. A thread
 * hop per request costs nothing that matters: the serdes look a schema up once and keep it a day.
 *
 * <p>Interrupted while it waits for the answer's headers, the JDK's client cancels the exchange and the thread is free.
 * Interrupted while it reads the answer's body, it goes on reading (the JDK's response stream ignores interrupts) until
 * the connection ends: a registry that sends headers and then stalls holds that thread. At most {@link #IN_FLIGHT}
 * requests run at once; past that one fails at once, saying so, rather than one more thread being held.
 */
public final class RegistryHttpClient implements ApicurioHttpClient {
    private static final Logger log = LoggerFactory.getLogger(RegistryHttpClient.class);
    private static final AtomicInteger THREADS = new AtomicInteger();
    /** Shared by every client in the JVM; its threads end after a minute idle. */
    private static final ExecutorService REQUESTS = Executors.newCachedThreadPool(task -> {
        Thread t = new Thread(task, "lob-registry-request-" + THREADS.incrementAndGet());
        t.setDaemon(true);
        return t;
    });
    /** Requests running at once, held ones included. */
    static final int IN_FLIGHT = 64;
    private static final Semaphore RUNNING = new Semaphore(IN_FLIGHT);
    private static boolean installTried;
    /**
     * The time limit of the serde being configured on this thread. Apicurio makes its identity server's client (the one
     * that asks for a token, {@code apicurio.auth.service.token.endpoint}) inside the serde's configure, without the serde's
     * settings: that client takes the limit from here, not the key's default.
     */
    private static final ThreadLocal<Long> CONFIGURING = new ThreadLocal<>();

    private final ApicurioHttpClient delegate;
    /** The registry's address as messages say it: without a user and password given in it. */
    private final String endpoint;
    private final long timeoutMs;
    /** Headers for this thread's next request (the interface's contract), carried to the thread that sends it. */
    private final ThreadLocal<Map<String, String>> nextHeaders = ThreadLocal.withInitial(Map::of);

    RegistryHttpClient(ApicurioHttpClient delegate, String endpoint, long timeoutMs) {
        this.delegate = delegate;
        this.endpoint = LobStreamConfig.withoutUserInfo(endpoint, endpoint);
        this.timeoutMs = timeoutMs;
    }

    /**
     * Makes this the HTTP client of every Apicurio registry client the JVM makes from now on: LobStream's serdes call it
     * before they make theirs. Apicurio takes the first provider set, or found on the class path at its first client;
     * a JVM that made a registry client before loading LobStream's serdes keeps Apicurio's, without a time limit, and is
     * warned once.
     */
    public static synchronized void install() {
        if (!installTried) {
            installTried = true;
            if (!ApicurioHttpClientFactory.setProvider(RegistryHttpClient::create)) {
                log.warn("an Apicurio HTTP client provider was in place before LobStream's serdes were loaded: requests to the "
                        + "schema registry have no time limit ({} is not applied)", LobStreamConfig.REGISTRY_REQUEST_TIMEOUT_MS.name());
            }
        }
    }

    /**
     * A provider's {@code create}. The registry's client gets the serde's settings ({@code serdeConfig()} names the time
     * limit); the identity server's gets none, and takes the limit of the serde configured on this thread
     * ({@link #configuring}).
     */
    static ApicurioHttpClient create(String endpoint, Map<String, Object> configs, Auth auth, RestClientErrorHandler errorHandler) {
        Long serdes = CONFIGURING.get();
        long timeoutMs = configs.containsKey(LobStreamConfig.REGISTRY_REQUEST_TIMEOUT_MS.name()) || serdes == null
                ? LobStreamConfig.REGISTRY_REQUEST_TIMEOUT_MS.from(configs) : serdes;
        return new RegistryHttpClient(new JdkHttpClient(endpoint, configs, auth, errorHandler), endpoint, timeoutMs);
    }

    /** Runs a serde's {@code configure}: the clients Apicurio makes in it without the serde's settings take its time limit. */
    public static void configuring(Map<String, ?> configs, Runnable configure) {
        Long before = CONFIGURING.get();
        CONFIGURING.set((long) LobStreamConfig.REGISTRY_REQUEST_TIMEOUT_MS.from(configs));
        try {
            configure.run();
        } finally {
            if (before == null) {
                CONFIGURING.remove();
            } else {
                CONFIGURING.set(before);
            }
        }
    }

    /** This client's time limit per request. */
    long timeoutMs() {
        return timeoutMs;
    }

    @Override
    public <T> T sendRequest(Request<T> request) {
        Map<String, String> headers = nextHeaders.get();
        nextHeaders.remove();
        if (!RUNNING.tryAcquire()) {
            throw new RegistryUnavailableException("the schema registry at " + endpoint + ": " + IN_FLIGHT + " requests to schema "
                    + "registries run at once in this JVM (some may be past their time limit, still reading an answer that "
                    + "stalled); " + request.getOperation() + " " + request.getRequestPath() + " not sent", null);
        }
        // the permit goes back once: at the task's end, or at its cancel if it never started (a cancelled task never runs)
        AtomicBoolean started = new AtomicBoolean();
        Future<T> answer;
        try {
            answer = REQUESTS.submit(() -> {
                if (!started.compareAndSet(false, true)) {
                    return null; // cancelled before it started: its caller has gone
                }
                try {
                    delegate.setNextRequestHeaders(headers);
                    return readWhole(delegate.sendRequest(request));
                } finally {
                    RUNNING.release();
                }
            });
        } catch (RuntimeException e) {
            RUNNING.release();
            throw e;
        }
        try {
            return answer.get(timeoutMs, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            cancel(answer, started);
            throw new RegistryUnavailableException("the schema registry at " + endpoint + " did not answer " + request.getOperation()
                    + " " + request.getRequestPath() + " within " + timeoutMs + " ms ("
                    + LobStreamConfig.REGISTRY_REQUEST_TIMEOUT_MS.name() + ")", null);
        } catch (InterruptedException e) {
            cancel(answer, started);
            Thread.currentThread().interrupt();
            throw new RegistryUnavailableException("interrupted while waiting for the schema registry at " + endpoint, e);
        } catch (ExecutionException e) {
            // thrown on as the client threw it: how it is judged (no such schema, a refusal, a failure to answer) depends on its type
            Throwable cause = e.getCause();
            if (cause instanceof RuntimeException r) {
                throw r;
            }
            if (cause instanceof Error err) {
                throw err;
            }
            throw new RegistryUnavailableException("the schema registry at " + endpoint + ": " + cause, cause);
        }
    }

    private static void cancel(Future<?> answer, AtomicBoolean started) {
        answer.cancel(true);
        if (started.compareAndSet(false, true)) {
            RUNNING.release(); // never to run
        }
    }

    /** A stream (a schema's content) read here, within the time limit, not later by the resolver without one. */
    @SuppressWarnings("unchecked")
    private static <T> T readWhole(T answer) throws IOException {
        if (answer instanceof InputStream in) {
            try (in) {
                return (T) new ByteArrayInputStream(in.readAllBytes());
            }
        }
        return answer;
    }

    @Override
    public void setNextRequestHeaders(Map<String, String> headers) {
        nextHeaders.set(headers);
    }

    @Override
    public Map<String, String> getHeaders() {
        return nextHeaders.get();
    }

    @Override
    public void close() {
        delegate.close();
    }
}
