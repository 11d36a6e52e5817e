package io.lobstream.ingest;

import io.lobstream.ingest.http.LobHttpServer;
import io.lobstream.ingest.http.MetricsEndpoint;
import io.lobstream.ingest.writer.AdminPurgeProgress;
import io.lobstream.ingest.writer.AdminCommandsLogEnd;
import io.lobstream.ingest.writer.NodeInUse;
import io.lobstream.ingest.writer.TablespaceTaskAssignor;
import io.lobstream.ingest.writer.TablespaceCatchUp;
import io.lobstream.ingest.writer.TablespaceRegistry;
import io.lobstream.ingest.writer.TaskRetries;
import io.lobstream.ingest.writer.UndoResender;
import io.lobstream.ingest.writer.WriterMetrics;
import io.lobstream.ingest.writer.WriterTopology;
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
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.CloseOptions.GroupMembershipOperation;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeoutException;
import java.util.stream.Collectors;
import java.util.stream.Stream;

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
        checkStreamsValues(config);
        List<String> unknown = unknownStreamsSettings(config);
        if (!unknown.isEmpty()) {
            log.warn("{}: no setting of Kafka Streams or of its clients; passed on as given (a plugin's own setting? a "
                    + "misspelling leaves the writer on the default)", unknown);
        }
        this.config = config;
        this.storeConfig = storeConfig;
    }

    /** Kafka Streams' settings, and each client's under the prefix that gives a setting to that client alone. */
    private static final ConfigDef STREAMS_DEF = StreamsConfig.configDef();
    private static final Map<String, ConfigDef> STREAMS_CLIENT_DEFS = Map.of(
            StreamsConfig.PRODUCER_PREFIX, ProducerConfig.configDef(),
            StreamsConfig.CONSUMER_PREFIX, ConsumerConfig.configDef(),
            StreamsConfig.MAIN_CONSUMER_PREFIX, ConsumerConfig.configDef(),
            StreamsConfig.RESTORE_CONSUMER_PREFIX, ConsumerConfig.configDef(),
            StreamsConfig.GLOBAL_CONSUMER_PREFIX, ConsumerConfig.configDef(),
            StreamsConfig.ADMIN_CLIENT_PREFIX, AdminClientConfig.configDef());
    /** The clients' settings, which Kafka Streams also takes plain, for every client that has them. */
    private static final List<ConfigDef> CLIENT_DEFS = List.of(ProducerConfig.configDef(), ConsumerConfig.configDef(),
            AdminClientConfig.configDef());

    /**
     * The {@code lob.streams.} keys that are no setting of Kafka Streams or of its clients (plain, or under their
     * prefix), an internal topic's ({@code topic.}) or a client tag ({@code client.tag.}). Not refused: a plugin (a
     * metrics reporter, a config provider) reads its own settings from what is given; but a misspelt one would leave
     * the writer on its default with at most a line in Kafka Streams' log, so the node names them at start.
     */
    public static List<String> unknownStreamsSettings(LobStreamConfig config) {
        return config.originals().keySet().stream().filter(key -> key.startsWith(LobStreamConfig.STREAMS_PREFIX)).filter(key -> {
            String s = key.substring(LobStreamConfig.STREAMS_PREFIX.length());
            return takers(s).isEmpty() && !s.startsWith(StreamsConfig.TOPIC_PREFIX) && !s.startsWith(StreamsConfig.CLIENT_TAG_PREFIX);
        }).sorted().toList();
    }

    /**
     * Who takes Kafka Streams' setting {@code s}, each as the name it has there and the settings it is one of: a client
     * under its prefix; Kafka Streams; or, plain, every client that has it (Kafka Streams passes it on). None: no one
     * knows it.
     */
    private static List<Map.Entry<String, ConfigDef>> takers(String s) {
        for (Map.Entry<String, ConfigDef> client : STREAMS_CLIENT_DEFS.entrySet()) {
            if (s.startsWith(client.getKey())) {
                String setting = s.substring(client.getKey().length());
                return client.getValue().configKeys().containsKey(setting) ? List.of(Map.entry(setting, client.getValue())) : List.of();
            }
        }
        if (STREAMS_DEF.configKeys().containsKey(s)) {
            return List.of(Map.entry(s, STREAMS_DEF));
        }
        return CLIENT_DEFS.stream().filter(def -> def.configKeys().containsKey(s)).map(def -> Map.entry(s, def)).toList();
    }

    /**
     * Each {@code lob.streams.} value checked as Kafka Streams, or the client it goes to, will check it: they do so only
     * as the writer starts, which on a node with the embedded broker is after the broker started, and a bad value is a
     * bad argument all the same. A plain client setting goes to every client that has it (Kafka Streams passes it on), a
     * prefixed one to that client; Kafka Streams checks neither. A value that names a config provider's ({@code ${...}})
     * is resolved by the client; a setting no one knows is left alone ({@link #unknownStreamsSettings}).
     *
     * @throws io.lobstream.store.config.ConfigException naming the key and its value
     */
    public static void checkStreamsValues(LobStreamConfig config) {
        config.originals().forEach((key, value) -> {
            if (!key.startsWith(LobStreamConfig.STREAMS_PREFIX) || value == null || value.toString().contains("${")) {
                return;
            }
            for (Map.Entry<String, ConfigDef> taker : takers(key.substring(LobStreamConfig.STREAMS_PREFIX.length()))) {
                LobStreamConfig.checkKafkaValue(key, taker.getKey(), value, taker.getValue());
            }
        });
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
        log.info("node up: HTTP API on http://{}:{}", http.hostInfo().host(), http.port());
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
        if (!isLoopback(advertised)) {
            return;
        }
        for (String server : config.bootstrap().split(",")) {
            String host = org.apache.kafka.common.utils.Utils.getHost(server.strip()); // as Kafka reads it: [v6]:port too
            if (host != null && !host.isEmpty() && !isLoopback(host)) {
                log.warn("this node tells other writer nodes to reach its HTTP API at {}, a loopback address, while Kafka is at {}: "
                        + "if writer nodes run on other hosts, they cannot forward reads to it; set {} (and {}) to an address they reach",
                        advertised, config.bootstrap(), LobStreamConfig.HTTP_HOST.name(), LobStreamConfig.HTTP_ADVERTISED_HOST.name());
                return;
            }
        }
    }

    /** Whether {@code host} names this machine's loopback (a literal, or localhost), without asking a resolver. */
    static boolean isLoopback(String host) {
        String h = host.strip().toLowerCase(java.util.Locale.ROOT);
        return h.equals("localhost") || h.startsWith("127.") || h.equals("::1") || h.equals("[::1]") || h.equals("0:0:0:0:0:0:0:1");
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
            if (last != null && !last.equals(address)) {
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
        Properties streamsProperties = streamsProperties();
        if (!StreamsConfig.EXACTLY_ONCE_V2.equals(streamsProperties.get(StreamsConfig.PROCESSING_GUARANTEE_CONFIG))) {
            log.warn("the writer runs with processing.guarantee={} (set by {}processing.guarantee): a crash may emit an undo "
                            + "record or a dead letter twice, and the torn-write check after a power loss may pass a lost page of a "
                            + "partial update whose base purge reclaimed before the flush; exactly_once_v2 is what LobStream "
                            + "promises", streamsProperties.get(StreamsConfig.PROCESSING_GUARANTEE_CONFIG),
                    LobStreamConfig.STREAMS_PREFIX);
        }
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
        streams = new KafkaStreams(WriterTopology.build(config, storeConfig, meters, tablespaces, partitions, catchUps, resend,
                commandsLogEnd), streamsProperties);
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
     * How the writer's consumers fetch. Commands carry up to {@code lob.chunk.size} bytes each:
     * fetches stay bounded for a small heap (100 records a poll, 16 MiB a fetch), and 4 MiB per
     * partition at most, where Kafka's 1 MiB default holds one whole 512 KiB chunk per round trip
     * ({@link #streamsProperties} lowers it on a small heap: WriterBuffer).
     */
    public static final Map<String, Object> WRITER_FETCH = Map.of(
            ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 100,
            ConsumerConfig.FETCH_MAX_BYTES_CONFIG, 16 * 1024 * 1024,
            ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG, 4 * 1024 * 1024);

    private Properties streamsProperties() {
        Properties p = new Properties();
        // the settings every Kafka client knows (security, timeouts), which Streams hands to its clients; a setting of
        // its producers' or consumers' own goes as lob.streams.producer.<setting> (lob.producer.* is for LobStream's own)
        p.putAll(config.commonClientConfig());
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, config.get(LobStreamConfig.APPLICATION_ID));
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, config.bootstrap());
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        p.put(StreamsConfig.STATE_DIR_CONFIG, config.dataDir().resolve("streams").toAbsolutePath().toString());
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, config.get(LobStreamConfig.STREAM_THREADS));
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, config.get(LobStreamConfig.COMMIT_INTERVAL_MS));
        p.put(StreamsConfig.APPLICATION_SERVER_CONFIG, http.hostInfo().host() + ":" + http.port());
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        p.put(StreamsConfig.PROCESSING_EXCEPTION_HANDLER_CLASS_CONFIG, ReportedFailureHandler.class.getName());
        // The writer has no global stores, so this changes nothing but a warning Kafka Streams (4.2 on) logs at every
        // start, once for itself and once for each stream thread's assignor, which sees only the main consumer's
        // settings. Kafka 5.0 drops the key and always behaves as true (hence a string: its constant is deprecated).
        String globalHandler = "processing.exception.handler.global.enabled";
        p.put(globalHandler, true);
        p.put(StreamsConfig.mainConsumerPrefix(globalHandler), true);
        WRITER_FETCH.forEach((k, v) -> p.put(StreamsConfig.consumerPrefix(k), v));
        // Undo records and dead letters are read read_committed: they wait for the commit anyway. Lingering until it
        // sends a commit's records of a partition in one batch, not a request every few milliseconds (the commit
        // flushes the producer).
        p.put(StreamsConfig.producerPrefix(ProducerConfig.LINGER_MS_CONFIG), config.get(LobStreamConfig.COMMIT_INTERVAL_MS));
        // an undo record lists the pages its version shares with the next (a partial update of a long value: many)
        p.put(StreamsConfig.producerPrefix(ProducerConfig.MAX_REQUEST_SIZE_CONFIG), Topics.PAGE_LIST_RECORD_MAX_BYTES);
        // A writer behind its producers leaves the backlog in Kafka, not in its heap: Kafka Streams buffers up to 1,000
        // records per partition by default, 256–512 MB of commands, which the node's GC then copies (session 13).
        WriterBuffer buffer = WriterBuffer.of(Runtime.getRuntime().maxMemory(), partitions, config.get(LobStreamConfig.CHUNK_SIZE));
        p.put(StreamsConfig.BUFFERED_RECORDS_PER_PARTITION_CONFIG, buffer.recordsPerPartition());
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG), buffer.fetchBytesPerPartition());
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), config.get(LobStreamConfig.SESSION_TIMEOUT_MS));
        // a task stays where its tablespace is, as far as a balanced share allows (TablespaceTaskAssignor says why)
        p.put(StreamsConfig.TASK_ASSIGNOR_CLASS_CONFIG, TablespaceTaskAssignor.class.getName());
        String nodeId = config.get(LobStreamConfig.NODE_ID);
        if (!nodeId.isBlank()) {
            // Static membership: Streams suffixes the id with the thread index, one member per stream thread.
            // A restart within the session timeout keeps the assignment, so the node finds its tablespaces again.
            p.put(StreamsConfig.mainConsumerPrefix(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG), nodeId.strip());
            p.put(StreamsConfig.CLIENT_ID_CONFIG, config.get(LobStreamConfig.APPLICATION_ID) + "-" + nodeId.strip());
        }
        applyStreamsSettings(p, config);
        String isolation = ConsumerConfig.ISOLATION_LEVEL_CONFIG;
        if (!StreamsConfig.EXACTLY_ONCE_V2.equals(p.get(StreamsConfig.PROCESSING_GUARANTEE_CONFIG)) && !p.containsKey(isolation)
                && !p.containsKey(StreamsConfig.consumerPrefix(isolation))) {
            // Streams sets it only under exactly-once: at least once, the writer would apply the commands of a producer's
            // aborted transactions, which replay (read_committed) does not. A user's own lob.streams. setting stands.
            p.put(StreamsConfig.mainConsumerPrefix(isolation), "read_committed");
        }
        warnIfReadAheadPassesHalfTheHeap(p);
        return p;
    }

    /** Said from the settings that take effect, the user's lob.streams. ones too. */
    private void warnIfReadAheadPassesHalfTheHeap(Properties p) {
        String fetchKey = ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG;
        Object fetch = Stream.of(StreamsConfig.mainConsumerPrefix(fetchKey), StreamsConfig.consumerPrefix(fetchKey), fetchKey)
                .map(p::get).filter(Objects::nonNull).findFirst().orElse(ConsumerConfig.DEFAULT_MAX_PARTITION_FETCH_BYTES);
        long records;
        long fetchBytes;
        try {
            records = Long.parseLong(String.valueOf(p.get(StreamsConfig.BUFFERED_RECORDS_PER_PARTITION_CONFIG)).strip());
            fetchBytes = Long.parseLong(String.valueOf(fetch).strip());
        } catch (NumberFormatException e) {
            return; // a ${provider:...} reference, resolved by Kafka Streams itself, or a value it refuses, naming the key
        }
        long worst = WriterBuffer.worstBytes(partitions, records, fetchBytes, config.get(LobStreamConfig.CHUNK_SIZE));
        long heap = Runtime.getRuntime().maxMemory();
        if (worst > heap / 2) {
            log.warn("the writer may hold up to {} MiB of commands read ahead for its {} partitions ({} of {} bytes and two "
                    + "fetches of {} bytes each), over half the heap of {} MiB: give the node more (JAVA_OPTS=-Xmx...)",
                    worst >> 20, partitions, records, config.get(LobStreamConfig.CHUNK_SIZE), fetch, heap >> 20);
        }
    }

    /**
     * What the writer reads ahead of its stream threads, per partition: the records Kafka Streams queues (it pauses a
     * partition once a poll has taken its queue past the limit, so a queue reaches the limit plus one fetch) and the fetch
     * the consumer holds for a paused partition. 16 records and 4 MiB fetches keep a thread fed; but every partition of a
     * writer behind its producers fills its share, and Streams counts records, not bytes: 16 commands of 512 KiB and
     * two 4 MiB fetches are 16 MiB a partition, a 512 MiB heap at 32 partitions. Less where the shares would pass a
     * quarter of the heap: queues down to 2 records, then fetches down to 1 MiB; past that, {@link #worstBytes} says what
     * it can come to (the node warns past half).
     *
     * @param recordsPerPartition   Kafka Streams' buffered.records.per.partition
     * @param fetchBytesPerPartition the consumers' max.partition.fetch.bytes
     */
    record WriterBuffer(int recordsPerPartition, int fetchBytesPerPartition) {
        static final int MAX_RECORDS = 16;
        static final int MIN_RECORDS = 2;
        static final int MAX_FETCH = 4 << 20;
        static final int MIN_FETCH = 1 << 20;

        static WriterBuffer of(long maxHeapBytes, int partitions, int recordBytes) {
            long n = Math.max(1, partitions);
            long record = Math.max(1, recordBytes);
            long share = maxHeapBytes / 4 / n;
            // fewer records first: past a few, a deeper queue feeds the thread no better, where a smaller fetch costs round trips
            int records = (int) Math.max(MIN_RECORDS, Math.min(MAX_RECORDS, (share - 2L * MAX_FETCH) / record));
            int fetch = (int) Math.max(MIN_FETCH, Math.min(MAX_FETCH, (share - records * record) / 2));
            return new WriterBuffer(records, fetch);
        }

        /** What every partition's share together can come to: its queue and two fetches. */
        static long worstBytes(int partitions, long records, long fetchBytes, long recordBytes) {
            return Math.max(1, partitions) * (records * Math.max(1, recordBytes) + 2 * fetchBytes);
        }
    }

    /**
     * Any Kafka Streams (or its clients') setting, as lob.streams.<setting>, wins over the node's own in {@code p}, also
     * over the node's more specific one, which Kafka Streams would otherwise let win (main.consumer. over consumer. over
     * none): a user's linger.ms over the node's producer.linger.ms. The node's more specific key takes the user's value
     * rather than going, since some keys reach a client only prefixed (the main consumer's assignor sees no plain
     * Streams key).
     */
    static void applyStreamsSettings(Properties p, LobStreamConfig config) {
        Map<String, Object> streams = config.originals().entrySet().stream().filter(e -> e.getKey().startsWith(LobStreamConfig.STREAMS_PREFIX))
                .collect(Collectors.toMap(e -> e.getKey().substring(LobStreamConfig.STREAMS_PREFIX.length()), Map.Entry::getValue));
        String consumer = StreamsConfig.consumerPrefix("");
        streams.forEach((k, v) -> {
            List<String> moreSpecific = k.startsWith(consumer) ? List.of(StreamsConfig.mainConsumerPrefix(k.substring(consumer.length())))
                    : List.of(StreamsConfig.producerPrefix(k), StreamsConfig.consumerPrefix(k), StreamsConfig.mainConsumerPrefix(k));
            for (String ours : moreSpecific) {
                if (p.containsKey(ours) && !streams.containsKey(ours)) {
                    p.put(ours, v);
                }
            }
            p.put(k, v);
        });
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
        return "http://" + http.hostInfo().host() + ":" + http.port();
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
