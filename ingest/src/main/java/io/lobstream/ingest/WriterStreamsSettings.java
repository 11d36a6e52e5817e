package io.lobstream.ingest;

import io.lobstream.ingest.writer.TablespaceTaskAssignor;
import io.lobstream.schema.LobStreamConfig;
import io.lobstream.schema.Topics;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.streams.StreamsConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * The writer's Kafka Streams settings: those the node sets (exactly-once v2, its fetch sizes and read-ahead for the
 * heap, its task assignor, static membership), the {@code lob.streams.} ones a user gives, checked as Kafka Streams
 * will check them and laid over the node's, and the keys no one takes, named at start.
 */
public final class WriterStreamsSettings {
    private static final Logger log = LoggerFactory.getLogger(WriterStreamsSettings.class);

    private WriterStreamsSettings() {
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
    public static List<String> unknown(LobStreamConfig config) {
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
     * is resolved by the client; a setting no one knows is left alone ({@link #unknown}).
     *
     * @throws io.lobstream.store.config.ConfigException naming the key and its value
     */
    public static void checkValues(LobStreamConfig config) {
        config.originals().forEach((key, value) -> {
            if (!key.startsWith(LobStreamConfig.STREAMS_PREFIX) || value == null || value.toString().contains("${")) {
                return;
            }
            for (Map.Entry<String, ConfigDef> taker : takers(key.substring(LobStreamConfig.STREAMS_PREFIX.length()))) {
                LobStreamConfig.checkKafkaValue(key, taker.getKey(), value, taker.getValue());
            }
        });
    }

    /**
     * How the writer's consumers fetch. Commands carry up to {@code lob.chunk.size} bytes each:
     * fetches stay bounded for a small heap (100 records a poll, 16 MiB a fetch), and 4 MiB per
     * partition at most, where Kafka's 1 MiB default holds one whole 512 KiB chunk per round trip
     * ({@link #of} lowers it on a small heap: WriterBuffer).
     */
    public static final Map<String, Object> FETCH = Map.of(
            ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 100,
            ConsumerConfig.FETCH_MAX_BYTES_CONFIG, 16 * 1024 * 1024,
            ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG, 4 * 1024 * 1024);

    /**
     * The writer's Kafka Streams properties: the node's own, then the user's {@code lob.streams.} settings over them
     * ({@link #applyUserSettings}). Warns where they let the writer read ahead past half the heap, or give up
     * exactly-once.
     *
     * @param partitions        the partition count of the topics the writer runs on
     * @param applicationServer the node's HTTP address (host:port), which Kafka Streams' metadata gives other nodes
     */
    static Properties of(LobStreamConfig config, int partitions, String applicationServer) {
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
        p.put(StreamsConfig.APPLICATION_SERVER_CONFIG, applicationServer);
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        p.put(StreamsConfig.PROCESSING_EXCEPTION_HANDLER_CLASS_CONFIG, ReportedFailureHandler.class.getName());
        // The writer has no global stores, so this changes nothing but a warning Kafka Streams (4.2 on) logs at every
        // start, once for itself and once for each stream thread's assignor, which sees only the main consumer's
        // settings. Kafka 5.0 drops the key and always behaves as true (hence a string: its constant is deprecated).
        String globalHandler = "processing.exception.handler.global.enabled";
        p.put(globalHandler, true);
        p.put(StreamsConfig.mainConsumerPrefix(globalHandler), true);
        FETCH.forEach((k, v) -> p.put(StreamsConfig.consumerPrefix(k), v));
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
        applyUserSettings(p, config);
        String isolation = ConsumerConfig.ISOLATION_LEVEL_CONFIG;
        if (!StreamsConfig.EXACTLY_ONCE_V2.equals(p.get(StreamsConfig.PROCESSING_GUARANTEE_CONFIG)) && !p.containsKey(isolation)
                && !p.containsKey(StreamsConfig.consumerPrefix(isolation))) {
            // Streams sets it only under exactly-once: at least once, the writer would apply the commands of a producer's
            // aborted transactions, which replay (read_committed) does not. A user's own lob.streams. setting stands.
            p.put(StreamsConfig.mainConsumerPrefix(isolation), "read_committed");
        }
        warnIfReadAheadPassesHalfTheHeap(p, config, partitions);
        if (!StreamsConfig.EXACTLY_ONCE_V2.equals(p.get(StreamsConfig.PROCESSING_GUARANTEE_CONFIG))) {
            log.warn("the writer runs with processing.guarantee={} (set by {}processing.guarantee): a crash may emit an undo "
                            + "record or a dead letter twice, and the torn-write check after a power loss may pass a lost page of a "
                            + "partial update whose base purge reclaimed before the flush; exactly_once_v2 is what LobStream "
                            + "promises", p.get(StreamsConfig.PROCESSING_GUARANTEE_CONFIG), LobStreamConfig.STREAMS_PREFIX);
        }
        return p;
    }

    /** Said from the settings that take effect, the user's lob.streams. ones too. */
    private static void warnIfReadAheadPassesHalfTheHeap(Properties p, LobStreamConfig config, int partitions) {
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
    static void applyUserSettings(Properties p, LobStreamConfig config) {
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
}
