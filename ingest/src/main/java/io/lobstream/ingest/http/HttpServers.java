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
 *
 * <p>The same goes for two limits the JDK leaves off. The server reads a request's line and
 * headers on a thread of the handler's executor, with no time limit: a client that sends one byte
 * and no more held a thread for good, and as many such clients as threads stopped every request,
 * {@code /status} and {@code /metrics} included. {@value #MAX_REQUEST_TIME} gives a request
 * {@value #MAX_REQUEST_SECONDS} seconds to arrive whole (the time it takes to send a response is
 * not limited: a download of a large value takes as long as it takes). And
 * {@value #MAX_CONNECTIONS} bounds the open connections, which take file descriptors from the
 * same budget as RocksDB, the tablespaces and Kafka's clients.
 */
public final class HttpServers {
    static final String NO_DELAY = "sun.net.httpserver.nodelay";
    /** In seconds, in every JDK's code (some JDKs' documentation says milliseconds). */
    static final String MAX_REQUEST_TIME = "sun.net.httpserver.maxReqTime";
    /**
     * A GET's line and headers are a few hundred bytes: 10 s is ample even over a slow link, and clients that send their
     * headers slowly (each on one of the 32 threads, before the value reads' limit applies) hold a thread a third as long
     * as at 30 s. The time a request waits for a free thread counts too (the JDK starts the clock at the hand-off): a node
     * whose every thread is busy for 10 s closes a waiting request's connection without an answer.
     */
    static final int MAX_REQUEST_SECONDS = 10;
    static final String MAX_CONNECTIONS = "jdk.httpserver.maxConnections";
    static final int MAX_CONNECTIONS_DEFAULT = 1024;

    private HttpServers() {
    }

    /**
     * {@link HttpServer#create(InetSocketAddress, int)}, with {@code TCP_NODELAY} on every connection it accepts, and
     * the limits above, unless the JVM was started with settings of its own for them.
     */
    public static HttpServer create(InetSocketAddress address, int backlog) throws IOException {
        setUnlessSet(NO_DELAY, "true");
        setUnlessSet(MAX_REQUEST_TIME, Integer.toString(MAX_REQUEST_SECONDS));
        setUnlessSet(MAX_CONNECTIONS, Integer.toString(MAX_CONNECTIONS_DEFAULT));
        return HttpServer.create(address, backlog);
    }

    private static void setUnlessSet(String property, String value) {
        if (System.getProperty(property) == null) {
            System.setProperty(property, value);
        }
    }
}
