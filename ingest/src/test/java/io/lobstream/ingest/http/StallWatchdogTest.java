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
