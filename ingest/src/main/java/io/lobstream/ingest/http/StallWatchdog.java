package io.lobstream.ingest.http;

import com.sun.net.httpserver.HttpExchange;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * Closes the connection of a response, its headers or its body, that made no progress for
 * {@code lob.http.stall.timeout.ms}: a client that stopped reading. The JDK server writes with blocking writes and no
 * time limit, so such a client held its thread (and, reading a value, one of the node's value reads) for as long as it
 * kept the connection open; as many of them as threads stopped every request of the node. A slow client that still
 * reads is not cut as long as it takes {@link #PIECE} bytes per timeout (about 1 KiB/s at the default, 64 KiB/s at the
 * least timeout allowed): the time counts from the write that completed the last {@code PIECE} bytes, not from any write
 * that went through, as JDK 17's {@code transferTo} writes 8 KiB at a time, and a client reading a few hundred bytes a
 * second could hold a thread and a value's pin for days (where the send buffer to it stays small: Linux wakes a blocked
 * writer only once half of it drained, which hides this on loopback's large ones). Nor is a response waiting for its own next bytes (from the disk, or
 * from the owner node it forwards): the time counts only while a write is under way, which is when a client that reads
 * nothing blocks the thread.
 *
 * <p>The close runs on a thread of its own: closing an exchange may flush (a chunked body), and a flush to a client
 * that does not read would block the watchdog. It makes the blocked write fail, and the read ends as any read cut short.
 * Every answer of the node is written under a watch (Responses#send, the value's body, the proxy's); only the JDK's own
 * interim {@code 100 Continue}, written before a handler runs, is not.
 */
final class StallWatchdog implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(StallWatchdog.class);
    /** The most one write hands the socket: progress is seen at least this often while the client reads. */
    static final int PIECE = 64 * 1024;

    private final long stallNanos;
    private final Runnable onStall;
    private final Set<Watch> watched = ConcurrentHashMap.newKeySet();
    private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "lob-http-stall-watchdog");
        t.setDaemon(true);
        return t;
    });

    /** @param onStall told of each response cut (a metric) */
    StallWatchdog(Duration stall, Runnable onStall) {
        this.stallNanos = stall.toNanos();
        this.onStall = onStall;
        long period = Math.max(100, stall.toMillis() / 4);
        timer.scheduleWithFixedDelay(this::check, period, period, TimeUnit.MILLISECONDS);
    }

    /**
     * Sends a status line and headers (an answer with no body, a 304, a 416, a HEAD's; or one whose body the caller then
     * writes under a watch of its own), the time they take watched as a body write's (see {@link Watch#sendHeaders});
     * unwatched where {@code stalls} is null.
     */
    static void sendHeaders(StallWatchdog stalls, HttpExchange ex, int status, long length) throws IOException {
        if (stalls == null) {
            ex.sendResponseHeaders(status, length);
            return;
        }
        try (Watch w = stalls.watch(ex)) {
            w.sendHeaders(status, length);
        }
    }

    /** Watches what {@code ex}'s answer writes through the watch (its headers, its body) until the watch is closed. */
    Watch watch(HttpExchange ex) {
        Watch w = new Watch(ex);
        watched.add(w);
        return w;
    }

    private void check() {
        long now = System.nanoTime();
        for (Watch w : watched) {
            if (w.writing && now - w.lastProgress > stallNanos && watched.remove(w)) {
                w.cut = true;
                log.warn("{} {}: the client took less than 64 KiB in {} ms of blocked writes; connection closed", w.ex.getRequestMethod(), w.ex.getRequestURI(),
                        TimeUnit.NANOSECONDS.toMillis(stallNanos));
                onStall.run();
                Thread closer = new Thread(() -> {
                    try {
                        w.ex.close();
                    } catch (RuntimeException ignored) {
                        // the connection is being closed either way
                    }
                }, "lob-http-stall-close");
                closer.setDaemon(true);
                closer.start();
            }
        }
    }

    @Override
    public void close() {
        timer.shutdownNow();
    }

    /** One answer under watch. */
    final class Watch implements AutoCloseable {
        private final HttpExchange ex;
        /**
         * When the time blocked in writes since the last progress began, as if it had been one stretch up to now: the
         * watchdog cuts a write under way once this is {@code stallNanos} past. Moved at each write's start, by the time
         * spent since outside writes (waiting on the disk, or on the owner), which does not count.
         */
        private volatile long lastProgress = System.nanoTime();
        /** whether a write is under way (set after {@link #lastProgress}, so that its start is there when this is seen) */
        private volatile boolean writing;
        /** Time blocked in writes, and bytes written, since the last progress: {@link #PIECE} bytes make one. */
        private long blocked;
        private long unprogressed;
        private long writeStarted;
        /** Whether the body was written through {@link #body()}: its last bytes are then flushed under the watch at close. */
        private boolean bodyTaken;

        /** Set before the exchange is closed for a stall: its response stream's close then fails (see {@link CutOnClose}). */
        private volatile boolean cut;

        private Watch(HttpExchange ex) {
            this.ex = ex;
            ex.setStreams(null, new CutOnClose(ex.getResponseBody()));
        }

        /**
         * The exchange's response stream, whose close fails once the watch is cut. The JDK server closes an exchange's
         * connection when closing its response stream fails or finds bytes still owed; an answer with no body owes none,
         * and its close alone only ended the exchange: the thread stayed blocked in the write, on a connection the server
         * then went on reading the client's next pipelined request from, onto another of its threads.
         */
        private final class CutOnClose extends FilterOutputStream {
            CutOnClose(OutputStream out) {
                super(out);
            }

            @Override
            public void write(byte[] b, int off, int len) throws IOException {
                out.write(b, off, len);
            }

            @Override
            public void close() throws IOException {
                if (cut) {
                    throw new IOException("cut: the client took less than 64 KiB in the stall timeout of blocked writes");
                }
                out.close();
            }
        }

        /**
         * Sends the response's headers, the time they take watched as a body write's: a client that pipelines requests
         * and reads nothing fills the socket with headers too, and the value's pin is held meanwhile.
         */
        void sendHeaders(int status, long length) throws IOException {
            writeStarts();
            try {
                ex.sendResponseHeaders(status, length);
            } finally {
                writeEnded(0);
            }
        }

        private void writeStarts() {
            writeStarted = System.nanoTime();
            lastProgress = writeStarted - blocked;
            writing = true;
        }

        private void writeEnded(int bytes) {
            writing = false;
            blocked += System.nanoTime() - writeStarted;
            unprogressed += bytes;
            if (unprogressed >= PIECE) {
                unprogressed = 0;
                blocked = 0;
            }
        }

        /**
         * The exchange's body, written in pieces of at most {@link #PIECE} bytes, each counted as progress. Closing it
         * does not close the exchange's (it is closed with the exchange, as {@link Responses#cutShort} says why).
         */
        OutputStream body() {
            bodyTaken = true;
            return new FilterOutputStream(ex.getResponseBody()) {
                @Override
                public void write(byte[] b, int off, int len) throws IOException {
                    for (int at = off, end = off + len; at < end; at += PIECE) {
                        int n = Math.min(PIECE, end - at);
                        writeStarts();
                        try {
                            out.write(b, at, n);
                        } finally {
                            writeEnded(n);
                        }
                    }
                }

                @Override
                public void close() {
                    // the exchange's stream stays open: see body()
                }
            };
        }

        /**
         * @throws IOException if the watch was cut, even as its last write went through: for the handler to end by
         *                     throwing, as the JDK server forgets a connection closed under its answer only then
         */
        @Override
        public void close() throws IOException {
            try {
                if (bodyTaken && !cut) {
                    // the body's last bytes, under the watch: newer JDKs (25: checked) buffer up to 8 KiB of an answer (a short one
                    // whole) until the exchange's close, which would write them unwatched, to a client that may read nothing
                    writeStarts();
                    try {
                        ex.getResponseBody().flush();
                    } finally {
                        writeEnded(0);
                    }
                }
            } finally {
                // not found: the watchdog took it, and sets cut next (whichever of the two removes it decides)
                if (!watched.remove(this) || cut) {
                    throw new IOException("cut: the client took less than 64 KiB in the stall timeout of blocked writes");
                }
            }
        }
    }
}
