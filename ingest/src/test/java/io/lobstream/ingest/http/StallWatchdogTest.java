package io.lobstream.ingest.http;

import com.sun.net.httpserver.HttpServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URL;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

class StallWatchdogTest {
    /**
     * A response that waits for its own next bytes (a slow disk, an owner node it forwards from) longer than the stall
     * timeout, to a client that reads all the while: the client is not stalled, and the response is not cut.
     */
    @Test
    void aResponseWaitingForItsOwnSourceIsNotCut() throws Exception {
        AtomicInteger cut = new AtomicInteger();
        HttpServer server = HttpServers.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        try (StallWatchdog stalls = new StallWatchdog(Duration.ofMillis(200), cut::incrementAndGet)) {
            server.createContext("/slow", ex -> {
                try (ex; StallWatchdog.Watch w = stalls.watch(ex)) {
                    ex.sendResponseHeaders(200, 3);
                    OutputStream body = w.body();
                    for (int i = 0; i < 3; i++) {
                        body.write(new byte[]{(byte) i}, 0, 1);
                        body.flush();
                        Thread.sleep(600); // the source: three times the stall timeout between two writes
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            server.start();
            HttpURLConnection c = (HttpURLConnection) new URL("http://127.0.0.1:" + server.getAddress().getPort() + "/slow").openConnection();
            try (InputStream in = c.getInputStream()) {
                assertThat(in.readAllBytes()).containsExactly(0, 1, 2);
            }
            assertThat(cut).hasValue(0);
        } finally {
            server.stop(0);
        }
    }

    /**
     * A client that reads, but far slower than {@link StallWatchdog#PIECE} bytes per timeout, is cut: each of the
     * response's 8 KiB writes (JDK 17's transferTo) goes through well within the timeout, and counting each as progress
     * let a client reading a few hundred bytes a second hold a thread and a value's pin for days. (Linux wakes a blocked
     * writer only once half its send buffer drained, which hides this on loopback's large buffers: hence a socket that
     * takes each write in 100 ms, as a small send buffer to a slow client does.)
     */
    @Test
    void aClientReadingTooSlowlyIsCut() throws Exception {
        AtomicInteger cut = new AtomicInteger();
        OutputStream trickle = new OutputStream() {
            @Override
            public void write(int b) {
                throw new UnsupportedOperationException();
            }

            @Override
            public void write(byte[] b, int off, int len) throws java.io.IOException {
                try {
                    Thread.sleep(100); // 8 KiB in 100 ms: 80 KiB/s, 64 KiB in 800 ms
                } catch (InterruptedException e) {
                    throw new java.io.InterruptedIOException();
                }
            }
        };
        try (StallWatchdog stalls = new StallWatchdog(Duration.ofMillis(300), cut::incrementAndGet)) {
            StallWatchdog.Watch w = stalls.watch(new FakeExchange(trickle));
            OutputStream body = w.body();
            for (int i = 0; i < 40 && cut.get() == 0; i++) { // 4 s
                body.write(new byte[8192], 0, 8192);
            }
            assertThat(cut).hasValue(1);
        }
    }

    /** An exchange whose response goes to {@code out}: for the watch's counting alone. */
    private static final class FakeExchange extends com.sun.net.httpserver.HttpExchange {
        private OutputStream out;

        FakeExchange(OutputStream out) {
            this.out = out;
        }

        @Override public com.sun.net.httpserver.Headers getRequestHeaders() { return new com.sun.net.httpserver.Headers(); }
        @Override public com.sun.net.httpserver.Headers getResponseHeaders() { return new com.sun.net.httpserver.Headers(); }
        @Override public java.net.URI getRequestURI() { return java.net.URI.create("/lobs/x"); }
        @Override public String getRequestMethod() { return "GET"; }
        @Override public com.sun.net.httpserver.HttpContext getHttpContext() { return null; }
        @Override public void close() { }
        @Override public InputStream getRequestBody() { return InputStream.nullInputStream(); }
        @Override public OutputStream getResponseBody() { return out; }
        @Override public void sendResponseHeaders(int code, long length) { }
        @Override public InetSocketAddress getRemoteAddress() { return null; }
        @Override public int getResponseCode() { return 200; }
        @Override public InetSocketAddress getLocalAddress() { return null; }
        @Override public String getProtocol() { return "HTTP/1.1"; }
        @Override public Object getAttribute(String name) { return null; }
        @Override public void setAttribute(String name, Object value) { }
        @Override public void setStreams(InputStream in, OutputStream o) { out = o; }
        @Override public com.sun.net.httpserver.HttpPrincipal getPrincipal() { return null; }
    }

    /**
     * A client that reads nothing fills the socket with a response's headers as well as with its body: the headers'
     * write is watched too (a GET held its value's pin, unwatched, for as long as the client kept the connection).
     */
    @Test
    void headersAClientDoesNotReadAreCutToo() throws Exception {
        AtomicInteger cut = new AtomicInteger();
        HttpServer server = HttpServers.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        try (StallWatchdog stalls = new StallWatchdog(Duration.ofMillis(200), cut::incrementAndGet)) {
            String mib = "x".repeat(1 << 20);
            server.createContext("/headers", ex -> {
                try (ex; StallWatchdog.Watch w = stalls.watch(ex)) {
                    for (int i = 0; i < 64; i++) { // far more than loopback's socket buffers take
                        ex.getResponseHeaders().add("X-Big-" + i, mib);
                    }
                    w.sendHeaders(200, 1);
                    w.body().write(new byte[]{1}, 0, 1);
                } catch (java.io.IOException expected) {
                    // the watchdog closed the connection under the write
                }
            });
            server.start();
            try (java.net.Socket client = new java.net.Socket(InetAddress.getLoopbackAddress(), server.getAddress().getPort())) {
                client.getOutputStream().write("GET /headers HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
                long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
                while (cut.get() == 0 && System.nanoTime() < deadline) {
                    Thread.sleep(50);
                }
                assertThat(cut).hasValue(1);
            }
        } finally {
            server.stop(0);
        }
    }

    /**
     * Answers with no body (HEAD), pipelined by a client that reads none of them: once the socket is full the answer's
     * write blocks as a body's does, and is cut the same, its connection closed. Closing such an exchange alone only ended
     * it (it owes no bytes), the thread stayed blocked in the write, and the server, its dispatcher too, with it.
     */
    @Test
    @Timeout(value = 90, threadMode = Timeout.ThreadMode.SEPARATE_THREAD) // a regression hangs: the server's stop waits for its
    // dispatcher, blocked behind the stuck write
    void answersWithNoBodyAClientDoesNotReadAreCutAndTheirConnectionClosed() throws Exception {
        AtomicInteger cut = new AtomicInteger();
        HttpServer server = HttpServers.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        try (StallWatchdog stalls = new StallWatchdog(Duration.ofMillis(200), cut::incrementAndGet)) {
            server.createContext("/missing", ex -> {
                try (ex) {
                    Responses.text(ex, 404, "no LOB missing\n", stalls);
                } catch (java.io.IOException expected) {
                    // the watchdog closed the connection under the write
                }
            });
            server.start(); // its handlers on its dispatcher thread (no executor): one blocked thread stops the server
            String url = "http://127.0.0.1:" + server.getAddress().getPort() + "/missing";
            try (java.net.Socket client = new java.net.Socket(InetAddress.getLoopbackAddress(), server.getAddress().getPort())) {
                Thread pipeline = new Thread(() -> {
                    byte[] request = "HEAD /missing HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
                    try {
                        OutputStream out = client.getOutputStream();
                        while (true) { // until the cut connection refuses more
                            out.write(request);
                        }
                    } catch (java.io.IOException closed) {
                        // the connection was cut, or closed below
                    }
                }, "pipelining-client");
                pipeline.setDaemon(true);
                pipeline.start();
                long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
                while (cut.get() == 0 && System.nanoTime() < deadline) {
                    Thread.sleep(50);
                }
                assertThat(cut).hasValue(1);
                client.setSoTimeout(30_000);
                try (InputStream in = client.getInputStream()) { // what the server had sent, then the end: the connection closed
                    assertThat(in.transferTo(OutputStream.nullOutputStream())).isPositive();
                } catch (java.net.SocketException reset) {
                    // closed with requests it had not read: a reset, as good an end
                }
            }
            HttpURLConnection c = (HttpURLConnection) new URL(url).openConnection();
            c.setReadTimeout(10_000);
            assertThat(c.getResponseCode()).as("the server answers another client").isEqualTo(404);
        } finally {
            server.stop(0);
        }
    }
}
