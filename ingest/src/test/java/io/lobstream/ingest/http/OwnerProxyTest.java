package io.lobstream.ingest.http;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import com.sun.net.httpserver.HttpServer;
import org.apache.kafka.streams.state.HostInfo;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A node forwarding a read to the key's owner, with real sockets on both sides: what the client
 * gets when the owner answers, and when it is not there, says nothing, or stops half-way.
 */
class OwnerProxyTest {
    /** How long the proxy waits for an owner that says nothing; the other tests' owners get 10 s, as a loaded machine may need. */
    private static final Duration SILENCE = Duration.ofMillis(500);

    private final List<AutoCloseable> open = new ArrayList<>();
    /** The headers of the last request the owner got. */
    private final Map<String, String> ownerSaw = new ConcurrentHashMap<>();
    /** What the front's forward threw: the JDK server forgets a connection closed under an answer only when it throws. */
    private final List<IOException> frontFailed = new java.util.concurrent.CopyOnWriteArrayList<>();

    @AfterEach
    void closeAll() throws Exception {
        for (AutoCloseable c : open) {
            c.close();
        }
    }

    @Test
    void theOwnersRangeAnswerPassesThroughWithItsHeaders() throws IOException {
        HostInfo owner = owner(ex -> {
            ex.getResponseHeaders().add("ETag", "\"c1.7\"");
            ex.getResponseHeaders().add("Content-Range", "bytes 1-3/10");
            ex.getResponseHeaders().add("Content-Type", "text/plain");
            ex.getResponseHeaders().add(LobHttpServer.META + "Owner", "alice");
            ex.getResponseHeaders().add("X-Not-For-Readers", "x");
            ex.sendResponseHeaders(206, 3);
            ex.getResponseBody().write("bcd".getBytes(StandardCharsets.US_ASCII));
        });
        HttpURLConnection c = request(front(owner), "GET", "bytes=1-3");

        assertThat(c.getResponseCode()).isEqualTo(206);
        assertThat(new String(c.getInputStream().readAllBytes(), StandardCharsets.US_ASCII)).isEqualTo("bcd");
        assertThat(c.getHeaderField("ETag")).isEqualTo("\"c1.7\"");
        assertThat(c.getHeaderField("Content-Range")).isEqualTo("bytes 1-3/10");
        assertThat(c.getHeaderField("Content-Type")).isEqualTo("text/plain");
        assertThat(c.getHeaderField(LobHttpServer.META + "Owner")).isEqualTo("alice");
        assertThat(c.getHeaderField("X-Not-For-Readers")).isNull();
        assertThat(c.getHeaderField(LobHttpServer.SERVED_BY)).isEqualTo(owner.host() + ":" + owner.port());
        assertThat(ownerSaw).containsEntry("range", "bytes=1-3").containsEntry(OwnerProxy.FORWARDED.toLowerCase(java.util.Locale.ROOT), "front.example:8080");
    }

    /** Another server on the owner's address: its 404 passed for the node's "no such LOB" (and `get` said so, exit 1). */
    @Test
    void anAnswerFromSomethingThatIsNoNodeIsA502() throws IOException {
        HostInfo notANode = serve(ex -> ex.sendResponseHeaders(404, -1));
        HttpURLConnection c = request(front(notANode), "GET", null);
        assertThat(c.getResponseCode()).isEqualTo(502);
        assertThat(new String(c.getErrorStream().readAllBytes(), StandardCharsets.US_ASCII))
                .contains("answered 404 without " + LobHttpServer.NODE + ": what listens there is no LobStream node");
    }

    /** An owner that does not say how long its body is: the client gets the body (chunked), not an empty 200. */
    @Test
    void aBodyOfUnknownLengthPassesThroughWhole() throws IOException {
        HostInfo owner = owner(ex -> {
            ex.sendResponseHeaders(200, 0); // chunked
            ex.getResponseBody().write("abcdef".getBytes(StandardCharsets.US_ASCII));
        });
        HttpURLConnection c = request(front(owner), "GET", null);
        assertThat(c.getResponseCode()).isEqualTo(200);
        assertThat(new String(c.getInputStream().readAllBytes(), StandardCharsets.US_ASCII)).isEqualTo("abcdef");
    }

