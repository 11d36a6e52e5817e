package io.lobstream.ingest.writer;

import io.lobstream.schema.LobStreamConfig;
import io.lobstream.schema.LobStreamConfig.ClientKind;
import org.apache.kafka.clients.admin.Admin;

import java.time.Duration;

/**
 * An admin client made at the first question, for a part of the node that may never ask one (a node whose tablespaces
 * are all current, whose uploads never go quiet), and shared by its questions: one per question would cost each a
 * connection and a metadata round trip. Closed, it makes none again.
 */
final class LazyAdmin implements AutoCloseable {
    private final LobStreamConfig config;
    private Admin admin;
    private volatile boolean closed;

    LazyAdmin(LobStreamConfig config) {
        this.config = config;
    }

    /** @throws IllegalStateException once closed: the node is closing */
    synchronized Admin get() {
        if (closed) {
            throw new IllegalStateException("the writer is closing");
        }
        if (admin == null) {
            admin = Admin.create(config.clientConfig(ClientKind.ADMIN));
        }
        return admin;
    }

    boolean closed() {
        return closed;
    }

    /** A question still waiting fails: nothing is asked that the closing node would wait for. */
    @Override
    public synchronized void close() {
        closed = true;
        if (admin != null) {
            admin.close(Duration.ofSeconds(1));
        }
    }
}
