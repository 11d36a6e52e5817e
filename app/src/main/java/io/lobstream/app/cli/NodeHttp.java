package io.lobstream.app.cli;

import io.lobstream.ingest.http.LobHttpServer;
import io.lobstream.ingest.http.StreamedResponse;

import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/** A small client of a node's HTTP API. */
final class NodeHttp {
    /**
     * Longer than the 30 s a node waits on the owner it forwards a read to: the forwarder's 504, which names the owner
     * that did not answer, arrives before this client gives up and blames the node it asked.
     */
    static final Duration TIMEOUT = Duration.ofSeconds(40);
    private static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(5);
    private final String base;
    /**
     * How long a request waits for the response's headers; then a value's body streams for as long as
     * it takes, each read within it, and a small answer's body must be in within as long again.
     */
    private final Duration timeout;
    private final boolean waitsOutRebalances;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(CONNECT_TIMEOUT).build();

    NodeHttp(String base) {
        this(base, TIMEOUT);
    }

    NodeHttp(String base, Duration timeout) {
        this(base, timeout, false);
    }

    private NodeHttp(String base, Duration timeout, boolean waitsOutRebalances) {
        this.base = base.endsWith("/") ? base.substring(0, base.length() - 1) : base;
        this.timeout = timeout;
        this.waitsOutRebalances = waitsOutRebalances;
    }

    /**
     * The same node, and a 503 that does not say when to retry (partitions being assigned, the node starting, the
     * partition moving: a rebalance) asked again each second too, within the timeout: what {@code get} wants. Not for
     * many values in a row, which would each wait the timeout out while a partition stays away (replay --verify shares
     * one wait among them), nor for the ETag a write prints once applied, which is not worth a wait.
     */
    NodeHttp waitingOutRebalances() {
        return new NodeHttp(base, timeout, true);
    }

    /**
     * A LOB's value (or one range of it), its body streaming from the socket: see {@link StreamedResponse} for why not
     * HttpClient. A 503 that says when to retry (its partition under an fsck, every read slot taken) is asked again
     * then, within the timeout; the last answer is returned.
     */
    StreamedResponse get(String lobId, String range) throws IOException, InterruptedException {
        return ask("GET", lobId, range);
    }

