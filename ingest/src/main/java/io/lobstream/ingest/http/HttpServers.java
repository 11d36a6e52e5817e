package io.lobstream.ingest.http;

import com.sun.net.httpserver.HttpServer;

import java.io.IOException;
import java.net.InetSocketAddress;

/**
 * Creates the JDK {@link HttpServer}s a node and a purge worker serve from, with Nagle's
 * algorithm off on their connections.
 *
 * <p>Why: the JDK server writes a response's headers and its body in two writes. On a
 * keep-alive connection Nagle holds the body back until the client acknowledges the headers,
 * and the client delays that acknowledgement, by 40 ms on Linux: every response but those on
 * a fresh connection took 40 ms more. A client polling {@code /status} over one connection got
 * about 20 answers a second instead of 200, and each small read over the API paid the same. The
 * JDK has no per-server setting for this, only {@code sun.net.httpserver.nodelay}, read once when
 * the first server of the JVM is made; it is set here unless the JVM was started with it.
 */
public final class HttpServers {
    static final String NO_DELAY = "sun.net.httpserver.nodelay";

    private HttpServers() {
    }

    /** {@link HttpServer#create(InetSocketAddress, int)}, with {@code TCP_NODELAY} on every connection it accepts. */
    public static HttpServer create(InetSocketAddress address, int backlog) throws IOException {
        if (System.getProperty(NO_DELAY) == null) {
            System.setProperty(NO_DELAY, "true");
        }
        return HttpServer.create(address, backlog);
    }
}
