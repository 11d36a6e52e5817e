package io.lobstream.ingest.http;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import com.sun.net.httpserver.HttpServer;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.jvm.ClassLoaderMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.core.instrument.binder.system.UptimeMetrics;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Executors;

/**
 * {@code GET /metrics} in the Prometheus text format: the node serves it beside its LOB API, and
 * a standalone purge worker ({@code lobstream purge --metrics-port}) serves it alone.
 */
public final class MetricsEndpoint implements HttpHandler {
    /** Threads of a standalone endpoint: a scraper or two, and a client that stalls, at once. */
    private static final int THREADS = 4;

    private final PrometheusMeterRegistry registry;
    /** The node's, whose threads a client that reads nothing would hold; null for a standalone endpoint, its threads its own. */
    private final StallWatchdog stalls;

    MetricsEndpoint(PrometheusMeterRegistry registry, StallWatchdog stalls) {
        this.registry = registry;
        this.stalls = stalls;
    }

    /** Starts a server with only {@code /metrics} on {@code host:port} (port 0: any free one); see {@link HttpServer#getAddress()}. */
    public static HttpServer serve(PrometheusMeterRegistry registry, String host, int port) throws IOException {
        HttpServer server = HttpServers.create(new InetSocketAddress(host, port), 0);
        server.createContext("/metrics", new MetricsEndpoint(registry, null));
        // Not the JDK's default, the dispatcher thread itself: a client that sent half a request, or stopped reading a
        // scrape, would hold every other scrape and connection behind it. Daemons: stop() leaves them idle, no more.
        server.setExecutor(Executors.newFixedThreadPool(THREADS, r -> {
            Thread t = new Thread(r, "lob-metrics-http");
            t.setDaemon(true);
            return t;
        }));
        server.start();
        return server;
    }

    /**
     * Binds the process's own meters (JVM memory, GC pauses, threads, classes, CPU, uptime: Micrometer's {@code jvm_*},
     * {@code process_*}, {@code system_*}) to {@code registry}; close the result when the process's meters go, as the
     * GC meter listens to the JVM until then.
     */
    public static AutoCloseable bindProcessMetrics(MeterRegistry registry) {
        new JvmMemoryMetrics().bindTo(registry);
        new JvmThreadMetrics().bindTo(registry);
        new ClassLoaderMetrics().bindTo(registry);
        new ProcessorMetrics().bindTo(registry);
        new UptimeMetrics().bindTo(registry);
        JvmGcMetrics gc = new JvmGcMetrics();
        gc.bindTo(registry);
        return gc;
    }

    @Override
    public void handle(HttpExchange ex) throws IOException {
        try (ex) {
            if (Responses.readOnly(ex, stalls)) {
                Responses.send(ex, 200, "text/plain; version=0.0.4; charset=utf-8", registry.scrape().getBytes(StandardCharsets.UTF_8),
                        stalls);
            }
        }
    }
}