    /** As {@link #get}, for {@code method} GET or HEAD (a value's headers alone: its version, type, metadata, owner). */
    StreamedResponse ask(String method, String lobId, String range) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            StreamedResponse r = askOnce(method, lobId, range);
            try {
                requireNode(r.statusCode(), r.header(LobHttpServer.NODE));
            } catch (IOException e) {
                r.close();
                throw e;
            }
            long waitS = retryWithin(r.statusCode(), r.header("Retry-After"), deadline);
            if (waitS < 0) {
                return r;
            }
            r.close();
            Thread.sleep(TimeUnit.SECONDS.toMillis(waitS));
        }
    }

    /**
     * The seconds to wait before asking again: a 503 that says when (one that does not: in a second, if this waits out
     * rebalances), if that is before {@code deadline}; else -1.
     */
    private long retryWithin(int status, Optional<String> retryAfter, long deadline) {
        long waitS = status == 503 ? retryAfter.map(NodeHttp::seconds).orElse(waitsOutRebalances ? 1L : -1L) : -1;
        return waitS >= 0 && TimeUnit.SECONDS.toNanos(waitS) <= deadline - System.nanoTime() ? waitS : -1;
    }

    /** A Retry-After in seconds, at least one (0 would ask again at once, for as long as it is answered so); -1 for a date. */
    private static long seconds(String retryAfter) {
        try {
            return Math.min(TIMEOUT.toSeconds(), Math.max(1, Long.parseLong(retryAfter.strip())));
        } catch (NumberFormatException date) {
            return -1;
        }
    }

    private StreamedResponse askOnce(String method, String lobId, String range) throws IOException {
        try {
            return StreamedResponse.send(lobUri(lobId), method, range == null ? Map.of() : Map.of("Range", "bytes=" + range),
                    CONNECT_TIMEOUT, timeout);
        } catch (java.net.ConnectException e) {
            throw new IOException(noNode(e), e);
        } catch (java.net.SocketTimeoutException e) {
            throw new IOException("the node at " + base + " did not answer within " + timeout.toSeconds() + " s", e);
        }
    }

    /**
     * Sends a request whose answer is small (a HEAD, {@code /status}), and waits for all of it within
     * twice its timeout: HttpClient's own timeout ends at the response's headers, and a body
     * that stalled after them would be waited for without end.
     */
    private <T> HttpResponse<T> send(HttpRequest request, HttpResponse.BodyHandler<T> body, Duration timeout)
            throws IOException, InterruptedException {
        CompletableFuture<HttpResponse<T>> answer = http.sendAsync(request, body);
        try {
            HttpResponse<T> r = answer.get(2 * timeout.toMillis(), TimeUnit.MILLISECONDS);
            requireNode(r.statusCode(), r.headers().firstValue(LobHttpServer.NODE));
            return r;
        } catch (InterruptedException e) {
            answer.cancel(true);
            throw e;
        } catch (TimeoutException e) {
            answer.cancel(true);
            throw new IOException("the node at " + base + " did not answer in full within " + 2 * timeout.toSeconds() + " s", e);
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof java.net.ConnectException || cause instanceof java.net.http.HttpConnectTimeoutException) {
                throw new IOException(noNode(cause), cause);
            }
            if (cause instanceof java.net.http.HttpTimeoutException) {
                throw new IOException("the node at " + base + " did not answer within " + timeout.toSeconds() + " s", cause);
            }
            throw cause instanceof IOException io ? io : new IOException(String.valueOf(cause), cause);
        }
    }

    /** The current version (ETag) of a LOB, empty if it has none; a 503 that says when is asked again, as {@link #get}. */
    Optional<String> etag(String lobId) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        HttpResponse<Void> r = head(lobId);
        for (long waitS; (waitS = retryWithin(r.statusCode(), r.headers().firstValue("Retry-After"), deadline)) >= 0; r = head(lobId)) {
            Thread.sleep(TimeUnit.SECONDS.toMillis(waitS));
        }
        if (r.statusCode() == 404) {
            return Optional.empty();
        }
        if (r.statusCode() != 200) {
            throw new IOException("it answered HEAD " + lobId + " with HTTP " + r.statusCode());
        }
        return r.headers().firstValue("ETag");
    }

    private HttpResponse<Void> head(String lobId) throws IOException, InterruptedException {
        return send(HttpRequest.newBuilder(lobUri(lobId)).timeout(timeout).method("HEAD", HttpRequest.BodyPublishers.noBody()).build(),
                HttpResponse.BodyHandlers.discarding(), timeout);
    }

    String getText(String path) throws IOException, InterruptedException {
        return getText(path, timeout);
    }

    /** A small answer ({@code /status}), whole within twice {@code within}. */
    String getText(String path, Duration within) throws IOException, InterruptedException {
        HttpResponse<String> r = send(HttpRequest.newBuilder(URI.create(base + path)).timeout(within).GET().build(),
                HttpResponse.BodyHandlers.ofString(), within);
        if (r.statusCode() != 200) {
            throw new IOException("GET " + path + ": HTTP " + r.statusCode() + " " + r.body());
        }
        return r.body();
    }

    URI lobUri(String lobId) {
        String segment = URLEncoder.encode(lobId, StandardCharsets.UTF_8).replace("+", "%20");
        // a path segment . or .. is one a proxy in front of the node removes (RFC 3986 5.2.4): sent encoded, it reaches the
        // node as an id through a proxy that passes the path as it is (one that decodes %2E first still removes it)
        if (segment.equals(".") || segment.equals("..")) {
            segment = segment.replace(".", "%2E");
        }
        return URI.create(base + "/lobs/" + segment);
    }

    String base() {
        return base;
    }

    /**
     * An answer the CLI would take as the node's word on a LOB (a value, its status, a 404, a 416) without the header every
     * node's answer carries is another server's: said, not taken for a node's. A proxy's own 5xx (the node behind it
     * restarting) or 401 keeps its status and its Retry-After.
     */
    private void requireNode(int status, Optional<String> node) throws IOException {
        if (node.isEmpty() && (status / 100 == 2 || status == 404 || status == 416)) {
            throw new IOException("the server at " + base + " is not a LobStream node (it answered HTTP " + status + " without "
                    + LobHttpServer.NODE + ", which every node's answer has, but those of much older LobStream releases): --node names "
                    + "a node's HTTP API, port 8080 unless lob.http.port says otherwise");
        }
    }

    private String noNode(Throwable cause) {
        // a name that does not resolve says nothing but the name: say so, where "start one" would mislead
        boolean unresolved = java.util.stream.Stream.iterate(cause, java.util.Objects::nonNull, Throwable::getCause)
                .anyMatch(t -> t instanceof java.net.UnknownHostException || t instanceof java.nio.channels.UnresolvedAddressException);
        return unresolved ? "no node answers at " + base + ": its host name does not resolve (a typo in --node or $" + NodeUrl.ENV + "?)"
                : "no node answers at " + base + " (start one with ./lobstream node, or name one with --node URL or $" + NodeUrl.ENV + ")";
    }
}
