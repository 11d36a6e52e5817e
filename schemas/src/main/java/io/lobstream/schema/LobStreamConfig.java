package io.lobstream.schema;

import io.lobstream.store.LobStoreConfig;
import io.lobstream.store.config.ConfigException;
import io.lobstream.store.config.ConfigKey;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.utils.Utils;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The pipeline's configuration (Kafka, registry, topics, node): every key with its default and
 * meaning. Engine keys live in {@code LobStoreConfig}. Any other key a Kafka client knows
 * ({@code security.protocol}, {@code sasl.*}, {@code ssl.*}, timeouts, tuning) is passed to the
 * clients LobStream creates that know it ({@link #clientConfig}); Kafka Streams gets those common
 * to all clients, and any Streams setting as {@code lob.streams.<setting>}. Every key also
 * reaches the serdes, so {@code apicurio.*} or a Confluent serializer's own keys work unchanged.
 */
public final class LobStreamConfig {
    /** Defaults that command-line options name too (picocli's annotations take constants only). */
    public static final int DEFAULT_KAFKA_PORT = 9092;
    public static final int DEFAULT_REGISTRY_PORT = 8081;
    /** Apicurio's v2 API, under a registry's root: where a registry URL points. */
    public static final String REGISTRY_API_PATH = "/apis/registry/v2";
    public static final String DEFAULT_BOOTSTRAP = "127.0.0.1:" + DEFAULT_KAFKA_PORT;
    public static final String DEFAULT_REGISTRY_URL = "http://127.0.0.1:" + DEFAULT_REGISTRY_PORT + REGISTRY_API_PATH;
    public static final String DEFAULT_DATA_DIR = "lobstream-data";
    public static final int DEFAULT_HTTP_PORT = 8080;
    /** A local node's HTTP API, where the client commands look for one. */
    public static final String DEFAULT_NODE_URL = "http://127.0.0.1:" + DEFAULT_HTTP_PORT;
    /** Kafka's 249 characters of a topic name, less the longest suffix ({@link Topics}: commands.dlq, undo-history). */
    private static final int TOPIC_PREFIX_MAX = 249 - "undo-history".length();
    /** Kafka's 249 characters of a group.instance.id, less Kafka Streams' "-<thread>". */
    private static final int NODE_ID_MAX = 240;

    public static final ConfigKey<String> BOOTSTRAP = ConfigKey.string("bootstrap.servers", DEFAULT_BOOTSTRAP,
            "Kafka bootstrap servers.");
    public static final ConfigKey<String> REGISTRY_URL = ConfigKey.string("lob.registry.url", DEFAULT_REGISTRY_URL,
            "Schema registry URL (Apicurio v2 API). The serdes get it as apicurio.registry.url (not taken on its own) and "
                    + "schema.registry.url (set that too, to a Confluent-compatible API, when you swap in Confluent's serializer).");
    public static final ConfigKey<Integer> REGISTRY_REQUEST_TIMEOUT_MS = ConfigKey.integer("lob.registry.request.timeout.ms", 10_000,
            100, 60_000, "How long one request of the serdes to the schema registry may take, from connecting to the last "
                    + "byte of its answer (Apicurio's client sets no limit: a registry that took the connection and never answered "
                    + "held the asking thread, a writer's stream thread past max.poll.interval.ms). Past it the lookup fails as "
                    + "the registry's, and is retried like an outage. A lookup makes 2 or 3 requests. A token from an identity server "
                    + "(apicurio.auth.service.token.endpoint), when one is due, is fetched within the limit of the request that needs it.");
    public static final ConfigKey<String> TOPIC_PREFIX = ConfigKey.kafkaName("lob.topic.prefix", "lob.", TOPIC_PREFIX_MAX,
            "Prefix of the four topics: commands, undo-history, reclaim, commands.dlq.");
    public static final ConfigKey<Integer> PARTITIONS = ConfigKey.integer("lob.topic.partitions", 8, 1, 10_000,
            "Partitions of each topic when LobStream creates them (= tablespaces).");
    public static final ConfigKey<Integer> REPLICATION = ConfigKey.integer("lob.topic.replication.factor", -1, -1, 32,
            "Replication factor of the topics when LobStream creates them; -1 (or 0): the brokers' default.replication.factor, "
                    + "which is 1 unless the cluster sets it: set this key to 3 on a real cluster. At 3 or more here the topics get "
                    + "min.insync.replicas=2. "
                    + "A node warns at start of topics with one replica on several brokers.");
    public static final ConfigKey<String> VALUE_SERIALIZER = ConfigKey.string("lob.value.serializer",
            "io.lobstream.schema.serde.LobAvroSerializer",
            "Serializer class of record values (Confluent wire format). The default is Apicurio's AvroKafkaSerializer encoding each "
                    + "value with one copy; io.apicurio.registry.serde.avro.AvroKafkaSerializer works too, and Confluent's "
                    + "KafkaAvroSerializer once its jar is a dependency of the app (it is not shipped).");
    public static final ConfigKey<String> VALUE_DESERIALIZER = ConfigKey.string("lob.value.deserializer",
            "io.lobstream.schema.serde.LobAvroDeserializer",
            "Deserializer class of record values; must return the generated specific records. The default is Apicurio's "
                    + "AvroKafkaDeserializer with one datum reader per writer schema instead of one per record.");
    public static final ConfigKey<String> DATA_DIR = ConfigKey.string("lob.data.dir", DEFAULT_DATA_DIR,
            "Data directory: tablespaces, Kafka Streams state, and (embedded) broker and registry files.");
    public static final ConfigKey<String> HTTP_HOST = ConfigKey.string("lob.http.host", "127.0.0.1",
            "Address the node's HTTP read API binds to and advertises.");
    public static final ConfigKey<String> HTTP_ADVERTISED_HOST = ConfigKey.string("lob.http.advertised.host", "",
            "Host name or IP address (IPv6 without brackets), without scheme or port, other nodes use to reach this node's HTTP API (empty = lob.http.host; for a "
                    + "wildcard lob.http.host such as 0.0.0.0, this machine's name).");
    public static final ConfigKey<Integer> HTTP_PORT = ConfigKey.integer("lob.http.port", DEFAULT_HTTP_PORT, 0, 65535,
            "Port of the node's HTTP read API (0 = any free port).");
    public static final ConfigKey<Integer> HTTP_STALL_TIMEOUT_MS = ConfigKey.integer("lob.http.stall.timeout.ms", 60_000, 1000,
            Integer.MAX_VALUE, "A response whose client took less than 64 KiB in this long of blocked writes is cut (its connection closed): a value's, its headers, "
                    + "or a short answer's (a HEAD's, a 304, an error, /status, /metrics, /fsck). A client that stopped reading held a thread, and "
                    + "one of the node's 28 value reads, for as long as it kept the connection open. A slow client that still reads is not "
                    + "cut, as long as it takes 64 KiB within this time (about 1 KiB/s at the default), nor a response waiting on the node's "
                    + "disk or on the owner it forwards from.");
    public static final ConfigKey<String> APPLICATION_ID = ConfigKey.string("lob.writer.application.id", "lobstream-writer",
            "Kafka Streams application id of the writer nodes (also their consumer group).");
    public static final ConfigKey<Integer> STREAM_THREADS = ConfigKey.integer("lob.writer.threads", 2, 1, 64,
            "Kafka Streams threads per node; each runs the tasks (partitions) assigned to it.");
    public static final ConfigKey<Integer> COMMIT_INTERVAL_MS = ConfigKey.integer("lob.writer.commit.interval.ms", 200, 1, 60_000,
            "How often a writer commits its Kafka transaction (and syncs its tablespaces). A command is readable once applied; "
                    + "a client waiting for the commit (read-your-writes) waits up to this long more, and purge sees the undo "
                    + "records after it. Each commit costs a transaction and fsyncs: 200 ms used about a quarter less CPU per MB than 100 "
                    + "(BENCHMARKS.md, Pipeline).");
    public static final ConfigKey<String> NODE_ID = ConfigKey.kafkaName("lob.node.id", "", NODE_ID_MAX,
            "Stable id of this writer node (e.g. its host name or an ordinal). Set, it makes the node a static member of the "
                    + "writer group (group.instance.id = <id>-<thread>): a node that restarts within lob.writer.session.timeout.ms "
                    + "gets its partitions back, with their local tablespaces, without a rebalance. Empty = dynamic membership.");
    public static final ConfigKey<Integer> SESSION_TIMEOUT_MS = ConfigKey.integer("lob.writer.session.timeout.ms", 45_000, 6_000, 1_800_000,
            "How long the group waits for a silent writer node before its partitions move to the others "
                    + "(with lob.node.id set, also how long a restart may take without a rebalance).");
    public static final ConfigKey<Integer> CHUNK_SIZE = ConfigKey.integer("lob.chunk.size", 512 * 1024, 1024, 1000 * 1024,
            "Largest value bytes in one LobCommand. The default leaves room under Kafka's 1 MiB default record limit (the "
                    + "topic's max.message.bytes) for the command's other fields: up to 137 KiB, with a LOB id of 64 KiB (key and "
                    + "field) and 8 KiB of metadata. Above 887 KiB, a chunk with a long id or large metadata can pass that limit "
                    + "unless the topic's is raised.");
    public static final ConfigKey<Long> VALUE_MAX_BYTES = ConfigKey.longValue("lob.value.max.bytes", 1L << 30, 1, 1L << 40,
            "Largest LOB value the writer accepts (a PUT's total length, or the length a WRITE or APPEND would reach); "
                    + "larger ones are dead-lettered as too-large. Up to 1 TiB; the page layout's own limit "
                    + "(about 28 GiB with 16 KiB pages) holds whatever this says.");
    public static final ConfigKey<Integer> UPLOAD_TIMEOUT_MS = ConfigKey.integer("lob.upload.timeout.ms", 10 * 60 * 1000, 1000,
            Integer.MAX_VALUE, "A chunked upload that receives no chunk for this long (its producer died) is dropped and its "
                    + "pages are freed. Idle in the time of the commands (record timestamps; the broker's, lob.commands being "
                    + "LogAppendTime), as replay decides it: a writer that was down or behind does not expire uploads whose chunks are "
                    + "still in its backlog. On a partition where nothing comes, by the writer's clock less 30 s (at most the "
                    + "timeout), if nothing waits in Kafka (the partition ends right after the last command processed).");
    public static final ConfigKey<Integer> DEDUPE_WINDOW_MS = ConfigKey.integer("lob.command.dedupe.window.ms", 60 * 60 * 1000, 60_000,
            Integer.MAX_VALUE, "How long the writer remembers applied commandIds, so a command a producer sends again "
                    + "(same commandId, new offset) is applied once; in the commands' time (record timestamps; the window ends at the latest its "
                    + "partition has shown). Also how long it remembers the commands it dead-lettered: a "
                    + "shorter window could forget one whose Kafka transaction later aborted, and that command would be neither "
                    + "applied nor dead-lettered, so less than 60000 is refused.");
    public static final ConfigKey<Integer> COMPACT_INTERVAL_MS = ConfigKey.integer("lob.compact.interval.ms", 1000, 100,
            Integer.MAX_VALUE, "How often each writer task runs tablespace compaction (see lob.compact.min.free.ratio and "
                    + "lob.compact.max.pages): moving the highest live versions into holes lower in the page file, so the file can "
                    + "shrink after a burst. At most: a task skips its turn while its thread's tasks have spent their 200 ms a "
                    + "second of compaction. Below 10 s: on an idle partition (5 runs in a row that found nothing to move, no "
                    + "command or reclaim between them) every 10 s instead, until a command or a reclaim comes or a run finds "
                    + "something to move: Kafka Streams commits a task after each run, in a transaction of its own.");
    public static final ConfigKey<Long> COMMANDS_RETENTION_MS = ConfigKey.longValue("lob.commands.retention.ms", -1L, -1L,
            Long.MAX_VALUE, "retention.ms of lob.commands when LobStream creates it (with retention.bytes -1). -1 (keep every command) lets replay and "
                    + "the rebuild of a partition on a node without its tablespace start from the beginning; with less, a "
                    + "partition can only be rebuilt from what is left. Otherwise at least lob.command.dedupe.window.ms.");
    public static final ConfigKey<String> PURGE_GROUP = ConfigKey.string("lob.purge.group", "lobstream-purge",
            "Consumer group of the purge workers on the undo-history topic.");
    private static final int MIN_RESEND_INTERVAL_MS = 100;
    public static final ConfigKey<Integer> UNDO_RESEND_INTERVAL_MS = ConfigKey.integer("lob.undo.resend.interval.ms", 30_000, 0,
            Integer.MAX_VALUE, "How often each node reads how far the purge group has consumed lob.undo-history and the "
                    + "writer has applied lob.reclaim. A version still pending purge after both had passed its undo record has it "
                    + "produced again (purge consumed it without a reclaim: a purge worker on a node that had lost the partition "
                    + "skipped it, or a page read failed); again and again, waiting twice as long each time, up to 128 intervals. "
                    + "0: never, and no check of the cluster either (no lob_purge_lag_records, no lob_purge_behind_seconds, no "
                    + "kafka in /status); otherwise at least 100.");

    public static final List<ConfigKey<?>> KEYS = List.of(BOOTSTRAP, REGISTRY_URL, REGISTRY_REQUEST_TIMEOUT_MS, TOPIC_PREFIX, PARTITIONS, REPLICATION,
            VALUE_SERIALIZER, VALUE_DESERIALIZER, DATA_DIR, HTTP_HOST, HTTP_ADVERTISED_HOST, HTTP_PORT, HTTP_STALL_TIMEOUT_MS, APPLICATION_ID, STREAM_THREADS,
            COMMIT_INTERVAL_MS, NODE_ID, SESSION_TIMEOUT_MS, CHUNK_SIZE, VALUE_MAX_BYTES, UPLOAD_TIMEOUT_MS, DEDUPE_WINDOW_MS, COMPACT_INTERVAL_MS,
            COMMANDS_RETENTION_MS, PURGE_GROUP, UNDO_RESEND_INTERVAL_MS);
    /** The names of this class's keys and of the engine's ({@code LobStoreConfig}), which come in the same settings. */
    private static final Set<String> NAMES = java.util.stream.Stream.concat(KEYS.stream(), LobStoreConfig.KEYS.stream())
            .map(ConfigKey::name).collect(java.util.stream.Collectors.toUnmodifiableSet());

    /** Kafka Streams settings of the writer, given as {@code lob.streams.<setting>} (e.g. {@code lob.streams.poll.ms}). */
    public static final String STREAMS_PREFIX = "lob.streams.";
    /** Kafka Streams' exception handlers the writer refuses (see the constructor). */
    private static final List<String> WRITER_HANDLERS = List.of("processing.exception.handler", "production.exception.handler",
            "default.production.exception.handler");
    /**
     * Kafka Streams settings the node's own code reads too, under their {@code lob.writer.*} key: the writer's group in
     * catch-up, purge progress, static members and read-your-writes, its thread count in the static-member clean-up, its
     * session timeout in what a static member is told of a restart (the consumer's, under each prefix Streams takes it
     * with). Given as {@code lob.streams.*} they would reach Kafka Streams alone, and the two would disagree.
     */
    private static final Map<String, ConfigKey<?>> WRITER_OWN = Map.of("application.id", APPLICATION_ID, "num.stream.threads",
            STREAM_THREADS, "commit.interval.ms", COMMIT_INTERVAL_MS, "session.timeout.ms", SESSION_TIMEOUT_MS,
            "consumer.session.timeout.ms", SESSION_TIMEOUT_MS, "main.consumer.session.timeout.ms", SESSION_TIMEOUT_MS);
    /**
     * Kafka Streams settings the writer's topology decides, and why: given, they would change nothing, or break what the
     * node relies on.
     */
    private static final String WRITER_ROUTING = "the writer's undo records go to the partition numbered as their tablespace's "
            + "(purge reads a partition's undo records against that tablespace), its dead letters to the one numbered as their command's";
    private static final Map<String, String> WRITER_FIXED = Map.ofEntries(
            Map.entry("default.timestamp.extractor", "the writer's sources time their records themselves (a command by its own "
                    + "time, as replay reads it, for upload expiry and the dedupe window)"),
            Map.entry("auto.offset.reset", "the writer reads lob.commands and lob.reclaim from their beginning, whatever it "
                    + "says: a command skipped is a write lost"),
            Map.entry("num.standby.replicas", "a tablespace has no changelog for a standby to follow: a partition that moves to a "
                    + "node without its tablespace is rebuilt there from lob.commands"),
            Map.entry("interceptor.classes", "Kafka Streams gives it to its producers and consumers alike, and a producer's "
                    + "interceptor fails a consumer: set " + STREAMS_PREFIX + "producer.interceptor.classes or " + STREAMS_PREFIX
                    + "consumer.interceptor.classes"),
            Map.entry("application.server", "the node advertises the address its HTTP API listens on (lob.http.advertised.host, "
                    + "lob.http.port), to which other nodes forward reads of its partitions; another would have them, and it, "
                    + "forward every read of them away"),
            Map.entry("task.assignor.class", "the writer assigns its tasks itself, keeping a partition on the node that holds "
                    + "its tablespace; another assignor takes its stateless tasks for free to move, and each move rebuilds a "
                    + "tablespace from lob.commands"),
            Map.entry("partitioner.class", WRITER_ROUTING),
            Map.entry("producer.partitioner.class", WRITER_ROUTING),
            Map.entry("partitioner.ignore.keys", WRITER_ROUTING),
            Map.entry("producer.partitioner.ignore.keys", WRITER_ROUTING));
    /**
     * The main consumer's settings Kafka Streams sets itself for exactly-once reads. Given plain or as consumer.*, it
     * drops them with a warning; as main.consumer.* they would win over its own (auto-commit on: a command taken for
     * applied before the writer read it, and skipped after a crash).
     */
    private static final Set<String> MAIN_CONSUMER_FIXED = Set.of("enable.auto.commit", "isolation.level");
    /** Kafka Streams' transaction.timeout.ms for the writer's producers under exactly-once, unless {@code lob.streams.} sets it. */
    private static final long WRITER_TRANSACTION_TIMEOUT_MS = 10_000;
    /**
     * The Kafka client settings: any producer's, consumer's or admin client's, given as they are (but those of
     * {@link #PER_KIND_ONLY} and {@link #CLIENT_OWN}).
     */
    private static final Set<String> CLIENT_KEYS = java.util.stream.Stream.of(ProducerConfig.configNames(),
            ConsumerConfig.configNames(), AdminClientConfig.configNames()).flatMap(Set::stream)
            .collect(java.util.stream.Collectors.toUnmodifiableSet());
    /**
     * A config provider's own settings ({@code config.providers.<alias>.class}, {@code .param.<name>}): no client lists
     * them among its names, yet every client reads them to resolve {@code ${alias:path:key}} in the others (a password
     * kept out of the command line). Taken plain or per kind, and passed to every client with {@code config.providers}.
     */
    private static final String CONFIG_PROVIDER_PREFIX = "config.providers.";
    /**
     * Settings of the serdes (which {@link #serdeConfig} passes every key): Apicurio's, and a Confluent serde's. Any other
     * serde's setting goes as {@code lob.serde.<setting>}.
     */
    private static final List<String> SERDE_PREFIXES = List.of("apicurio.", "schema.registry.", "basic.auth.", "bearer.auth.",
            "specific.avro.", "avro.", "auto.register.", "use.latest.", "use.schema.", "latest.compatibility.", "normalize.",
            "key.subject.", "value.subject.", "context.name.", "proxy.", "rule.");
    /** Apicurio's serdes' TLS settings for the registry, and the names its HTTP client reads them by. */
    public static final String APICURIO_TLS = "apicurio.registry.request.ssl.";
    public static final String APICURIO_HTTP_TLS = "apicurio.rest.request.ssl.";
    /** The TLS settings Apicurio 2.6 passes to its HTTP client under the truststore's names ({@link #serdeConfig()}). */
    private static final List<String> MISNAMED_KEYSTORE = List.of("keystore", "keystore.location");
    /** Apicurio's serdes' key for the registry's address, which {@link #serdeConfig()} sets from {@link #REGISTRY_URL}. */
    private static final String APICURIO_REGISTRY_URL = "apicurio.registry.url";
    /** Where Kafka Streams takes a client's own setting: plain (all of them), or for one kind of client. */
    private static final Set<String> STREAMS_CLIENT_PREFIXES = Set.of("", "producer.", "consumer.", "main.consumer.",
            "restore.consumer.", "global.consumer.", "admin.");
    /** Apicurio's setting that moves the schema id from the record's value to its headers. */
    private static final String SCHEMA_ID_IN_HEADERS = "apicurio.registry.headers.enabled";
    /**
     * The framing every reader here, and every producer in another language (README), takes: Confluent's magic byte and a
     * 4-byte content id in the value. Apicurio's own settings would change it, and the serdes would take them.
     */
    private static final Map<String, String> FRAMING = Map.of(
            SCHEMA_ID_IN_HEADERS, "false",
            "apicurio.registry.as-confluent", "true",
            // the handler as-confluent installs, named too: otherwise every serde warns of a "duplicate id-handler"
            "apicurio.registry.id-handler", "io.apicurio.registry.serde.Legacy4ByteIdHandler",
            "apicurio.registry.use-id", "contentId");
    /** A serde's setting that no prefix above names, passed to the serdes without this prefix. */
    public static final String SERDE_PREFIX = "lob.serde.";

    private final Map<String, Object> props;

    /**
     * @throws ConfigException for a value a key does not take, and for an unknown key (a misspelt key would otherwise
     *                         leave its default in force without a word: {@code bootstrap.server} would start the
     *                         embedded broker of a node meant for a cluster)
     */
    public LobStreamConfig(Map<String, ?> props) {
        this.props = Map.copyOf(props);
        for (String k : props.keySet()) {
            checkKnown(k);
            if (k.startsWith(STREAMS_PREFIX) && "security.protocol".equals(streamsClientSetting(k))
                    && !props.containsKey("security.protocol")) {
                // The writer alone secured: its catch-ups, purge workers, topic setup and admin lookups would speak
                // PLAINTEXT to a secured listener, and fail without naming this key. Taken for a writer of its own
                // principal (its sasl.* under lob.streams.) once the node's other clients are told how to connect
                throw new ConfigException(k + " is not taken alone: set security.protocol (and its sasl.* / ssl.* keys) bare, "
                        + "which every client of the node takes; lob.streams.* may then give the writer its own");
            }
        }
        checkClientValues();
        for (String handler : WRITER_HANDLERS) {
            if (props.containsKey(STREAMS_PREFIX + handler)) {
                // the writer dead-letters a bad command itself and goes on; what it throws, or fails to send, is a failure
                // that must stop the task (a log cut under it, a disk error, a dead letter not written), which a handler
                // that continues would turn into a command skipped, or lost with its dead letter
                throw new ConfigException(STREAMS_PREFIX + handler + " is not taken: the writer dead-letters bad commands itself "
                        + "(lob.commands.dlq), and a failure to process or to send must stop its task, not skip a command");
            }
        }
        Object protocol = props.get(STREAMS_PREFIX + "group.protocol");
        if (protocol != null && !"classic".equalsIgnoreCase(protocol.toString().strip())) {
            // the streams protocol (KIP-1071) has the broker assign tasks: the writer's own assignor, which keeps a
            // partition on the node that holds its tablespace, and its static-member clean-up would both be bypassed
            throw new ConfigException(STREAMS_PREFIX + "group.protocol=" + protocol + " is not taken: the writer assigns its "
                    + "tasks itself, which only the classic protocol lets it do");
        }
        for (String key : List.of("group.protocol", ClientKind.CONSUMER.prefix() + "group.protocol")) {
            Object purgeProtocol = props.get(key);
            if (purgeProtocol != null && !"classic".equalsIgnoreCase(purgeProtocol.toString().strip())) {
                // Kafka then refused the purge workers' consumer for its partition.assignment.strategy, and a node failed at
                // start with only that to say; the assignor is what gives each partition to a worker beside its tablespace
                throw new ConfigException(key + "=" + purgeProtocol + " is not taken: the purge group's assignor gives each "
                        + "partition to a worker whose data directory holds its tablespace, which only the classic protocol "
                        + "lets a client do (the consumer protocol assigns on the broker)");
            }
        }
        FRAMING.forEach((setting, fixed) -> {
            for (String key : List.of(setting, SERDE_PREFIX + setting)) {
                Object given = props.get(key);
                // a class may be given as the Class itself, as Apicurio takes it
                String text = given instanceof Class<?> c ? c.getName() : String.valueOf(given).strip();
                if (given != null && !fixed.equalsIgnoreCase(text)) {
                    // in headers, each command would be dead-lettered and each undo record skipped by purge; a global id
                    // where producers in other languages send the content id (as README says) looks up another schema
                    throw new ConfigException(key + "=" + given + " is not taken: LobStream's readers (the writer, replay, "
                            + "purge) take the schema id from the record's value, as Confluent's framing puts it, and as a "
                            + "content id (" + setting + "=" + fixed + ")");
                }
            }
        });
        for (ConfigKey<?> key : KEYS) {
            key.from(props); // validate every key up front
        }
        writerTransactionTimeoutMs(); // a value that is no number: said now, not after a broker started
        checkCommitIntervalFitsTransactions();
        long retention = get(COMMANDS_RETENTION_MS);
        if (retention >= 0 && retention < get(DEDUPE_WINDOW_MS)) {
            // 0 would let the broker delete the redo log, and the dead letters clients look their writes up in, at once
            throw new ConfigException(COMMANDS_RETENTION_MS.name() + "=" + retention + ": -1 (keep every command) or at least "
                    + DEDUPE_WINDOW_MS.name() + " (" + get(DEDUPE_WINDOW_MS) + ")");
        }
        int resend = get(UNDO_RESEND_INTERVAL_MS);
        if (resend > 0 && resend < MIN_RESEND_INTERVAL_MS) { // each check is admin calls, and a look at every pending version
            throw new ConfigException(UNDO_RESEND_INTERVAL_MS.name() + "=" + resend + ": 0 (never) or at least " + MIN_RESEND_INTERVAL_MS);
        }
        checkGroups();
        checkAdvertisedHost(get(HTTP_ADVERTISED_HOST));
    }

    /**
     * The writers' and the purge workers' groups: named, and not one group. Shared, the Kafka Streams assignor and the
     * purge consumers' would clash in it (one side refused with an inconsistent protocol, after a broker started), and an
     * empty group id fails in Kafka under {@code group.id}, a key LobStream says not to set.
     */
    private void checkGroups() {
        for (ConfigKey<String> group : List.of(APPLICATION_ID, PURGE_GROUP)) {
            if (get(group).isBlank()) {
                throw new ConfigException(group.name() + " is empty: it names a consumer group");
            }
        }
        if (get(APPLICATION_ID).strip().equals(get(PURGE_GROUP).strip())) {
            throw new ConfigException(PURGE_GROUP.name() + "=" + get(PURGE_GROUP) + " is " + APPLICATION_ID.name() + " too: the "
                    + "purge workers and the writers need a consumer group each");
        }
    }

    /**
     * A host name or IP address only: it becomes Kafka Streams' {@code application.server} as HOST:PORT, which every
     * node forwards reads by. With a scheme or a port in it, a node would not know itself as the owner of its own
     * partitions; with brackets round an IPv6 literal, neither, as Kafka gives the host back without them (a forward's
     * URL puts them back). One colon is a port; an IPv6 literal has at least two.
     */
    private static void checkAdvertisedHost(String host) {
        String h = host.strip();
        if (h.contains("/") || (h.contains(":") && !HostLiterals.isIpv6Literal(h)) || h.contains("[") || h.contains("]") || h.contains("%")
                || h.chars().anyMatch(Character::isWhitespace)) {
            throw new ConfigException(HTTP_ADVERTISED_HOST.name() + "=" + host + ": a host name or IP address alone, no scheme, "
                    + "port, path, brackets or scope (the port is lob.http.port)");
        }
        if (HostLiterals.isWildcard(h)) { // 0 and 0.0 too: Java reads them as 0.0.0.0
            throw new ConfigException(HTTP_ADVERTISED_HOST.name() + "=" + host + ": a wildcard address names no host: every node "
                    + "advertising it would take itself for the owner of every partition");
        }
    }

    private static void checkKnown(String k) {
        if (k.startsWith(STREAMS_PREFIX)) {
            ConfigKey<?> own = WRITER_OWN.get(k.substring(STREAMS_PREFIX.length()));
            if (own != null) {
                throw new ConfigException(k + " is not taken: set " + own.name() + ", which the node reads too");
            }
            String fixed = WRITER_FIXED.get(k.substring(STREAMS_PREFIX.length()));
            if (fixed != null) {
                throw new ConfigException(k + " is not taken: " + fixed);
            }
            String mainConsumer = STREAMS_PREFIX + "main.consumer.";
            if (k.startsWith(mainConsumer) && MAIN_CONSUMER_FIXED.contains(k.substring(mainConsumer.length()))) {
                throw new ConfigException(k + " is not taken: Kafka Streams sets it for the writer's exactly-once reads, and "
                        + "with this prefix it would win over Streams' own");
            }
            if (k.endsWith("group.instance.id")) { // plain, consumer. or main.consumer.: each wins over the node's
                throw new ConfigException(k + " is not taken: set lob.node.id, the static member id the node manages (it "
                        + "removes the members of its replaced threads by it)");
            }
            if (isStreamsBootstrap(k)) { // plain or for one of Streams' clients: it would win over the node's
                throw new ConfigException(k + " is not taken: set " + BOOTSTRAP.name() + ", which every client of the node "
                        + "takes (its writer alone on another cluster would leave purge, catch-up and topic setup on this one)");
            }
        } else if (kindOf(k) != null) {
            checkPerKind(k, kindOf(k));
        } else if (APICURIO_REGISTRY_URL.equals(k.startsWith(SERDE_PREFIX) ? k.substring(SERDE_PREFIX.length()) : k)) {
            // serdeConfig() would hand it to the serdes over lob.registry.url, which the node's registry check reads
            throw new ConfigException(k + " is not taken: set " + REGISTRY_URL.name() + ", which the node reads too");
        } else if (k.startsWith("lob.")) {
            if (!NAMES.contains(k) && !k.startsWith(SERDE_PREFIX)) {
                throw new ConfigException("unknown configuration key " + k + " (./lobstream config lists them)");
            }
        } else if (CLIENT_OWN.containsKey(k)) {
            throw new ConfigException(k + " is not taken: " + CLIENT_OWN.get(k));
        } else if (ROUTING.contains(k)) { // not handed to any client (plainClientConfig): refused, not dropped without a word
            throw new ConfigException(k + " is not taken: " + KEY_ROUTING);
        } else if (PER_KIND_ONLY.contains(k)) {
            throw new ConfigException(k + " is not taken as it is: a producer's fails a consumer, and the other way round; set "
                    + ClientKind.PRODUCER.prefix + k + " or " + ClientKind.CONSUMER.prefix + k);
        } else if (!NAMES.contains(k) && !CLIENT_KEYS.contains(k) && !k.startsWith(CONFIG_PROVIDER_PREFIX)
                && SERDE_PREFIXES.stream().noneMatch(k::startsWith)) {
            throw new ConfigException("unknown configuration key " + k + ": not LobStream's (./lobstream config lists them), "
                    + "nor a Kafka producer, consumer or admin client setting, nor a serde's (" + String.join("*, ", SERDE_PREFIXES)
                    + "*, or any as " + SERDE_PREFIX + "<setting>); Kafka Streams settings take the prefix " + STREAMS_PREFIX);
        }
    }

    /** The client setting a {@code lob.streams.} key names, past Streams' client prefix if any ({@code ssl.keystore.location}). */
    private static String streamsClientSetting(String key) {
        String rest = key.substring(STREAMS_PREFIX.length());
        for (String prefix : STREAMS_CLIENT_PREFIXES) {
            if (!prefix.isEmpty() && rest.startsWith(prefix)) {
                return rest.substring(prefix.length());
            }
        }
        return rest;
    }

    /**
     * Whether {@code key} gives Kafka Streams, or one of its clients, a cluster of its own: {@code lob.streams.bootstrap.servers}
     * or {@code lob.streams.producer.bootstrap.servers} and the like (an interceptor's own setting of that name is not).
     */
    public static boolean isStreamsBootstrap(String key) {
        return key.startsWith(STREAMS_PREFIX) && key.endsWith(BOOTSTRAP.name())
                && STREAMS_CLIENT_PREFIXES.contains(key.substring(STREAMS_PREFIX.length(), key.length() - BOOTSTRAP.name().length()));
    }

    private static ClientKind kindOf(String key) {
        for (ClientKind kind : ClientKind.values()) {
            if (key.startsWith(kind.prefix)) {
                return kind;
            }
        }
        return null;
    }

    /** Each kind's Kafka settings with their types and validators, to check a value before any client is made. */
    private static final Map<ClientKind, ConfigDef> CLIENT_DEFS = Map.of(ClientKind.PRODUCER, ProducerConfig.configDef(),
            ClientKind.CONSUMER, ConsumerConfig.configDef(), ClientKind.ADMIN, AdminClientConfig.configDef());

    /**
     * A Kafka client setting's value is checked as its client checks it, and {@code bootstrap.servers}' addresses: Kafka
     * says so only as it makes a client, after a node started its embedded broker, and with its own exception (exit 1,
     * not a bad argument). A value that names a config provider's ({@code ${alias:path:key}}) is resolved by the client.
     */
    private void checkClientValues() {
        props.forEach((k, v) -> {
            if (v == null || v.toString().contains("${")) {
                return;
            }
            for (ClientKind kind : ClientKind.values()) {
                String setting = k.startsWith(kind.prefix) ? k.substring(kind.prefix.length()) : k;
                if (!setting.equals(k) || CLIENT_KEYS.contains(k)) {
                    checkKafkaValue(k, setting, v, CLIENT_DEFS.get(kind));
                }
            }
        });
        for (String address : bootstrap().contains("${") ? new String[0] : bootstrap().split(",")) {
            String a = address.strip();
            if (!a.isEmpty() && (Utils.getHost(a) == null || Utils.getPort(a) == null)) {
                throw new ConfigException(BOOTSTRAP.name() + "=" + bootstrap() + ": " + a + " is no host:port");
            }
        }
    }

    /**
     * {@code value} checked as Kafka checks {@code setting}'s, if {@code def} has it: its type, then its validator.
     *
     * @param key the key the user gave, which the error names
     * @throws ConfigException naming {@code key} and the value (Kafka's own names {@code setting} alone)
     */
    public static void checkKafkaValue(String key, String setting, Object value, ConfigDef def) {
        ConfigDef.ConfigKey known = def.configKeys().get(setting);
        if (known == null) {
            return;
        }
        try {
            Object parsed = ConfigDef.parseType(setting, value, known.type);
            if (known.validator != null) {
                known.validator.ensureValid(setting, parsed);
            }
        } catch (org.apache.kafka.common.config.ConfigException e) {
            throw new ConfigException(key + "=" + value + ": " + e.getMessage());
        }
    }

    /** {@code lob.<kind>.<setting>}: a setting of that kind of client, and none LobStream decides for its clients. */
    private static void checkPerKind(String key, ClientKind kind) {
        String setting = key.substring(kind.prefix.length());
        if (!kind.names.contains(setting) && !setting.startsWith(CONFIG_PROVIDER_PREFIX)) {
            throw new ConfigException("unknown configuration key " + key + ": " + setting + " is no Kafka " + kind.noun() + " setting");
        }
        String why = ROUTING.contains(setting) ? KEY_ROUTING
                : setting.equals(BOOTSTRAP.name()) ? "every client takes " + BOOTSTRAP.name() : CLIENT_OWN.get(setting);
        if (why != null) {
            throw new ConfigException(key + " is not taken: " + why);
        }
    }

    /**
     * Kafka Streams refuses, under exactly-once, a commit interval over its producers' transaction timeout as it reads it
     * ({@code producer.transaction.timeout.ms} or its default, never the plain key), after a broker started and naming
     * neither LobStream key: said here first, and an equal one too (a commit's transaction runs past the interval by the
     * commit's own work). The plain key can lower what the producers get below that, and a commit interval not under it
     * would see transactions time out: refused too.
     */
    private void checkCommitIntervalFitsTransactions() {
        Object guarantee = props.get(STREAMS_PREFIX + "processing.guarantee");
        if (guarantee != null && !guarantee.toString().strip().startsWith("exactly_once")) {
            return; // no transactions
        }
        String key = STREAMS_PREFIX + "producer.transaction.timeout.ms";
        long checked = props.containsKey(key) ? millis(key) : WRITER_TRANSACTION_TIMEOUT_MS;
        long timeout = Math.min(checked, writerTransactionTimeoutMs()); // what the producers get can be less (the plain key)
        if (timeout < checked) {
            key = STREAMS_PREFIX + "transaction.timeout.ms";
        }
        if (get(COMMIT_INTERVAL_MS) >= timeout) { // equal, a commit's transaction runs past it by the commit's own work
            throw new ConfigException(COMMIT_INTERVAL_MS.name() + "=" + get(COMMIT_INTERVAL_MS) + ": not shorter than the "
                    + "writer's transaction timeout, " + timeout + " ms (" + key + "), which each commit's transaction must end within");
        }
    }

    private long millis(String key) {
        Object set = props.get(key);
        try {
            return Integer.parseInt(set.toString().strip()); // an int to Kafka
        } catch (NumberFormatException e) {
            throw new ConfigException(key + "=" + set + ": a number of milliseconds");
        }
    }

    /**
     * The writer's producers' transaction timeout: Kafka Streams' exactly-once default, or what
     * {@code lob.streams.[producer.]transaction.timeout.ms} sets.
     */
    public long writerTransactionTimeoutMs() {
        for (String k : List.of(STREAMS_PREFIX + "producer.transaction.timeout.ms", STREAMS_PREFIX + "transaction.timeout.ms")) {
            if (props.containsKey(k)) {
                return millis(k);
            }
        }
        return WRITER_TRANSACTION_TIMEOUT_MS;
    }

    public <T> T get(ConfigKey<T> key) {
        return key.from(props);
    }

    public Map<String, Object> originals() {
        return props;
    }

    public LobStreamConfig with(String key, Object value) {
        Map<String, Object> p = new HashMap<>(props);
        p.put(key, value);
        return new LobStreamConfig(p);
    }

    public Topics topics() {
        return new Topics(get(TOPIC_PREFIX));
    }

    public Path dataDir() {
        return Path.of(get(DATA_DIR));
    }

    public String bootstrap() {
        return get(BOOTSTRAP);
    }

    /**
     * {@code lob.registry.url} to print or log: without the user and password it may carry (a Confluent registry's
     * {@code basic.auth.credentials.source=URL}), which a log, a terminal or {@code /status} must not show.
     */
    public String registryShown() {
        return withoutRegistryUserInfo(get(REGISTRY_URL));
    }

    /**
     * {@code text} (a message that quotes {@code lob.registry.url}) with the URL's user and password, as given, replaced
     * by {@code ***}: all between {@code ://} and its last {@code @}, whatever characters a pasted secret holds.
     */
    public String withoutRegistryUserInfo(String text) {
        return withoutUserInfo(get(REGISTRY_URL), text);
    }

    /** {@code text} with {@code url}'s user and password replaced by {@code ***}, as {@link #withoutRegistryUserInfo}. */
    public static String withoutUserInfo(String url, String text) {
        int from = url.indexOf("://") + 3;
        int at = url.lastIndexOf('@');
        return from < 3 || at <= from ? text : text.replace(url.substring(from, at), "***"); // (an empty user: nothing to hide)
    }

    /**
     * Producer settings that would route a LOB's records elsewhere than its key's partition: never
     * passed on, since the topics are co-partitioned by lobId (a LOB's commands in order in one
     * partition, its reclaims in the same tablespace's partition).
     */
    private static final Set<String> ROUTING = Set.of("partitioner.class", "partitioner.ignore.keys");
    private static final String KEY_ROUTING = "a LOB's commands go to its key's partition, whose tablespace holds it";

    /**
     * The kinds of Kafka client LobStream creates itself (the write commands' producer, read-your-writes, replay,
     * redrive, catch-up, the purge workers, admin clients). A Kafka setting given as it is reaches every client that
     * knows it; given as {@code lob.producer.<setting>} (or {@code lob.consumer.}, {@code lob.admin.}) it reaches that
     * kind alone and wins over the plain key, as Kafka Streams' {@code producer.}, {@code consumer.} and {@code admin.}
     * prefixes do. Not the writer's clients: Kafka Streams takes theirs as {@code lob.streams.producer.<setting>} and
     * so on, where it checks them against exactly-once.
     */
    public enum ClientKind {
        PRODUCER("lob.producer.", ProducerConfig.configNames()),
        CONSUMER("lob.consumer.", ConsumerConfig.configNames()),
        ADMIN("lob.admin.", AdminClientConfig.configNames());

        private final String prefix;
        private final Set<String> names;

        ClientKind(String prefix, Set<String> names) {
            this.prefix = prefix;
            this.names = names;
        }

        public String prefix() {
            return prefix;
        }

        private String noun() {
            return name().toLowerCase(java.util.Locale.ROOT);
        }
    }

    /**
     * Kafka settings a client of one kind takes and another refuses: a producer's interceptor fails a consumer's
     * construction, and the other way round. Taken per kind only ({@link ClientKind}).
     */
    private static final Set<String> PER_KIND_ONLY = Set.of(ProducerConfig.INTERCEPTOR_CLASSES_CONFIG);

    /**
     * Kafka client settings LobStream decides for each client it creates, refused plain or per kind, with what to set
     * instead: given, one would reach clients that must not share it (every purge worker the same member id).
     */
    private static final Map<String, String> CLIENT_OWN = Map.of(
            "group.id", "each of LobStream's consumers is in its own group or in none: set lob.writer.application.id or "
                    + "lob.purge.group",
            "group.instance.id", "set lob.node.id, which makes the writer's members static (<id>-<thread>)",
            "transactional.id", "LobStream's transactional producers name their own (the writer's after "
                    + "lob.writer.application.id, the purge workers' after lob.purge.group)",
            "bootstrap.controllers", "LobStream's clients reach the cluster through " + BOOTSTRAP.name());

    /**
     * The Kafka client settings the user gave that a client of this kind knows, such as security,
     * timeouts and tuning, those given for its kind ({@code lob.<kind>.<setting>}) winning, plus
     * {@code bootstrap.servers}; never the partitioner's. Callers put the settings they depend on
     * after these, so those win.
     */
    public Map<String, Object> clientConfig(ClientKind kind) {
        Map<String, Object> m = plainClientConfig(kind.names);
        m.putAll(clientOverrides(kind));
        return m;
    }

    /**
     * The plain Kafka settings an admin client knows, which producers and consumers know too (security, timeouts), and
     * {@code bootstrap.servers}: what Kafka Streams hands to all its clients.
     */
    public Map<String, Object> commonClientConfig() {
        return plainClientConfig(AdminClientConfig.configNames());
    }

    /** The settings given for clients of this kind alone ({@code lob.<kind>.<setting>}), without the prefix. */
    private Map<String, Object> clientOverrides(ClientKind kind) {
        Map<String, Object> m = new HashMap<>();
        props.forEach((k, v) -> {
            if (k.startsWith(kind.prefix)) {
                m.put(k.substring(kind.prefix.length()), v);
            }
        });
        return m;
    }

    private Map<String, Object> plainClientConfig(Set<String> known) {
        Map<String, Object> m = new HashMap<>();
        props.forEach((k, v) -> {
            if ((known.contains(k) || k.startsWith(CONFIG_PROVIDER_PREFIX)) && !ROUTING.contains(k)) {
                m.put(k, v);
            }
        });
        m.put(BOOTSTRAP.name(), bootstrap());
        return m;
    }

    /**
     * Settings for the serdes: the registry URL under Apicurio's key, Confluent framing without
     * headers, specific records on read; then every key the user gave, which wins, a {@code lob.serde.<setting>} as
     * {@code <setting>}.
     */
    public Map<String, Object> serdeConfig() {
        Map<String, Object> m = new HashMap<>();
        m.put(APICURIO_REGISTRY_URL, get(REGISTRY_URL));
        m.put("apicurio.registry.auto-register", "true");
        // with auto-registering off, the subject's latest version unless apicurio.registry.artifact.version names one (the
        // lookup by content finds nothing with Apicurio 2.6's client); LobAvroSerializer refuses an id of another schema
        m.put("apicurio.registry.find-latest", "true");
        m.putAll(FRAMING);
        m.put("apicurio.registry.use-specific-avro-reader", "true");
        // a cached schema past its check period is asked for again, though a schema's content never changes under its id
        // (and LobAvroSerializer looks its own schema up once): with Apicurio's 30 s, every record that came more than 30 s
        // into a registry outage asked the registry again, and failed its writer task where the refresh is not fault tolerant
        m.put("apicurio.registry.check-period-ms", Long.toString(java.time.Duration.ofDays(1).toMillis()));
        // but the subject's latest version (auto-registering off) asked anew at each try, not kept a day: a serializer
        // refused another producer's latest version sends once the operator has registered its own
        m.put("apicurio.registry.cache-latest", "false");
        m.put("apicurio.registry.fault-tolerant-refresh", "true");
        m.put(REGISTRY_REQUEST_TIMEOUT_MS.name(), get(REGISTRY_REQUEST_TIMEOUT_MS)); // read by RegistryHttpClient
        m.put("schema.registry.url", get(REGISTRY_URL));
        m.put("specific.avro.reader", "true");
        m.putAll(props);
        props.forEach((k, v) -> {
            if (k.startsWith(SERDE_PREFIX)) {
                m.put(k.substring(SERDE_PREFIX.length()), v);
            }
        });
        for (String key : MISNAMED_KEYSTORE) {
            // Apicurio 2.6's RegistryClientFactory hands these to its HTTP client as the truststore's (a slip in its table
            // of names): a client certificate given so never reached the registry, and its path took the truststore's
            // place. Given under the names the HTTP client reads, which the factory passes on as they are.
            Object v = m.remove(APICURIO_TLS + key);
            if (v != null) {
                m.putIfAbsent(APICURIO_HTTP_TLS + key, v);
            }
        }
        return m;
    }
}