    /** Conditional reads are the owner's to decide: their headers go to it, and its 304 comes back with no body. */
    @Test
    void conditionalReadsReachTheOwnerAndItsNotModifiedComesBack() throws IOException {
        HostInfo owner = owner(ex -> {
            ex.getResponseHeaders().add("ETag", "\"c1.7\"");
            ex.getResponseHeaders().add("Content-Length", "10");
            ex.sendResponseHeaders(304, -1);
        });
        HttpURLConnection c = request(front(owner), "GET", null);
        c.setRequestProperty("If-None-Match", "\"c1.7\"");
        c.setRequestProperty("If-Match", "*");
        assertThat(c.getResponseCode()).isEqualTo(304);
        assertThat(c.getHeaderField("ETag")).isEqualTo("\"c1.7\"");
        assertThat(c.getHeaderField("Content-Length")).isEqualTo("10");
        assertThat(ownerSaw).containsEntry("if-none-match", "\"c1.7\"").containsEntry("if-match", "*");
    }

    @Test
    void headAndUnsatisfiableRangesKeepTheOwnersLengthAndNoBody() throws IOException {
        HostInfo owner = owner(ex -> {
            if (ex.getRequestMethod().equals("HEAD")) {
                ex.getResponseHeaders().add("Content-Length", "10");
                ex.sendResponseHeaders(200, -1);
            } else {
                ex.getResponseHeaders().add("Content-Range", "bytes */10");
                ex.sendResponseHeaders(416, -1);
            }
        });
        HttpURLConnection head = request(front(owner), "HEAD", null);
        assertThat(head.getResponseCode()).isEqualTo(200);
        assertThat(head.getHeaderField("Content-Length")).isEqualTo("10");

        HttpURLConnection unsatisfiable = request(front(owner), "GET", "bytes=20-");
        assertThat(unsatisfiable.getResponseCode()).isEqualTo(416);
        assertThat(unsatisfiable.getHeaderField("Content-Range")).isEqualTo("bytes */10");
    }

    @Test
    void theOwnersErrorsPassThroughToo() throws IOException {
        HostInfo owner = owner(ex -> {
            byte[] body = "no LOB x\n".getBytes(StandardCharsets.UTF_8);
            ex.sendResponseHeaders(404, body.length);
            ex.getResponseBody().write(body);
        });
        HttpURLConnection c = request(front(owner), "GET", null);
        assertThat(c.getResponseCode()).isEqualTo(404);
        assertThat(new String(c.getErrorStream().readAllBytes(), StandardCharsets.UTF_8)).isEqualTo("no LOB x\n");
    }

