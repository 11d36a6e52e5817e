package io.lobstream.ingest.http;

import com.sun.net.httpserver.HttpServer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/** Each request is timed under its endpoint, method and status class: never a LOB's id, nor a method no one answers. */
class RequestMetricsTest {
    private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
    private HttpServer server;

    @AfterEach
    void stop() {
        server.stop(0);
    }

    @Test
    void requestsAreTimedByEndpointMethodAndStatusClass() throws Exception {
        // the product's: the JDK reads its settings (no Nagle) when the JVM's first server is made, and a plain one made
        // first would leave them off for the other tests of this JVM
        server = HttpServers.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.createContext("/lobs/", ex -> {
            int code = ex.getRequestURI().getPath().endsWith("/missing") ? 404 : 200;
            ex.sendResponseHeaders(code, -1);
            ex.close();
        }).getFilters().add(new RequestMetrics(meters, "/lobs/"));
        server.createContext("/fsck", ex -> {
            throw new IOException("the disk went away");
        }).getFilters().add(new RequestMetrics(meters, "/fsck"));
        server.start();
        HttpClient client = HttpClient.newHttpClient();
        String base = "http://127.0.0.1:" + server.getAddress().getPort();
        client.send(HttpRequest.newBuilder(URI.create(base + "/lobs/a")).GET().build(), HttpResponse.BodyHandlers.discarding());
        client.send(HttpRequest.newBuilder(URI.create(base + "/lobs/b")).GET().build(), HttpResponse.BodyHandlers.discarding());
        client.send(HttpRequest.newBuilder(URI.create(base + "/lobs/missing")).method("HEAD", HttpRequest.BodyPublishers.noBody()).build(),
                HttpResponse.BodyHandlers.discarding());
        client.send(HttpRequest.newBuilder(URI.create(base + "/lobs/a")).method("BREW", HttpRequest.BodyPublishers.noBody()).build(),
                HttpResponse.BodyHandlers.discarding());
        assertThatThrownBy(() -> client.send(HttpRequest.newBuilder(URI.create(base + "/fsck")).GET().build(),
                HttpResponse.BodyHandlers.discarding())).isInstanceOf(IOException.class);

        assertThat(count("/lobs/", "GET", "2xx")).isEqualTo(2);
        assertThat(count("/lobs/", "HEAD", "4xx")).isEqualTo(1);
        assertThat(count("/lobs/", "OTHER", "2xx")).isEqualTo(1);
        // the filter's finally runs after the exchange is cut, which the client may see first; the client tries a GET
        // cut so twice
        await().untilAsserted(() -> assertThat(count("/fsck", "GET", "none")).isPositive());
        assertThat(meters.find("lob_http_requests_seconds").timers()).hasSize(4);
    }

    private long count(String endpoint, String method, String status) {
        var t = meters.find("lob_http_requests_seconds").tag("endpoint", endpoint).tag("method", method).tag("status", status).timer();
        return t == null ? 0 : t.count();
    }
}
