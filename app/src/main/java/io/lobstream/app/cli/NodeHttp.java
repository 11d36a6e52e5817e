package io.lobstream.app.cli;

import io.lobstream.ingest.http.LobHttpServer;

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
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    NodeHttp(String base) {
        this.base = base.endsWith("/") ? base.substring(0, base.length() - 1) : base;
    }

    HttpResponse<InputStream> get(String lobId, String range) throws IOException, InterruptedException {
        HttpRequest.Builder b = HttpRequest.newBuilder(lobUri(lobId)).GET();
        if (range != null) {
            b.header("Range", "bytes=" + range);
        }
        return http.send(b.build(), HttpResponse.BodyHandlers.ofInputStream());
    }

    /**
     * What {@code HEAD /lobs/{id}} says: the current version (ETag), empty if the LOB has none,
     * and the offset of the id's lob.commands partition the writer has applied (-1 if not said).
     */
    record Head(Optional<String> etag, long appliedOffset) {
    }

    Head head(String lobId) throws IOException, InterruptedException {
        HttpResponse<Void> r = http.send(HttpRequest.newBuilder(lobUri(lobId)).method("HEAD", HttpRequest.BodyPublishers.noBody()).build(),
                HttpResponse.BodyHandlers.discarding());
        if (r.statusCode() != 200 && r.statusCode() != 404) {
            throw new IOException("HEAD " + lobId + ": HTTP " + r.statusCode());
        }
        long applied = r.headers().firstValueAsLong(LobHttpServer.APPLIED_OFFSET).orElse(-1);
        return new Head(r.statusCode() == 404 ? Optional.empty() : r.headers().firstValue("ETag"), applied);
    }

    String getText(String path) throws IOException, InterruptedException {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(base + path)).GET().build(), HttpResponse.BodyHandlers.ofString());
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
