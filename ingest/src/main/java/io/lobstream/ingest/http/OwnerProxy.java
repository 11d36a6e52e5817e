package io.lobstream.ingest.http;

import com.sun.net.httpserver.HttpExchange;
import org.apache.kafka.streams.state.HostInfo;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

/**
 * Serves a read of a key another node owns by streaming that node's answer through: its status,
 * the headers a reader needs (version, range, type, metadata, Retry-After) and its body, read
 * from the owner's socket as it is written to the client's. Nothing is buffered whole, so a
 * 1 GiB value passes through a node with a small heap.
 *
 * <p>The owner's failures keep their meaning for the client: nobody listening (the owner died, or
 * the metadata is stale) is 502, an owner that accepted and said nothing within the read timeout
 * is 504, and a body cut short after the status line went out closes the connection, so the
 * client sees fewer bytes than the Content-Length promised, as for a local read that fails.
 */
final class OwnerProxy {
    private static final Logger log = LoggerFactory.getLogger(OwnerProxy.class);
    /** Marks a request one node sent another: it is answered where it lands, never forwarded again. */
    static final String FORWARDED = "X-LobStream-Forwarded";
    static final String SERVED_BY = "X-LobStream-Served-By";
    /** How long a forwarded request waits for the owner's response headers, and then for each read of the body. */
    static final Duration READ_TIMEOUT = Duration.ofSeconds(30);
    static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(5);
    private static final String[] REQUEST_HEADERS = {"Range", "If-Range"};
    private static final String[] RESPONSE_HEADERS = {"ETag", "Content-Range", "Accept-Ranges", "Content-Type", "Retry-After"};

    private final Duration connectTimeout;
    private final Duration readTimeout;

    OwnerProxy(Duration connectTimeout, Duration readTimeout) {
        this.connectTimeout = connectTimeout;
        this.readTimeout = readTimeout;
    }

    void forward(HttpExchange ex, HostInfo owner, String rawPath) throws IOException {
        Map<String, String> headers = new HashMap<>();
        headers.put(FORWARDED, "1");
        for (String h : REQUEST_HEADERS) {
            String v = ex.getRequestHeaders().getFirst(h);
            if (v != null) {
                headers.put(h, v);
            }
        }
        URI uri = URI.create("http://" + owner.host() + ":" + owner.port() + rawPath);
        boolean answered = false; // once the status line is sent, a failure can only cut the body short
        try (StreamedResponse resp = StreamedResponse.send(uri, ex.getRequestMethod(), headers, connectTimeout, readTimeout)) {
            for (String h : RESPONSE_HEADERS) {
                resp.header(h).ifPresent(v -> ex.getResponseHeaders().add(h, v));
            }
            for (String h : resp.headerNames()) {
                if (h.regionMatches(true, 0, LobHttpServer.META, 0, LobHttpServer.META.length())) {
                    resp.header(h).ifPresent(v -> ex.getResponseHeaders().add(h, v));
                }
            }
            ex.getResponseHeaders().add(SERVED_BY, owner.host() + ":" + owner.port());
            long len = resp.contentLength().orElse(0);
            boolean noBody = ex.getRequestMethod().equals("HEAD") || resp.statusCode() == 416;
            if (noBody) {
                ex.getResponseHeaders().add("Content-Length", Long.toString(len));
            }
            answered = true;
            ex.sendResponseHeaders(resp.statusCode(), noBody || len == 0 ? -1 : len);
            if (!noBody) {
                // not closed here but with the exchange (Responses.cutShort says why)
                resp.body().transferTo(ex.getResponseBody());
            }
        } catch (IOException e) {
            if (answered) {
                log.warn("{} {} forwarded to {}: cut short: {}", ex.getRequestMethod(), rawPath, owner, e.toString());
                Responses.cutShort(ex);
            } else if (e instanceof SocketTimeoutException) {
                Responses.text(ex, 504, "owner " + owner + " did not answer within " + readTimeout.toMillis() + " ms\n");
            } else {
                Responses.text(ex, 502, "owner " + owner + " unreachable: " + e.getMessage() + "\n");
            }
        }
    }
}
