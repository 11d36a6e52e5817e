package io.lobstream.ingest.http;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import com.sun.net.httpserver.HttpServer;
import io.lobstream.store.LobStore;
import io.lobstream.ingest.writer.AdminPurgeProgress;
import io.lobstream.ingest.writer.LobStateStore;
import io.lobstream.ingest.writer.TaskFailure;
import io.lobstream.ingest.writer.TablespaceRegistry;
import io.lobstream.ingest.writer.TaskRetries;
import io.lobstream.store.LogOncePerMinute;
import io.lobstream.store.LobReadHandle;
import io.lobstream.store.TablespaceClosedException;
import io.lobstream.store.index.Attributes;
import io.lobstream.store.index.VersionEntry;
import io.lobstream.store.page.CorruptPageException;
import io.lobstream.store.tablespace.PageReadException;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyQueryMetadata;
import org.apache.kafka.streams.state.HostInfo;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.EOFException;
import java.io.IOException;
import java.time.Duration;
import java.io.InputStream;
import java.net.BindException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.UnknownHostException;
import java.nio.channels.ClosedChannelException;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * The node's HTTP API.
 * <ul>
 *   <li>{@code GET|HEAD /lobs/{id}}: the current value, streamed; single {@code Range} requests on
 *       GET (206 / 416), {@code ETag} = the copy and the version that made the value, 404 for unknown or deleted ids. A request for a key
 *       whose partition another node owns is proxied to that node (Kafka Streams metadata).</li>
 *   <li>{@code GET /status}: space, history and the offset of {@code lob.commands} applied, per
 *       partition, JSON.</li>
 *   <li>{@code GET /fsck[?data=true]}: fsck of the tablespaces open here, JSON.</li>
 *   <li>{@code GET /metrics}: Prometheus exposition.</li>
 * </ul>
 */
