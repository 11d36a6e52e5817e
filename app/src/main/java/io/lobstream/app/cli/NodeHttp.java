package io.lobstream.app.cli;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Optional;

/** A small client of a node's HTTP API. */
final class NodeHttp {
    private final String base;
    /** How long a request waits for the response's headers (a body streams for as long as it takes). */
    private static final Duration TIMEOUT = Duration.ofSeconds(30);
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    NodeHttp(String base) {
        this.base = base.endsWith("/") ? base.substring(0, base.length() - 1) : base;
    }

    HttpResponse<InputStream> get(String lobId, String range) throws IOException, InterruptedException {
        HttpRequest.Builder b = HttpRequest.newBuilder(lobUri(lobId)).timeout(TIMEOUT).GET();
        if (range != null) {
            b.header("Range", "bytes=" + range);
        }
        return send(b.build(), HttpResponse.BodyHandlers.ofInputStream());
    }

    private <T> HttpResponse<T> send(HttpRequest request, HttpResponse.BodyHandler<T> body) throws IOException, InterruptedException {
        try {
            return http.send(request, body);
        } catch (java.net.ConnectException | java.net.http.HttpConnectTimeoutException e) {
            throw new IOException("no node answers at " + base, e);
        } catch (java.net.http.HttpTimeoutException e) {
            throw new IOException("the node at " + base + " did not answer within " + TIMEOUT.toSeconds() + " s", e);
        }
    }

    /** The current version (ETag) of a LOB, empty if it has none. */
    Optional<String> etag(String lobId) throws IOException, InterruptedException {
        HttpResponse<Void> r = send(HttpRequest.newBuilder(lobUri(lobId)).timeout(TIMEOUT).method("HEAD", HttpRequest.BodyPublishers.noBody()).build(),
                HttpResponse.BodyHandlers.discarding());
        if (r.statusCode() == 404) {
            return Optional.empty();
        }
        if (r.statusCode() != 200) {
            throw new IOException("HEAD " + lobId + ": HTTP " + r.statusCode());
        }
        return r.headers().firstValue("ETag");
    }

    String getText(String path) throws IOException, InterruptedException {
        HttpResponse<String> r = send(HttpRequest.newBuilder(URI.create(base + path)).timeout(TIMEOUT).GET().build(), HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != 200) {
            throw new IOException("GET " + path + ": HTTP " + r.statusCode() + " " + r.body());
        }
        return r.body();
    }

    private URI lobUri(String lobId) {
        return URI.create(base + "/lobs/" + URLEncoder.encode(lobId, StandardCharsets.UTF_8).replace("+", "%20"));
    }

    String base() {
        return base;
    }
}
