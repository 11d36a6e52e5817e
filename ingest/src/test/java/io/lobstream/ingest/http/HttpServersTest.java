package io.lobstream.ingest.http;

import com.sun.net.httpserver.HttpServer;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URL;

import static org.assertj.core.api.Assertions.assertThat;

class HttpServersTest {
    private static final int REQUESTS = 25;
    private static final int ROUNDS = 5;

    /**
     * Requests over one keep-alive connection against as many on fresh connections, in one run:
     * with Nagle on, each keep-alive response waited for the client's delayed acknowledgement of
     * its headers (40 ms on Linux), twenty times what a fresh connection takes; a fresh one is
     * acknowledged at once (quick-ack mode), so it is the yardstick.
     */
    @Test
    void aKeepAliveConnectionAnswersAsFastAsFreshOnes() throws Exception {
        HttpServer server = HttpServers.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        byte[] body = new byte[2048];
        server.createContext("/status", ex -> {
            try (ex) {
                ex.sendResponseHeaders(200, body.length);
                ex.getResponseBody().write(body);
            }
        });
        server.start();
        try {
            URL url = new URL("http://127.0.0.1:" + server.getAddress().getPort() + "/status");
            timeRequests(url, true); // warm both paths up
            timeRequests(url, false);
            // the best of several alternating rounds: one pause of the machine (a busy CI, a safepoint) in a round of a
            // few milliseconds would decide a single comparison, while Nagle's 40 ms is in every keep-alive round
            long keepAlive = Long.MAX_VALUE;
            long fresh = Long.MAX_VALUE;
            for (int round = 0; round < ROUNDS; round++) {
                keepAlive = Math.min(keepAlive, timeRequests(url, true));
                fresh = Math.min(fresh, timeRequests(url, false));
            }
            assertThat(keepAlive).as("%d requests on one connection: %d µs; on fresh connections: %d µs (best of %d rounds)",
                    REQUESTS, keepAlive / 1000, fresh / 1000, ROUNDS).isLessThan(3 * fresh);
        } finally {
            server.stop(0);
        }
    }

    private static long timeRequests(URL url, boolean keepAlive) throws IOException {
        long t = System.nanoTime();
        for (int i = 0; i < REQUESTS; i++) {
            HttpURLConnection c = (HttpURLConnection) url.openConnection();
            if (!keepAlive) {
                c.setRequestProperty("Connection", "close");
            }
            try (InputStream in = c.getInputStream()) {
                assertThat(in.readAllBytes()).hasSize(2048);
            }
        }
        return System.nanoTime() - t;
    }
}