public final class LobHttpServer implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(LobHttpServer.class);
    /** A version's user metadata travels as one header per key, this prefix before the key (as S3's x-amz-meta-). */
    public static final String META = "X-LobStream-Meta-";
    /** On an answer one node forwarded from the owner of the key's partition: the owner's host:port. */
    public static final String SERVED_BY = "X-LobStream-Served-By";
    /**
     * On every answer of the API (not /metrics): the answering node's host:port. A client told a wrong URL (the
     * registry's, another web server's) learns so, where a 404 or a page of HTML would pass for a LOB's answer.
     */
    public static final String NODE = "X-LobStream-Node";
    private static final ObjectMapper JSON = new ObjectMapper();

    private final HttpServer server;
    private final ExecutorService executor;
    private final TablespaceRegistry registry;
    private static final int THREADS = 32;
    private static final Duration CLOSE_WAIT = Duration.ofSeconds(5);
    /**
     * Value reads in flight at most; the other threads stay free for /status, /metrics and /fsck,
     * which a slow reader of large values would otherwise keep waiting (a scrape, {@code status --wait}).
     */
    private static final int READ_THREADS = THREADS - 4;
    private final Semaphore reads = new Semaphore(READ_THREADS);
    /**
     * Of those, reads forwarded to their owner at most: an owner that accepts connections and answers nothing (a stalled
     * JVM, a machine gone) holds each forward for OwnerProxy's timeouts, and must not take the reads of every partition
     * this node holds with it.
     */
    private static final int FORWARD_THREADS = READ_THREADS / 2;
    private final Semaphore forwards = new Semaphore(FORWARD_THREADS);
    /**
     * One {@code /fsck} at a time: each holds every tablespace's latch exclusively while it checks its index and page
     * owners, so writes and reads of that partition wait, and a client asking again and again would keep the writer
     * waiting most of the time.
     */
    private final Semaphore fscks = new Semaphore(1);
    /** Closes the connection of an answer its client stopped reading ({@code lob.http.stall.timeout.ms}). */
    private final StallWatchdog stalls;
    private final OwnerProxy proxy;
    private volatile KafkaStreams streams;
    /** What /status and /fsck answer. */
    private final NodeReports reports;

    private final String advertisedHost;
    /** When each failure answered with a 500 was last logged. */
    private final LogOncePerMinute failuresSaid = new LogOncePerMinute();

    public LobHttpServer(String host, String advertisedHost, int port, String commandsTopic, TablespaceRegistry registry,
                         PrometheusMeterRegistry prometheus, Duration stallTimeout) throws IOException {
        io.micrometer.core.instrument.Counter stalled = io.micrometer.core.instrument.Counter.builder("lob_http_stalled_responses")
                .description("Responses cut as their client took less than 64 KiB in lob.http.stall.timeout.ms of blocked writes").register(prometheus);
        this.stalls = new StallWatchdog(stallTimeout, stalled::increment);
        this.proxy = new OwnerProxy(OwnerProxy.CONNECT_TIMEOUT, OwnerProxy.READ_TIMEOUT, stalls);
        this.advertisedHost = advertised(host, advertisedHost);
        this.registry = registry;
        this.reports = new NodeReports(registry, commandsTopic);
        try {
            this.server = HttpServers.create(new InetSocketAddress(host, port), 64);
        } catch (BindException e) {
            stalls.close(); // its thread, started above: a port taken leaves nothing running
            throw cannotBind(host, port, e);
        } catch (IOException | RuntimeException e) {
            stalls.close();
            throw e;
        }
        // A request for another node's key holds a thread here while the owner serves it on one of its
        // own; forwarded requests are never forwarded again, and OwnerProxy's timeouts bound a wait on an owner
        // that does not answer, so two nodes forwarding to each other cannot hold all threads for long.
        this.executor = Executors.newFixedThreadPool(THREADS, r -> {
            Thread t = new Thread(r, "lob-http");
            t.setDaemon(true);
            return t;
        });
        server.setExecutor(executor);
        endpoint("/lobs/", answering(this::boundedLobs), prometheus);
        // the JDK matches a context by prefix: /statusx and /fsck.json were these endpoints (an fsck taking every latch)
        endpoint("/status", exactly("/status", answering(this::status)), prometheus);
        endpoint("/fsck", exactly("/fsck", answering(this::fsck)), prometheus);
        endpoint("/metrics", exactly("/metrics", new MetricsEndpoint(prometheus, stalls)), prometheus);
        endpoint("/", this::noSuchEndpoint, prometheus);
    }

    /** Serves {@code path} (a prefix, as the JDK matches it) with {@code handler}, its requests timed. */
    private void endpoint(String path, HttpHandler handler, PrometheusMeterRegistry meters) {
        server.createContext(path, handler).getFilters().add(new RequestMetrics(meters, path));
    }

    private HttpHandler exactly(String path, HttpHandler handler) {
        return ex -> {
            if (ex.getRequestURI().getPath().equals(path)) {
                handler.handle(ex);
            } else {
                noSuchEndpoint(ex);
            }
        };
    }

    /**
     * Any other path: a 404 that says what is here, where the JDK's said nothing. Without X-LobStream-Node, as a --node
     * with a wrong path (http://host:8080/api) must not have its 404 taken for a node's "no such LOB".
     */
    private void noSuchEndpoint(HttpExchange ex) throws IOException {
        try (ex) {
            text(ex, 404, "no such endpoint " + ex.getRequestURI().getRawPath()
                    + ": a LobStream node answers /lobs/{id}, /status, /fsck and /metrics\n");
        }
    }

    /** The Streams instance to ask which node owns a key; set before {@link #start()}. */
    public void attach(KafkaStreams streams) {
        this.streams = streams;
    }

    /**
     * Which partitions are being caught up from lob.commands, how many records each has left once its replay began, and
     * which wait after a catch-up that failed (shown by {@code GET /status}); set before {@link #start()}.
     */
    public void attachCatchUps(Supplier<? extends Collection<Integer>> catchingUp, Supplier<? extends Map<Integer, Long>> remaining,
                               Supplier<? extends List<TaskFailure>> waiting) {
        reports.attachCatchUps(catchingUp, remaining, waiting);
    }

    /** How the node's last check of the cluster went (shown by {@code GET /status} as {@code kafka}); set before {@link #start()}. */
    public void attachClusterChecks(Supplier<AdminPurgeProgress.ClusterAnswer> answer) {
        reports.attachClusterChecks(answer);
    }

    public void start() {
        server.start();
    }

    /**
     * Fails as a node's start would if its HTTP API cannot bind {@code host:port} (port 0 always can): for a node to say
     * so before it starts anything else, as an embedded broker and registry, which take seconds.
     */
    public static void requireBindable(String host, int port) throws IOException {
        if (port == 0) {
            return;
        }
        try (ServerSocket probe = new ServerSocket()) {
            probe.bind(new InetSocketAddress(host, port)); // (closing a socket that never accepted leaves no TIME_WAIT behind)
        } catch (BindException e) {
            throw cannotBind(host, port, e);
        }
    }

    private static BindException cannotBind(String host, int port, BindException e) {
        boolean taken = String.valueOf(e.getMessage()).contains("in use");
        BindException said = new BindException("the HTTP API cannot bind " + host + ":" + port + " (" + e.getMessage() + "): " + (taken
                ? "another node or server has it? Choose another port with lob.http.port (node --http-port)"
                : "is lob.http.host an address of this machine, and the port one this user may open (1024 and up)?"));
        said.initCause(e);
        return said;
    }

    public int port() {
        return server.getAddress().getPort();
    }

    /**
     * The host other nodes are told to reach this one at: {@code lob.http.advertised.host} if set, else the bind address;
     * for a wildcard bind (0.0.0.0, ::), which names no host, this machine's name, as Kafka does for a listener without
     * a host. Advertised by every node, the wildcard would make each take itself for the owner of every partition.
     */
    static String advertised(String bindHost, String advertisedHost) {
        if (advertisedHost != null && !advertisedHost.isBlank()) {
            return advertisedHost.strip();
        }
        // an IPv6 literal as Kafka gives it back from application.server, without brackets: a node that advertised them
        // would never find itself the owner of its own partitions
        String b = bindHost.strip();
        String host = b.startsWith("[") && b.endsWith("]") ? b.substring(1, b.length() - 1) : b;
        InetAddress bound;
        try {
            bound = InetAddress.getByName(host);
        } catch (UnknownHostException e) {
            return host; // binding fails next, and says so
        }
        if (!bound.isAnyLocalAddress()) {
            return host;
        }
        try {
            InetAddress self = InetAddress.getLocalHost();
            String name = self.getCanonicalHostName();
            if (self.isLoopbackAddress() || name.contains("%")) {
                // /etc/hosts naming this machine 127.0.x.1, or an IPv6 literal with a scope (%eth0) no URL between nodes carries
                log.warn("HTTP API bound to {}: this machine's name, {}, is no address other nodes can use; set "
                        + "lob.http.advertised.host (a node alone needs none)", host, name);
            } else {
                log.info("HTTP API bound to {}: advertised as {} (lob.http.advertised.host sets another)", host, name);
            }
            return name;
        } catch (UnknownHostException e) {
            // loopback, not the wildcard: a node alone still finds itself the owner of what it holds
            String loopback = InetAddress.getLoopbackAddress().getHostAddress();
            log.warn("HTTP API bound to {}: this machine's name does not resolve ({}); advertised as {}, which other nodes "
                    + "cannot use: set lob.http.advertised.host", host, e.getMessage(), loopback);
            return loopback;
        }
    }

    public HostInfo hostInfo() {
        return new HostInfo(advertisedHost, port());
    }

    /** An endpoint: answers the exchange, which {@link #answering} closes. */
    private interface Endpoint {
        void answer(HttpExchange ex) throws IOException;
    }

    private HttpHandler answering(Endpoint endpoint) {
        return ex -> {
            try (ex) {
                nameNode(ex);
                try {
                    endpoint.answer(ex);
                } catch (IOException | RuntimeException e) {
                    failed(ex, e);
                }
            }
        };
    }

    /** A short plain-text answer, watched for a client that reads nothing. */
    private void text(HttpExchange ex, int status, String text) throws IOException {
        Responses.text(ex, status, text, stalls);
    }

    /** Clears the headers an answer had set, but the node's name, which every answer of the node carries. */
    private void clearHeaders(HttpExchange ex) {
        ex.getResponseHeaders().clear();
        nameNode(ex);
    }

    private void nameNode(HttpExchange ex) {
        ex.getResponseHeaders().set(NODE, authority(advertisedHost, ex.getLocalAddress().getPort()));
    }

    /**
     * A node as its headers name it and as a URL reaches it: {@code host:port}, an IPv6 literal in brackets, without which
     * its last group would read as the port ({@code http://fd00::5:8080} is no URL another node could forward to).
     */
    public static String authority(String host, int port) {
        return org.apache.kafka.common.utils.Utils.formatAddress(host, port);
    }

    // ---------------------------------------------------------------- /lobs/{id}

    private void boundedLobs(HttpExchange ex) throws IOException {
        if (!reads.tryAcquire()) {
            ex.getResponseHeaders().add("Retry-After", "1");
            text(ex, 503, READ_THREADS + " reads in flight on this node; retry\n");
            return;
        }
        try {
            lobs(ex);
        } finally {
            reads.release();
        }
    }

    /**
     * {@code rawPath} with its bytes above ASCII percent-encoded: the JDK server reads the request line a byte per char,
     * so a client that sends an id's UTF-8 unescaped (curl does) had {@code café} looked up as {@code cafÃ©}, and
     * forwarded in the JVM's charset as a third id.
     */
    static String asciiRawPath(String rawPath) {
        if (rawPath.chars().allMatch(c -> c < 0x80)) {
            return rawPath;
        }
        StringBuilder b = new StringBuilder(rawPath.length() + 16);
        for (char c : rawPath.toCharArray()) {
            if (c < 0x80) {
                b.append(c);
            } else {
                b.append(String.format("%%%02X", c & 0xFF));
            }
        }
        return b.toString();
    }

    /** Whether the request says it carries a body (a length above 0, or chunks). */
    private static boolean hasBody(HttpExchange ex) {
        String length = ex.getRequestHeaders().getFirst("Content-Length");
        return ex.getRequestHeaders().containsKey("Transfer-Encoding") || length != null && !length.trim().equals("0");
    }

    private void lobs(HttpExchange ex) throws IOException {
        String method = ex.getRequestMethod();
        if (!Responses.readOnly(ex, stalls)) {
            return;
        }
        if (hasBody(ex)) {
            // never read, a body keeps the JDK server from counting the request as arrived: its request timer (30 s) would
            // then cut the download, however fast it went
            ex.getResponseHeaders().set("Connection", "close");
            text(ex, 400, "a " + method + " of a value takes no request body\n");
            return;
        }
        // the path percent-decoded (a '+' stays a '+': form encoding is for queries, not paths)
        String rawPath = asciiRawPath(ex.getRequestURI().getRawPath());
        String id = URI.create(rawPath).getPath().substring("/lobs/".length());
        if (id.isEmpty()) {
            text(ex, 400, "missing LOB id\n");
            return;
        }
        KafkaStreams s = streams;
        KeyQueryMetadata owner = s == null ? KeyQueryMetadata.NOT_AVAILABLE
                : s.queryMetadataForKey(LobStateStore.NAME, id, new StringSerializer());
        // an owner unavailable: the metadata has the partition but no active task for it yet (between assignments)
        if (owner == null || owner.equals(KeyQueryMetadata.NOT_AVAILABLE) || owner.activeHost().equals(HostInfo.unavailable())) {
            text(ex, 503, "partitions are being assigned; retry\n");
            return;
        }
        Optional<LobStore> local = registry.get(owner.partition());
        if (local.isEmpty() || !owner.activeHost().equals(hostInfo())) {
            String forwarder = ex.getRequestHeaders().getFirst(OwnerProxy.FORWARDED);
            if (forwarder != null || owner.activeHost().equals(hostInfo())) { // a forwarded request is never forwarded again
                // why it is not open, where this node knows it: a catch-up can take hours, a failed task's next try a minute
                Optional<String> away = owner.activeHost().equals(hostInfo()) ? reports.whyNotOpen(owner.partition()) : Optional.empty();
                if (away.isPresent()) {
                    text(ex, 503, "partition " + owner.partition() + " " + away.get() + "; retry\n");
                    return;
                }
                text(ex, 503, "partition " + owner.partition() + " is not open here yet" + (forwarder == null ? ""
                        : " (the request came through " + forwarder + ", whose metadata is older or newer than this node's)") + "; retry\n");
            } else if (!forwards.tryAcquire()) {
                ex.getResponseHeaders().add("Retry-After", "1");
                text(ex, 503, FORWARD_THREADS + " reads forwarded to their owners are in flight on this node; retry\n");
            } else {
                try {
                    proxy.forward(ex, hostInfo(), owner.activeHost(), rawPath);
                } finally {
                    forwards.release();
                }
            }
            return;
        }
        if (local.get().checking()) {
            // the read would wait for the check, on a thread every other partition's reads need too
            ex.getResponseHeaders().add("Retry-After", "1");
            text(ex, 503, "partition " + owner.partition() + " is being checked (fsck); retry\n");
            return;
        }
        serve(ex, local.get(), id, method.equals("HEAD"));
    }

    /** Said with a failure logged at most once a minute: how many requests it failed unsaid before. */
    private static String sameFailure(long notSaid) {
        return "the same failure of other requests is not logged again for a minute" + (notSaid == 0 ? ""
                : "; it was not logged for " + notSaid + " since it last was");
    }

    /**
     * Whether {@code e}, met writing an answer, is the client's connection gone, or the stall watchdog's cut (the write
     * it cut fails first, the watch's close then says why: suppressed).
     */
    static boolean clientGone(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof OwnerProxy.OwnerFailed) {
                return false; // the owner's connection, forwarding, failed: the node's peer, not the client
            }
            String m = t.getMessage();
            if (t instanceof IOException && m != null && (m.contains("Broken pipe") || m.contains("Connection reset")
                    || m.startsWith("cut: "))) {
                return true;
            }
            for (Throwable s : t.getSuppressed()) {
                if (s.getMessage() != null && s.getMessage().startsWith("cut: ")) {
                    return true;
                }
            }
        }
        return false;
    }

    /**
     * Answers a request that failed, if its status line is not sent yet: 503 when the node is starting
     * or stopping or the partition's tablespace closed under the read (it moved: asked again, the request
     * finds the new owner), 500 otherwise, with the reason (a corrupt page names its number). Left
     * unanswered, the JDK server would drop the connection without a word, in its log or to the client.
     * Once the status line is sent, the client sees the body cut short as the connection closes.
     *
     * @throws IOException when the connection is closed (the answer cut short, or the failure's own answer failed): for
     *                     the handler to end by throwing it. The JDK server forgets a connection, which
     *                     {@code jdk.httpserver.maxConnections} counts, only when its answer ends whole or its handler
     *                     throws; closed under a failed answer it stayed counted, and after as many client-aborted
     *                     downloads or stall cuts as that limit the node refused every connection.
     */
    private void failed(HttpExchange ex, Exception e) throws IOException {
        String request = ex.getRequestMethod() + " " + ex.getRequestURI();
        KafkaStreams s = streams;
        boolean stopping = s == null || !(s.state() == KafkaStreams.State.RUNNING || s.state() == KafkaStreams.State.REBALANCING);
        boolean moved = e instanceof TablespaceClosedException || e instanceof ClosedChannelException;
        if (ex.getResponseCode() != -1) {
            // a corrupt data page is read after the status line, as is a client gone mid-value: each as often as asked
            long notSaid = failuresSaid.sayNow(e.toString());
            if (notSaid >= 0) {
                if (e instanceof DamagedPageException) {
                    log.error("{}: {}; the answer was cut short ({})", request, e.getMessage(), sameFailure(notSaid));
                } else if (clientGone(e)) { // a download cancelled, or cut by the watchdog (which said so): the client's doing
                    log.debug("{}: the client went away mid-answer ({}): {}", request, sameFailure(notSaid), e.toString());
                } else {
                    log.warn("{}: failed after the response began; connection closed ({}): {}", request, sameFailure(notSaid),
                            e.toString());
                }
            }
            Responses.cutShort(ex);
            throw new IOException(request + ": cut short", e);
        }
        try {
            clearHeaders(ex); // what the value's answer had set (its ETag, its Content-Type) is not this one's
            if (stopping || moved) {
                log.debug("{}: {}", request, e.toString());
                text(ex, 503, (stopping ? "the node is starting or stopping" : "the partition moved") + "; retry\n");
            } else {
                long notSaid = failuresSaid.sayNow(e.toString());
                if (notSaid >= 0) {
                    log.error("{} failed ({})", request, sameFailure(notSaid), e);
                }
                text(ex, 500, "failed: " + TaskRetries.messages(e) + "\n");
            }
        } catch (IOException | RuntimeException answering) {
            log.debug("{}: could not answer: {}", request, answering.toString());
            throw new IOException(request + ": could not answer", answering);
        }
    }

    private void serve(HttpExchange ex, LobStore store, String id, boolean head) throws IOException {
        LobReadHandle read = null;
        long began = System.nanoTime();
        try {
            Optional<LobReadHandle> opened = store.open(id);
            if (opened.isEmpty()) {
                text(ex, 404, "no LOB " + id + "\n");
                return;
            }
            read = opened.get();
            serveValue(ex, store, id, read, head);
        } catch (CorruptPageException | PageReadException | EOFException bad) { // EOF: a page past the end of a file cut short
            int pinMaxMs = store.config().readPinMaxMs();
            if (read != null && !(bad instanceof PageReadException) && pinMaxMs > 0
                    && System.nanoTime() - began >= TimeUnit.MILLISECONDS.toNanos(pinMaxMs)
                    && store.current(id).map(VersionEntry::originVersion).orElse(-1L) != read.version().originVersion()) {
                // a version a write replaced under a read longer than lob.read.pin.max.ms: purge may have freed its pages
                // under the reader, and a writer taken one again (it then fails its owner check); no damage, as fsck would
                // find none. Not a value only moved by compaction (the same origin): its old copy stays while any reader
                // holds it (a move and then a write, both during the read, are taken for this too; so is a freed page a
                // shrink cut off the file). Nor a read the device failed (EIO): a page taken again reads without error
                throw bad;
            }
            // page numbers are per tablespace: named with it, and told apart from a client gone in failed()
            throw new DamagedPageException(store.name(), bad);
        }
    }

    /** A page of a value's current version that fails its checks or cannot be read: damage on disk, logged as an error. */
    private static final class DamagedPageException extends IOException {
        DamagedPageException(String tablespace, IOException cause) {
            super(tablespace + ": " + cause.getMessage() + " (lobstream fsck, or GET /fsck?data=true, checks the rest)", cause);
        }
    }

    private void serveValue(HttpExchange ex, LobStore store, String id, LobReadHandle handle, boolean head) throws IOException {
        // A response with no body releases the version's pin before it is written: a client that reads nothing
        // (pipelined HEADs) would otherwise hold a compaction move's old copy until the stall watchdog cut it.
        try (LobReadHandle h = handle) {
            long length = h.length();
            var headers = ex.getResponseHeaders();
            // the copy too: another node's copy of the partition numbers the same values' versions otherwise; the origin,
            // not the version: a compaction move changes the version, not a byte (VersionEntry#originVersion)
            String etag = "\"" + store.copyId() + "." + h.version().originVersion() + "\"";
            headers.add("ETag", etag);
            headers.add("Accept-Ranges", "bytes");
            // as stored, every write path made them safe (CommandApplier); again here: an index entry made by hand, or damaged
            // in a way its CRC missed, must not put CR LF (or a char the JDK sends as their low byte) into the headers
            Attributes attributes = h.version().attributes().headerSafe();
            headers.add("Content-Type", attributes.contentType() != null ? attributes.contentType() : "application/octet-stream");
            attributes.metadata().forEach((k, v) -> headers.add(META + k, v));
            switch (Preconditions.evaluate(Responses.listHeader(ex.getRequestHeaders(), "If-Match"),
                    Responses.listHeader(ex.getRequestHeaders(), "If-None-Match"), etag)) {
                case NOT_MODIFIED -> { // the 200's headers, its length too (RFC 9110 §15.4.5, §8.6), and no body
                    headers.add("Content-Length", Long.toString(length));
                    h.close();
                    StallWatchdog.sendHeaders(stalls, ex, 304, -1);
                    return;
                }
                case FAILED -> {
                    clearHeaders(ex);
                    headers.add("ETag", etag); // the version there is: a client that asked for another can tell
                    h.close();
                    text(ex, 412, "LOB " + id + " is at version " + etag + ", not one If-Match names\n");
                    return;
                }
                case PROCEED -> {
                }
            }
            // RFC 9110 14.2: Range is defined for GET alone, and a server must ignore it on HEAD (so HEAD answers
            // 200 with the whole value's length). 13.1.5: a range asked for with If-Range is served only of that
            // version; otherwise the whole value (a resumed download must not splice two versions). A date cannot
            // match: no Last-Modified.
            String ifRange = ex.getRequestHeaders().getFirst("If-Range");
            String rangeHeader = !head && (ifRange == null || ifRange.equals(etag)) ? ex.getRequestHeaders().getFirst("Range") : null;
            Optional<ByteRange> range;
            try {
                range = ByteRange.parse(rangeHeader, length);
            } catch (ByteRange.Unsatisfiable u) {
                headers.add("Content-Range", "bytes */" + length);
                h.close();
                StallWatchdog.sendHeaders(stalls, ex, 416, -1);
                return;
            }
            long from = range.map(ByteRange::first).orElse(0L);
            long count = range.map(ByteRange::length).orElse(length);
            range.ifPresent(r -> headers.add("Content-Range", "bytes " + r.first() + "-" + r.last() + "/" + length));
            int status = range.isPresent() ? 206 : 200;
            if (head) {
                headers.add("Content-Length", Long.toString(count));
                h.close();
                StallWatchdog.sendHeaders(stalls, ex, status, -1);
                return;
            }
            if (count == 0) { // no body either
                h.close();
                StallWatchdog.sendHeaders(stalls, ex, status, -1);
                return;
            }
            try (StallWatchdog.Watch w = stalls.watch(ex)) {
                w.sendHeaders(status, count);
                try (InputStream in = h.stream(from, from + count)) {
                    // the body stream is closed with the exchange, never before it (Responses.cutShort says why)
                    in.transferTo(w.body());
                }
            }
        }
    }

    // ---------------------------------------------------------------- /status, /fsck, /metrics

    private void status(HttpExchange ex) throws IOException {
        if (!Responses.readOnly(ex, stalls)) {
            return;
        }
        sendJson(ex, reports.status(streams));
    }

    private void fsck(HttpExchange ex) throws IOException {
        if (!Responses.readOnly(ex, stalls)) {
            return;
        }
        // data=false by default: reading every value takes as long as reading the tablespace (not under the exclusive
        // latch: LobStore.fsckOnline), and competes with the reads clients make. Asked for.
        String query = ex.getRequestURI().getQuery();
        boolean data;
        if (query == null || query.equals("data=false")) {
            data = false;
        } else if (query.equals("data=true")) {
            data = true;
        } else {
            text(ex, 400, "the one parameter is data=true|false (read every data page and check its checksum too; "
                    + "default false), not " + query + "\n");
            return;
        }
        if (!fscks.tryAcquire()) {
            ex.getResponseHeaders().add("Retry-After", "10");
            text(ex, 503, "an fsck is running on this node; retry once it is done\n");
            return;
        }
        ObjectNode report;
        try {
            report = reports.fsck(data);
        } finally {
            fscks.release(); // before the answer is written: a client that does not read it must not hold every later fsck
        }
        sendJson(ex, report);
    }

    private void sendJson(HttpExchange ex, Object node) throws IOException {
        byte[] json = JSON.writerWithDefaultPrettyPrinter().writeValueAsBytes(node);
        Responses.send(ex, 200, "application/json", json, stalls);
    }

    /**
     * Stops answering and waits up to {@link #CLOSE_WAIT} for the requests being served. Not {@code shutdownNow()}: its
     * interrupt would land on a handler reading a page, and a {@code FileChannel} read by an interrupted thread closes
     * the tablespace's page file for every thread, the writer's too. {@code stop(0)} has closed every connection already,
     * so a handler writing a response fails at once; one still checking a tablespace ({@code /fsck}) is left to finish.
     */
    @Override
    public void close() {
        server.stop(0);
        executor.shutdown();
        try {
            if (!executor.awaitTermination(CLOSE_WAIT.toMillis(), TimeUnit.MILLISECONDS)) {
                log.warn("HTTP API closed with requests still being served after {} s (an fsck, or a request forwarded to an owner "
                        + "that does not answer); their threads end with them", CLOSE_WAIT.toSeconds());
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        stalls.close();
    }
}
