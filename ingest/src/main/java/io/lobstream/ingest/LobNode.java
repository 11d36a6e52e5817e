package io.lobstream.ingest;

import io.lobstream.ingest.http.LobHttpServer;
import io.lobstream.ingest.http.MetricsEndpoint;
import io.lobstream.ingest.writer.AdminPurgeProgress;
import io.lobstream.ingest.writer.AdminCommandsLogEnd;
import io.lobstream.ingest.writer.NodeInUse;
import io.lobstream.ingest.writer.TablespaceCatchUp;
import io.lobstream.ingest.writer.TablespaceRegistry;
import io.lobstream.ingest.writer.TaskRetries;
import io.lobstream.ingest.writer.UndoResender;
import io.lobstream.ingest.writer.WriterMetrics;
import io.lobstream.ingest.writer.WriterTopology;
import io.lobstream.schema.HostLiterals;
import io.lobstream.schema.LobSerdes;
import io.lobstream.schema.LobStreamConfig;
import io.lobstream.schema.LobStreamConfig.ClientKind;
import io.lobstream.schema.TopicSetup;
import io.lobstream.schema.Topics;
import io.lobstream.store.LobStoreConfig;
import io.lobstream.store.index.IndexMemory;
import io.lobstream.store.page.PageCodec;
import io.lobstream.store.tablespace.TablespaceDirs;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.binder.kafka.KafkaStreamsMetrics;
import io.micrometer.core.instrument.config.MeterFilter;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.CloseOptions.GroupMembershipOperation;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.state.HostInfo;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeoutException;
import java.util.stream.Collectors;

/**
 * A writer node: the Kafka Streams writer topology (exactly-once v2, one task and one tablespace
 * per partition) and the HTTP API. Several nodes with the same application id split the
 * partitions between them.
 */
