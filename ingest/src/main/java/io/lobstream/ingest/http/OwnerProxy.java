package io.lobstream.ingest.http;

import com.sun.net.httpserver.HttpExchange;
import org.apache.kafka.streams.state.HostInfo;

import java.io.IOException;
import java.io.InputStream;
import java.net.Proxy;
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
    /** Marks a request one node sent another: it is answered where it lands, never forwarded again. */
    static final String FORWARDED = "X-LobStream-Forwarded";
    /** How long a forwarded request waits for the owner's response headers, and then for each read of the body. */
    static final Duration READ_TIMEOUT = Duration.ofSeconds(30);
    static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(5);
    /** Forwarded as they came: their first line, as the owner would read them. */
    private static final String[] REQUEST_HEADERS = {"Range", "If-Range"};
    /** Lists, forwarded whole ({@link Responses#listHeader}). */
    private static final String[] REQUEST_LIST_HEADERS = {"If-Match", "If-None-Match"};
    private static final String[] RESPONSE_HEADERS = {"ETag", "Content-Range", "Accept-Ranges", "Content-Type", "Retry-After"};

    private final Duration connectTimeout;
    private final Duration readTimeout;
    /** Watches the bodies this node sends on, to a client that may stop reading; null: none. */
    private final StallWatchdog stalls;

    OwnerProxy(Duration connectTimeout, Duration readTimeout) {
        this(connectTimeout, readTimeout, null);
    }

    OwnerProxy(Duration connectTimeout, Duration readTimeout, StallWatchdog stalls) {
        this.connectTimeout = connectTimeout;
        this.readTimeout = readTimeout;
        this.stalls = stalls;
    }

    /** @param self this node, as the owner knows it: an owner that cannot serve the request names it in its answer */
    void forward(HttpExchange ex, HostInfo self, HostInfo ownerInfo, String rawPath) throws IOException {
        String owner = LobHttpServer.authority(ownerInfo.host(), ownerInfo.port()); // as the node header names it
        Map<String, String> headers = new HashMap<>();
        // RFC 9110 §7.6.3 would have a gateway send Via, but HttpURLConnection drops it (a restricted header) unless a
        // JVM-wide property allows it: the node's own header names the forwarder instead, and keeps it from forwarding again
        headers.put(FORWARDED, LobHttpServer.authority(self.host(), self.port()));
        for (String h : REQUEST_HEADERS) {
            String v = ex.getRequestHeaders().getFirst(h);
            if (v != null) {
                headers.put(h, v);
            }
        }
        for (String h : REQUEST_LIST_HEADERS) {
            String v = Responses.listHeader(ex.getRequestHeaders(), h);
            if (v != null) {
                headers.put(h, v);
            }
        }
        URI uri = URI.create("http://" + owner + rawPath);
        boolean answered = false; // once the status line is sent, a failure can only cut the body short
        // straight to the owner: a JVM-wide proxy (http.proxyHost, useSystemProxies) is for the way out, not between nodes
        try (StreamedResponse resp = StreamedResponse.send(uri, ex.getRequestMethod(), headers, connectTimeout, readTimeout, Proxy.NO_PROXY)) {
            if (resp.header(LobHttpServer.NODE).isEmpty()) {
                // something else on the owner's address (a static member back on another port, its old one taken): its 404
                // or page must not pass for a node's "no such LOB" or value
                answered = true; // a failure of this answer is not one of the request to the owner
                Responses.text(ex, 502, "owner " + owner + " answered " + resp.statusCode() + " without " + LobHttpServer.NODE
                        + ": what listens there is no LobStream node (until the next rebalance names the owner's new address)\n", stalls);
                return;
            }
            for (String h : RESPONSE_HEADERS) {
                resp.header(h).ifPresent(v -> ex.getResponseHeaders().add(h, v));
            }
            for (String h : resp.headerNames()) {
                if (h.regionMatches(true, 0, LobHttpServer.META, 0, LobHttpServer.META.length())) {
                    resp.header(h).ifPresent(v -> ex.getResponseHeaders().add(h, v));
                }
            }
            ex.getResponseHeaders().add(LobHttpServer.SERVED_BY, owner);
            long len = resp.contentLength().orElse(-1); // -1: the owner did not say, and the body goes on chunked
            int status = resp.statusCode();
            boolean noBody = ex.getRequestMethod().equals("HEAD") || status == 416 || status == 304;
            if (noBody && len >= 0) {
                ex.getResponseHeaders().add("Content-Length", Long.toString(len));
            }
            answered = true;
            StallWatchdog.sendHeaders(stalls, ex, status, noBody || len == 0 ? -1 : len < 0 ? 0 : len);
            if (!noBody) {
                // not closed here but with the exchange (Responses.cutShort says why)
                long sent;
                InputStream fromOwner = new OwnerBody(resp.body());
                if (stalls == null) {
                    sent = fromOwner.transferTo(ex.getResponseBody());
                } else {
                    try (StallWatchdog.Watch w = stalls.watch(ex)) {
                        sent = fromOwner.transferTo(w.body());
                    }
                }
                if (len > 0 && sent < len) { // Java 17's HttpURLConnection ends a body cut short as if it were whole
                    throw new IOException("the owner's answer ended after " + sent + " of " + len + " bytes");
                }
            }
        } catch (IOException e) {
            if (answered) { // the answer under way failed: thrown, for LobHttpServer to cut it short and the server to forget
                // the connection
                throw e instanceof OwnerFailed ? new OwnerFailed("forwarded to " + owner + ": " + e.getMessage(), e)
                        : new IOException("forwarded to " + owner + ": " + e.getMessage(), e);
            } else if (e instanceof SocketTimeoutException) {
                Responses.text(ex, 504, "owner " + owner + " did not answer within " + readTimeout.toMillis() + " ms\n", stalls);
            } else {
                // (its partitions go to another node once its session times out, or come back with it)
                Responses.text(ex, 502, "owner " + owner + " of the LOB's partition unreachable (" + e.getMessage() + "); retry\n",
                        stalls);
            }
        }
    }


    /**
     * The owner's side of a forwarded answer failing (its connection reset, cut short): the node's peer, not the client,
     * so not taken for a client gone away ({@code LobHttpServer.clientGone}), whose words ("Connection reset") it shares.
     */
    static final class OwnerFailed extends IOException {
        OwnerFailed(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /** The owner's body, its read failures told apart from the client's write failures as {@link OwnerFailed}. */
    private static final class OwnerBody extends java.io.FilterInputStream {
        OwnerBody(InputStream in) {
            super(in);
        }

        @Override
        public int read() throws IOException {
            try {
                return super.read();
            } catch (IOException e) {
                throw new OwnerFailed(e.getMessage(), e);
            }
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            try {
                return super.read(b, off, len);
            } catch (IOException e) {
                throw new OwnerFailed(e.getMessage(), e);
            }
        }
    }
}
