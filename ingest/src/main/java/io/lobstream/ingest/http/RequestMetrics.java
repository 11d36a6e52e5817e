package io.lobstream.ingest.http;

import com.sun.net.httpserver.Filter;
import com.sun.net.httpserver.HttpExchange;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;

import java.io.IOException;
import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.Locale;
import java.util.Set;
import java.util.stream.LongStream;

/**
 * {@code lob_http_requests_seconds{endpoint, method, status}}: each request to one endpoint of the node's HTTP API, from
 * its headers read to its answer's last byte written (a value's streaming too) or the connection cut. Every tag is
 * bounded: the endpoint is the context's path ({@code /lobs/}, never a LOB's id), a method other than those the API
 * answers counts as {@code OTHER}, and the status is its class ({@code 2xx} ... {@code 5xx}), or {@code none} for an
 * answer that never began (a handler that threw, a client gone).
 */
final class RequestMetrics extends Filter {
    private static final Set<String> METHODS = Set.of("GET", "HEAD");
    /** From a local 404 to a value of a GiB streamed to a slow client. */
    private static final Duration[] BUCKETS = LongStream.of(1, 5, 10, 50, 100, 500, 1_000, 5_000, 10_000, 60_000)
            .mapToObj(ms -> Duration.of(ms, ChronoUnit.MILLIS)).toArray(Duration[]::new);

    private final MeterRegistry registry;
    private final String endpoint;

    RequestMetrics(MeterRegistry registry, String endpoint) {
        this.registry = registry;
        this.endpoint = endpoint;
    }

    @Override
    public void doFilter(HttpExchange exchange, Chain chain) throws IOException {
        long start = System.nanoTime();
        try {
            chain.doFilter(exchange);
        } finally {
            String method = exchange.getRequestMethod().toUpperCase(Locale.ROOT);
            int code = exchange.getResponseCode();
            Timer.builder("lob_http_requests_seconds").tag("endpoint", endpoint).tag("method", METHODS.contains(method) ? method : "OTHER")
                    .tag("status", code < 100 || code > 599 ? "none" : code / 100 + "xx").serviceLevelObjectives(BUCKETS)
                    .description("Requests to the node's HTTP API, by endpoint, method and status class").register(registry)
                    .record(Duration.ofNanos(System.nanoTime() - start));
        }
    }

    @Override
    public String description() {
        return "lob_http_requests_seconds";
    }
}