    @Test
    void anOwnerNobodyAnswersForIs502() throws IOException {
        int closedPort;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            closedPort = s.getLocalPort();
        }
        HttpURLConnection c = request(front(new HostInfo("127.0.0.1", closedPort)), "GET", null);
        assertThat(c.getResponseCode()).isEqualTo(502);
        // named as host:port, not as Kafka's HostInfo{host='..', port=..}, and without an exception's class name
        assertThat(new String(c.getErrorStream().readAllBytes(), StandardCharsets.UTF_8))
                .startsWith("owner 127.0.0.1:" + closedPort + " of the LOB's partition unreachable (cannot connect to 127.0.0.1:"
                        + closedPort + ": Connection refused); retry").doesNotContain("HostInfo", "java.");
    }

    @Test
    void anOwnerThatAcceptsAndSaysNothingIs504() throws IOException {
        // the kernel completes the connection into the backlog; nobody ever reads the request or answers
        ServerSocket silent = new ServerSocket(0, 10, InetAddress.getLoopbackAddress());
        open.add(silent);
        HttpURLConnection c = request(front(new HostInfo("127.0.0.1", silent.getLocalPort()), SILENCE), "GET", null);
        assertThat(c.getResponseCode()).isEqualTo(504);
        assertThat(new String(c.getErrorStream().readAllBytes(), StandardCharsets.UTF_8)).contains("did not answer within 500 ms");
    }

    @Test
    void aBodyTheOwnerCutsShortReachesTheClientCutShort() throws IOException {
        ServerSocket owner = new ServerSocket(0, 10, InetAddress.getLoopbackAddress());
        open.add(owner);
        Thread t = new Thread(() -> {
            try (Socket s = owner.accept()) {
                s.getInputStream().read(new byte[4096]); // the request
                OutputStream out = s.getOutputStream();
                out.write(("HTTP/1.1 200 OK\r\n" + LobHttpServer.NODE + ": owner.example:8080\r\nContent-Length: 100000\r\nETag: \"c1.1\"\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
                out.write(new byte[1000]);
                out.flush();
            } catch (IOException ignored) {
                // the test's assertions say what went wrong
            }
        });
        t.start();
        HttpURLConnection c = request(front(new HostInfo("127.0.0.1", owner.getLocalPort())), "GET", null);

        assertThat(c.getResponseCode()).as("the status line went out before the body broke").isEqualTo(200);
        assertThat(c.getContentLengthLong()).isEqualTo(100_000);
        // the connection closes at once: the client's read ends, short (a connection left open would time the read out)
        try (InputStream in = c.getInputStream()) {
            assertThat(in.readAllBytes().length).isEqualTo(1000);
        }
        // Java 17's HttpURLConnection ended the owner's short body as if whole: the front returned, its connection counted
        assertThat(frontFailed).singleElement().asString().contains("ended after 1000 of 100000 bytes");
    }

    /** An owner advertised by an IPv6 literal: {@code http://::1:PORT} was no URL, and every forward to it was a 502. */
    @Test
    void anOwnerAtAnIpv6AddressIsReached() throws IOException {
        InetAddress v6 = InetAddress.getByName("::1");
        HttpServer owner;
        try {
            owner = HttpServers.create(new InetSocketAddress(v6, 0), 0);
        } catch (IOException noIpv6) {
            org.junit.jupiter.api.Assumptions.abort("no IPv6 loopback here: " + noIpv6);
            return;
        }
        owner.createContext("/lobs/", ex -> {
            try (ex) {
                ex.getResponseHeaders().set(LobHttpServer.NODE, "[::1]:" + ex.getLocalAddress().getPort());
                ex.sendResponseHeaders(200, 2);
                ex.getResponseBody().write("v6".getBytes(StandardCharsets.US_ASCII));
            }
        });
        owner.start();
        open.add(() -> owner.stop(0));
        int port = owner.getAddress().getPort();

        HttpURLConnection c = request(front(new HostInfo("::1", port)), "GET", null);

        assertThat(c.getResponseCode()).isEqualTo(200);
        assertThat(new String(c.getInputStream().readAllBytes(), StandardCharsets.US_ASCII)).isEqualTo("v6");
        assertThat(c.getHeaderField(LobHttpServer.SERVED_BY)).isEqualTo("[::1]:" + port);
    }

    // ------------------------------------------------------------------ helpers

    /** An owner node answering every /lobs/ request with {@code answer}; its answers name it, as every node's do. */
    private HostInfo owner(Answer answer) throws IOException {
        return serve(ex -> {
            ex.getRequestHeaders().forEach((k, v) -> ownerSaw.put(k.toLowerCase(java.util.Locale.ROOT), v.get(0)));
            ex.getResponseHeaders().set(LobHttpServer.NODE, "owner.example:8080");
            answer.answer(ex);
        });
    }

    /** The node that got the request and forwards it to {@code owner}. */
    private HostInfo front(HostInfo owner) throws IOException {
        return front(owner, Duration.ofSeconds(10));
    }

    private HostInfo front(HostInfo owner, Duration readTimeout) throws IOException {
        OwnerProxy proxy = new OwnerProxy(Duration.ofSeconds(2), readTimeout);
        return serve(ex -> {
            try {
                proxy.forward(ex, new HostInfo("front.example", 8080), owner, ex.getRequestURI().getRawPath());
            } catch (IOException e) {
                frontFailed.add(e);
                throw e;
            }
        });
    }

    private interface Answer {
        void answer(HttpExchange ex) throws IOException;
    }

    private HostInfo serve(Answer answer) throws IOException {
        HttpServer server = HttpServers.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        HttpHandler handler = ex -> {
            try (ex) {
                answer.answer(ex);
            }
        };
        server.createContext("/lobs/", handler);
        server.start();
        open.add(() -> server.stop(0));
        return new HostInfo("127.0.0.1", server.getAddress().getPort());
    }

    private static HttpURLConnection request(HostInfo node, String method, String range) throws IOException {
        HttpURLConnection c = (HttpURLConnection) new URL("http://" + node.host() + ":" + node.port() + "/lobs/k1").openConnection();
        c.setRequestMethod(method);
        c.setReadTimeout(10_000);
        if (range != null) {
            c.setRequestProperty("Range", range);
        }
        return c;
    }
}