public final class LobNode implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(LobNode.class);

    private final LobStreamConfig config;
    private final LobStoreConfig storeConfig;
    private final PrometheusMeterRegistry meters = newRegistry();
    private final TablespaceRegistry tablespaces = new TablespaceRegistry();
    private LobHttpServer http;
    private KafkaStreams streams;
    /** The partition count of the topics the writer runs on: lob.commands', whatever lob.topic.partitions says. */
    private int partitions;
    /** Completed, with why, when the writer stops on its own for good (see {@link #writerStopped()}). */
    private final CompletableFuture<String> writerStopped = new CompletableFuture<>();
    private KafkaStreamsMetrics streamsMetrics;
    private final AutoCloseable processMetrics = MetricsEndpoint.bindProcessMetrics(meters);
    private TablespaceCatchUp catchUps;
    private Serializer<Object> undoWriter;
    /** The partitions this node uses, written for the purge workers beside it; null before the writer starts. */
    private NodeInUse inUse;
    private AdminPurgeProgress purgeProgress;
    private AdminCommandsLogEnd commandsLogEnd;
    private StaticMembers members;

    /** A node whose engine keys ({@code lob.page.size}, {@code lob.history.max}, ...) are read from {@code config}, as {@code lobstream node} does. */
    public LobNode(LobStreamConfig config) {
        this(config, new LobStoreConfig(config.originals()));
    }

    /** A node whose engine runs by {@code storeConfig}: engine keys in {@code config} are not read. */
    public LobNode(LobStreamConfig config, LobStoreConfig storeConfig) {
        WriterStreamsSettings.checkValues(config);
        List<String> unknown = WriterStreamsSettings.unknown(config);
        if (!unknown.isEmpty()) {
            log.warn("{}: no setting of Kafka Streams or of its clients; passed on as given (a plugin's own setting? a "
                    + "misspelling leaves the writer on the default)", unknown);
        }
        this.config = config;
        this.storeConfig = storeConfig;
    }

    /** The partition count of the topics the writer runs on (lob.commands'), once started. */
    public int partitions() {
        return partitions;
    }

    /** Creates the topics if needed, binds the HTTP port and starts the writer. */
    public LobNode start() throws IOException, InterruptedException {
        try {
            // before Kafka Streams makes its state directory there: a power loss soon after a first start must not take
            // the data directory's name (the embedded broker's may have made it, not durably), nor tablespaces/
            TablespaceDirs.createDirectoriesDurably(config.dataDir().resolve("tablespaces"));
            syncAboveDataDir();
            warnOfKeptAside();
            startWriter(checkTopics());
        } catch (IOException | InterruptedException | RuntimeException | Error e) {
            try {
                close(); // the Kafka clients, the catch-up threads, the HTTP port and the JVM meters of a node that did not start
            } catch (RuntimeException closing) {
                e.addSuppressed(closing);
            }
            throw e;
        }
        log.info("node up: HTTP API on {}", httpUrl());
        return this;
    }

    /** The data directory's name, where it is on disk (not as its path reads: "." or a link). Best effort. */
    private void syncAboveDataDir() {
        try {
            Path above = config.dataDir().toRealPath().getParent();
            if (above != null) {
                TablespaceDirs.syncDirectory(above);
            }
        } catch (IOException e) { // a file system that refuses a directory's fsync (some network or read-only mounts)
            log.warn("cannot sync the directory that holds {}: {}", config.dataDir(), e.toString());
        }
    }

    private void warnOfKeptAside() throws IOException {
        List<Path> keptAside = TablespaceDirs.notTablespaces(config.dataDir());
        if (!keptAside.isEmpty()) {
            // nothing removes them: said at each start, so that a disk filling with them is not a surprise
            log.warn("{} directories under {} are not tablespaces (copies kept aside, or a p-N without its descriptor: see "
                    + "fsck; nothing removes them): {}",
                    keptAside.size(), config.dataDir().resolve("tablespaces"),
                    keptAside.stream().map(p -> p.getFileName().toString()).toList());
        }
    }

    /** Creates the topics if needed and warns of what in their settings LobStream does not expect; returns their partitions. */
    private int checkTopics() throws IOException, InterruptedException {
        int partitions;
        try (Admin admin = Admin.create(config.clientConfig(ClientKind.ADMIN))) {
            partitions = TopicSetup.ensureTopics(admin, config);
            log.info("topics {} ready with {} partitions", config.topics().all(), partitions);
            TopicSetup.topicProblems(admin, config).forEach(log::warn); // advice only: the node runs, DescribeConfigs or not
            if (partitions != config.get(LobStreamConfig.PARTITIONS)) {
                log.warn("the topics have {} partitions, not {}={}: they existed before (created by hand, or {} by a producer on "
                                + "a broker that creates topics on first use); a topic's partition count is fixed for good",
                        partitions, LobStreamConfig.PARTITIONS.name(), config.get(LobStreamConfig.PARTITIONS), config.topics().commands());
            }
        } catch (java.util.concurrent.ExecutionException e) {
            throw new IOException("cannot create or check the topics on " + config.bootstrap() + ": "
                    + (e.getCause() instanceof org.apache.kafka.common.errors.TimeoutException
                    ? "no broker answered (" + e.getCause().getMessage() + "): is --bootstrap right, and the cluster up?"
                    : TaskRetries.messages(e.getCause())), e.getCause());
        }
        return partitions;
    }

    /**
     * A node advertising a loopback address (lob.http.host's default, 127.0.0.1) beside a Kafka on another host: a lone
     * node needs no other address, but writer nodes on other hosts could not forward reads of its partitions to it.
     */
    private void warnIfLoopbackAdvertisedToACluster(String advertised) {
        if (!HostLiterals.isLoopback(advertised)) {
            return;
        }
        for (String server : config.bootstrap().split(",")) {
            String host = org.apache.kafka.common.utils.Utils.getHost(server.strip()); // as Kafka reads it: [v6]:port too
            if (host != null && !host.isEmpty() && !HostLiterals.isLoopback(host)) {
                log.warn("this node tells other writer nodes to reach its HTTP API at {}, a loopback address, while Kafka is at {}: "
                        + "if writer nodes run on other hosts, they cannot forward reads to it; set {} (and {}) to an address they reach",
                        advertised, config.bootstrap(), LobStreamConfig.HTTP_HOST.name(), LobStreamConfig.HTTP_ADVERTISED_HOST.name());
                return;
            }
        }
    }

    private static boolean sameEndpoint(String a, String b) {
        try {
            return HostInfo.buildFromEndpoint(a).equals(HostInfo.buildFromEndpoint(b));
        } catch (RuntimeException unreadable) { // a file edited by hand
            return a.equals(b);
        }
    }

    /**
     * Says when a node with a {@code lob.node.id} comes back under another HTTP address than it last ran with (a new host
     * name or IP, another port, port 0): a static member back within the session timeout causes no rebalance, so every
     * node, this one too, keeps the old address as its partitions' owner, and forwards their reads there, until the next
     * rebalance. The address is kept in the data directory ({@code node.address}).
     */
    private void warnIfAddressMoved(String address) {
        if (config.get(LobStreamConfig.NODE_ID).isBlank()) {
            return;
        }
        Path file = config.dataDir().resolve("node.address");
        try {
            String last = Files.exists(file) ? Files.readString(file).strip() : null;
            // as Kafka reads them: an IPv6 host a release before wrote without brackets is the same address
            if (last != null && !sameEndpoint(last, address)) {
                log.warn("this node ran last at {} and now at {}: if it is back under lob.node.id {} within {} ms of its stop, "
                                + "its return causes no rebalance, so the writer group still names {} for its partitions, and reads "
                                + "of them are forwarded there until the next rebalance. Stop a node longer than that to change its "
                                + "address", last, address, config.get(LobStreamConfig.NODE_ID),
                        config.get(LobStreamConfig.SESSION_TIMEOUT_MS), last);
            }
            if (!address.equals(last)) {
                Files.writeString(file, address + "\n");
            }
        } catch (IOException e) {
            log.debug("cannot keep the node's address in {}: {}", file, e.toString());
        }
    }

    /** Binds the HTTP port and starts the writer, on topics of {@code partitions} partitions. */
    private void startWriter(int partitions) throws IOException {
        this.partitions = partitions;
        http = new LobHttpServer(config.get(LobStreamConfig.HTTP_HOST), config.get(LobStreamConfig.HTTP_ADVERTISED_HOST),
                config.get(LobStreamConfig.HTTP_PORT), config.topics().commands(), tablespaces, meters,
                java.time.Duration.ofMillis(config.get(LobStreamConfig.HTTP_STALL_TIMEOUT_MS)));
        catchUps = new TablespaceCatchUp(config, new WriterMetrics(meters));
        Properties streamsProperties = WriterStreamsSettings.of(config, partitions, LobHttpServer.authority(http.hostInfo().host(), http.port()));
        warnIfBackpressureCanOutlastTransactions(partitions, config.writerTransactionTimeoutMs());
        indexMemoryWanted(storeConfig.indexMemoryBytes(), partitions).ifPresent(wanted -> log.warn("{}={} is short for {} "
                + "partitions: each tablespace written holds about 0.5 MiB of memtables from its first writes, and past half of "
                + "the budget every write flushes a small table file (and reads slow); set it to {} or more (a node may hold "
                + "every partition, after a failover)", LobStoreConfig.INDEX_MEMORY_BYTES.name(), storeConfig.indexMemoryBytes(),
                partitions, wanted));
        warnIfAddressMoved(streamsProperties.getProperty(StreamsConfig.APPLICATION_SERVER_CONFIG));
        warnIfLoopbackAdvertisedToACluster(http.hostInfo().host());
        warnIfPageListsCanOutgrowRecords();
        if (config.get(LobStreamConfig.VALUE_MAX_BYTES) > storeConfig.layoutMaxBytes()) {
            // the client sends such a value whole, chunk by chunk; the writer refuses its first chunk (too-large)
            log.warn("{} is {} bytes, but {}-byte pages hold values up to {} bytes: longer ones are dead-lettered as too-large; "
                            + "lower {} (on the clients too), or make new tablespaces with larger pages ({})",
                    LobStreamConfig.VALUE_MAX_BYTES.name(), config.get(LobStreamConfig.VALUE_MAX_BYTES), storeConfig.pageSize(),
                    storeConfig.layoutMaxBytes(), LobStreamConfig.VALUE_MAX_BYTES.name(), LobStoreConfig.PAGE_SIZE.name());
        }
        UndoResender.Settings resend = UndoResender.Settings.OFF;
        long resendEvery = config.get(LobStreamConfig.UNDO_RESEND_INTERVAL_MS);
        if (resendEvery > 0) {
            purgeProgress = new AdminPurgeProgress(config, partitions, meters);
            resend = UndoResender.Settings.every(purgeProgress, resendEvery, config.writerTransactionTimeoutMs());
        }
        commandsLogEnd = new AdminCommandsLogEnd(config);
        undoWriter = LobSerdes.valueSerializer(config);
        streams = new KafkaStreams(WriterTopology.build(config, storeConfig, meters, tablespaces, partitions, catchUps, resend,
                commandsLogEnd, undoWriter), streamsProperties);
        String nodeId = config.get(LobStreamConfig.NODE_ID).strip();
        members = nodeId.isEmpty() ? null : new StaticMembers(config, nodeId, this::runningStreamThreads);
        streams.setUncaughtExceptionHandler(new WriterThreadFailures(members, System::nanoTime));
        streams.setStateListener((now, before) -> {
            log.info("writer {} -> {}", before, now);
            // PENDING_ERROR too: Kafka Streams then joins its stream threads with no time limit (a transaction's abort, a
            // consumer's close), minutes in which the node would serve 503s and not exit
            if (now == KafkaStreams.State.ERROR || now == KafkaStreams.State.PENDING_ERROR) {
                writerStopped.complete("the writer stopped: Kafka Streams reached its " + now + " state (the log above says why)");
            }
        });
        Gauge.builder("lob_node_history_length", tablespaces, t -> t.totals().historyLength())
                .description("Versions superseded and not yet reclaimed, all tablespaces open on this node "
                        + "(lob_history_length has them per tablespace)").register(meters);
        for (String cause : TaskRetries.CAUSES) {
            FunctionCounter.builder("lob_writer_task_failures", tablespaces, t -> t.taskFailures(cause)).tag("cause", cause)
                    .description("Writer tasks that failed (each stops its partition until it starts again: at once after a "
                            + "first failure, then after a wait doubling from 1 s to 60 s): a full or read-only disk, the registry "
                            + "away, or other").register(meters);
        }
        Path dataDir = config.dataDir(); // (a supplier, held strongly: a gauge holds its state object weakly, and lost this Path)
        Gauge.builder("lob_tablespaces_kept_aside_bytes", () -> TablespaceDirs.notTablespacesBytes(dataDir)).baseUnit("bytes")
                .description("Disk the copies kept aside under the data directory hold (p-N.REASON-TIME, listed by fsck): "
                        + "nothing removes them").register(meters);
        IndexMemory indexMemory = IndexMemory.shared(storeConfig.indexMemoryBytes());
        Gauge.builder("lob_index_memory_used_bytes", indexMemory, IndexMemory::usedBytes).baseUnit("bytes")
                .description("Memory outside the heap the RocksDB indexes of this node's tablespaces use together (block "
                        + "cache and memtables), of lob.index.memory.bytes").register(meters);
        streamsMetrics = new KafkaStreamsMetrics(streams);
        streamsMetrics.bindTo(meters);
        http.attach(streams);
        http.attachCatchUps(catchUps::catchingUp, catchUps::remainingRecords, catchUps::waiting);
        if (purgeProgress != null) {
            http.attachClusterChecks(purgeProgress::lastAnswer);
        }
        http.start();
        inUse = NodeInUse.start(dataDir, tablespaces);
        streams.start();
        if (members != null) {
            members.removeLeftOver(config.get(LobStreamConfig.STREAM_THREADS));
        }
    }

    /**
     * The index budget a node should have for {@code partitions}, if {@code bytes} is less. A tablespace written holds
     * its column families' first arena blocks and the commands' memtable filter, about 0.45 MiB measured, charged to the
     * budget's half for memtables, which RocksDB flushes at seven eighths full: 1.5 MiB of the budget a partition keeps
     * a margin. Below, with the 128 MiB default, 25,600 small writes across 128 tablespaces flushed 768 table files.
     */
    static Optional<Long> indexMemoryWanted(long bytes, int partitions) {
        long wanted = partitions * INDEX_MEMORY_PER_PARTITION;
        return bytes < wanted ? Optional.of(wanted) : Optional.empty();
    }

    static final long INDEX_MEMORY_PER_PARTITION = 3L << 19;

    /**
     * Backpressure sleeps on the stream thread inside its open transaction, once per command it processes between two
     * commit checks: up to about 16 buffered commands per task, every task of the thread (all the partitions, on a node
     * alone). Past the transaction timeout the coordinator aborts the transaction and fences the thread, whose tasks
     * then move (a rebalance); with the defaults it is a few seconds at most.
     */
    private void warnIfBackpressureCanOutlastTransactions(int partitions, long transactionTimeoutMs) {
        int threads = Math.max(1, config.get(LobStreamConfig.STREAM_THREADS));
        long tasksPerThread = (partitions + threads - 1) / threads;
        long worstMs = storeConfig.historyMaxDelayMs() * 16L * tasksPerThread;
        if ((storeConfig.historyMax() > 0 || storeConfig.historyMaxRatio() > 0) && worstMs > transactionTimeoutMs / 2) {
            log.warn("backpressure could sleep up to {} ms in one writer transaction ({}={} ms per command, up to 16 commands "
                            + "per task, {} tasks per stream thread), more than half its timeout of {} ms: a transaction that outlasts "
                            + "it is aborted and its thread fenced. Lower {}, or raise lob.streams.producer.transaction.timeout.ms",
                    worstMs, LobStoreConfig.HISTORY_MAX_DELAY_MS.name(), storeConfig.historyMaxDelayMs(), tasksPerThread,
                    transactionTimeoutMs, LobStoreConfig.HISTORY_MAX_DELAY_MS.name());
        }
    }

    /**
     * An undo or reclaim record lists a version's pages, one extent per page at worst: past
     * {@link Topics#PAGE_LIST_RECORD_MAX_BYTES} only for values far above the default page size's limit, which larger
     * pages and a raised lob.value.max.bytes allow. Such a record would fail its writer or purge worker at every try.
     */
    private void warnIfPageListsCanOutgrowRecords() {
        long longest = Math.min(config.get(LobStreamConfig.VALUE_MAX_BYTES), storeConfig.layoutMaxBytes());
        long worstBytes = longest / PageCodec.payloadCapacity(storeConfig.pageSize()) * Topics.EXTENT_MAX_BYTES;
        if (worstBytes > Topics.PAGE_LIST_RECORD_MAX_BYTES) {
            log.warn("a value of {} bytes ({}, and {}-byte pages) can list its pages in up to {} bytes, over the {} that "
                            + "undo and reclaim records may take: lower {}, or raise max.message.bytes of {} and {} and the "
                            + "max.request.size of the writer's and the purge workers' producers", longest,
                    LobStreamConfig.VALUE_MAX_BYTES.name(), storeConfig.pageSize(), worstBytes, Topics.PAGE_LIST_RECORD_MAX_BYTES,
                    LobStreamConfig.VALUE_MAX_BYTES.name(), config.topics().undoHistory(), config.topics().reclaim());
        }
    }

    /** Waits until the writer runs (all partitions assigned and open). */
    public void awaitRunning(Duration timeout) throws TimeoutException, InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (streams.state() != KafkaStreams.State.RUNNING) {
            if (System.nanoTime() > deadline) {
                throw new TimeoutException("writer not running after " + timeout + " (state " + streams.state() + ")");
            }
            if (streams.state() == KafkaStreams.State.ERROR || streams.state() == KafkaStreams.State.PENDING_ERROR
                    || streams.state() == KafkaStreams.State.NOT_RUNNING) {
                throw new IllegalStateException("writer stopped: " + streams.state());
            }
            Thread.sleep(50);
        }
    }

    public TablespaceRegistry tablespaces() {
        return tablespaces;
    }

    /**
     * The node's registry, its filters set before any meter registers (Micrometer applies a
     * filter only to meters registered after it). ReclaimsFirst reads reclaims with timestamp 0,
     * so Kafka Streams' end-to-end latency of that source would read decades: dropped.
     */
    private static PrometheusMeterRegistry newRegistry() {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        registry.config().meterFilter(MeterFilter.deny(id -> id.getName().contains("e2e")
                && (WriterTopology.RECLAIMS_SOURCE.equals(id.getTag("processor-node-id"))
                || WriterTopology.RECLAIMS_SOURCE.equals(id.getTag("processor.node.id")))));
        return registry;
    }

    public PrometheusMeterRegistry meters() {
        return meters;
    }

    public int httpPort() {
        return http.port();
    }

    /** The HTTP API's address as other nodes reach it (lob.http.advertised.host, else lob.http.host). */
    public String httpUrl() {
        return "http://" + LobHttpServer.authority(http.hostInfo().host(), http.port());
    }

    public KafkaStreams streams() {
        return streams;
    }

    /**
     * Completes, with why, when the writer has stopped on its own for good: Kafka Streams reached its ERROR state, or the
     * PENDING_ERROR before it (an
     * error of the JVM in a stream thread, a shutdown another member of the group asked for, a thread it could not
     * replace; other failures replace the thread). Nothing is applied from then on, and the node's process is better
     * ended, for its supervisor to start it again, than left serving reads that go stale.
     */
    public CompletableFuture<String> writerStopped() {
        return writerStopped;
    }

    /**
     * Whether a writer's handler of a failed stream thread has reported {@code e} (in one line, or with its stack trace where
     * the cause does not say it all): the process's handler of the thread's death, which Kafka Streams lets it reach
     * afterwards, need not say it again.
     */
    public static boolean writerReported(Throwable e) {
        return WriterThreadFailures.reported(e);
    }

    /**
     * Stops the node. A static member (lob.node.id set) stays in the group until its session
     * times out, so a quick restart gets the same partitions back; {@code leaveGroup} hands its
     * partitions to the other nodes at once instead (scale-in).
     */
    public void close(boolean leaveGroup) {
        if (inUse != null) {
            inUse.close(leaveGroup); // first: a leaving node's empty list must be the last write
        }
        closeMembers(leaveGroup);
        boolean threadsStopped = true;
        if (streams != null) {
            threadsStopped = streams.close(CloseOptions.timeout(Duration.ofSeconds(30)).withGroupMembershipOperation(
                    leaveGroup ? GroupMembershipOperation.LEAVE_GROUP : GroupMembershipOperation.REMAIN_IN_GROUP));
            if (!threadsStopped) {
                // a commit's fsync, a backpressure wait: what the threads still use stays open under them
                log.warn("the writer's threads did not stop within 30 s; the catch-ups and admin clients they use are left "
                        + "open (the process's exit ends them)");
            }
        }

        closeRest(threadsStopped);
    }

    /**
     * Stops the node: a static member stays in the group (see {@link #close(boolean)}), a node without an id leaves it,
     * so its partitions move at once. Kafka Streams' own {@code close()} leaves no group: its consumers do not send a
     * LeaveGroup, and the partitions of a dynamic member would wait out its session timeout.
     */
    @Override
    public void close() {
        close(config.get(LobStreamConfig.NODE_ID).isBlank());
    }

    /**
     * The names of the node's stream threads not dead. A failed one stays listed until it ends, and under the state it
     * last reported (ThreadMetadata's state is a snapshot, not the thread's own): the caller tells it apart by its Thread.
     */
    private Set<String> runningStreamThreads() {
        return streams.metadataForLocalThreads().stream().filter(t -> !"DEAD".equals(t.threadState()))
                .map(org.apache.kafka.streams.ThreadMetadata::threadName).collect(Collectors.toSet());
    }

    /** First: a stream thread that fails while the node closes keeps its member, as the others do. */
    private void closeMembers(boolean leaving) {
        if (members != null) {
            members.close(leaving);
        }
    }

    private void closeRest(boolean threadsStopped) {
        if (threadsStopped) {
            if (catchUps != null) {
                catchUps.close(); // after the stream threads: none starts another
            }
            if (purgeProgress != null) {
                purgeProgress.close();
            }
            if (commandsLogEnd != null) {
                commandsLogEnd.close(); // after the stream threads: none asks it any more
            }
            if (undoWriter != null) {
                Utils.closeQuietly(undoWriter, "the undo records' serializer"); // after the stream threads: none sends any more
            }
        }
        if (streamsMetrics != null) {
            streamsMetrics.close();
        }
        try {
            processMetrics.close();
        } catch (Exception e) {
            log.debug("closing the JVM's meters", e);
        }
        if (http != null) {
            http.close();
        }
    }
}
