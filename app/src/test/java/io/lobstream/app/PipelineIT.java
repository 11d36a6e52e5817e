package io.lobstream.app;

import io.lobstream.client.LobClient;
import io.lobstream.schema.DeadLetterTopic;
import io.lobstream.store.LobStore;
import io.lobstream.app.embedded.EmbeddedCluster;
import io.lobstream.avro.Extent;
import io.lobstream.avro.ReclaimRecord;
import io.lobstream.avro.UndoCause;
import io.lobstream.avro.UndoRecord;
import io.lobstream.ingest.LobNode;
import io.lobstream.schema.LobSerdes;
import io.lobstream.schema.LobStreamConfig;
import io.lobstream.store.StoreStats;
import io.lobstream.store.fsck.FsckReport;
import io.lobstream.store.index.VersionEntry;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The walking skeleton end to end on a real KRaft broker and a real Apicurio Registry:
 * producer → writer (Kafka Streams, EOS) → tablespace → undo-history → purge worker → reclaim → writer.
 */
class PipelineIT {
    @TempDir
    static Path dir;

    static EmbeddedCluster cluster;
    static LobNode node;
    static TestPipeline pipeline;
    static LobStreamConfig config;
    static LobClient client;
    static final HttpClient http = HttpClient.newHttpClient();

    @BeforeAll
    static void start() throws Exception {
        pipeline = TestPipeline.start(dir, Map.of(LobStreamConfig.PARTITIONS.name(), 4));
        cluster = pipeline.cluster;
        config = pipeline.config;
        node = pipeline.node;
        client = pipeline.client;
    }

    @AfterAll
    static void stop() throws Exception {
        if (pipeline != null) {
            pipeline.close();
        }
    }

    static byte[] bytes(int n, long seed) {
        return TestPipeline.bytes(n, seed);
    }

    static HttpResponse<byte[]> get(String id, String range) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + node.httpPort() + "/lobs/" + id));
        if (range != null) {
            b.header("Range", range);
        }
        return http.send(b.build(), HttpResponse.BodyHandlers.ofByteArray());
    }

    static void awaitValue(String id, byte[] expected) {
        await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(50)).untilAsserted(() -> {
            HttpResponse<byte[]> r = get(id, null);
            assertThat(r.statusCode()).isEqualTo(200);
            assertThat(java.util.Arrays.mismatch(r.body(), expected)).as("first differing byte").isEqualTo(-1);
        });
    }

    static Optional<VersionEntry> current(String id) throws Exception {
        for (LobStore s : node.tablespaces().all().values()) {
            Optional<VersionEntry> e = s.current(id);
            if (e.isPresent()) {
                return e;
            }
        }
        return Optional.empty();
    }

    static StoreStats totals() {
        return node.tablespaces().totals();
    }

    static FsckReport fsck() throws Exception {
        return pipeline.fsck();
    }

    @Test
    void putGetDeleteThroughKafka() throws Exception {
        byte[] v = bytes(200_000, 1);
        client.put("it-put", v, "application/octet-stream").get();
        awaitValue("it-put", v);

        HttpResponse<byte[]> range = get("it-put", "bytes=10-19");
        assertThat(range.statusCode()).isEqualTo(206);
        assertThat(range.body()).isEqualTo(java.util.Arrays.copyOfRange(v, 10, 20));
        assertThat(range.headers().firstValue("Content-Range")).contains("bytes 10-19/200000");
        assertThat(get("it-put", "bytes=200000-").statusCode()).isEqualTo(416);
        HttpResponse<Void> head = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + node.httpPort() + "/lobs/it-put"))
                .method("HEAD", HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.discarding());
        assertThat(head.statusCode()).isEqualTo(200);
        assertThat(head.headers().firstValue("ETag")).isPresent();
        assertThat(head.headers().firstValue("Content-Length")).contains("200000");

        client.delete("it-put").get();
        await().atMost(Duration.ofSeconds(60)).until(() -> get("it-put", null).statusCode() == 404);
        assertThat(get("never-written", null).statusCode()).isEqualTo(404);
    }

    @Test
    void metricsTellHowFarBehindTheWriterIs() throws Exception {
        double before = applyLagCount();
        client.put("it-lag", bytes(10_000, 7), null).applied(Duration.ofSeconds(60)).get();
        // a histogram (Prometheus buckets) of record timestamp -> applied, one sample per command applied
        assertThat(metrics()).contains("lob_command_apply_lag_seconds_bucket{");
        assertThat(applyLagCount()).isGreaterThanOrEqualTo(before + 1);
        // buckets up to an hour: a writer far behind shows, where Micrometer's default stops at 30 s
        assertThat(metrics()).contains("lob_command_apply_lag_seconds_bucket{le=\"3600.0\"");
    }

    /** What an operator alerts on besides history: disk, throttling ahead of time, a copy missing commands, a failed fsync, the JVM. */
    @Test
    void metricsTellDiskUseThrottlingTheTablespacesStateAndTheJvms() throws Exception {
        client.put("it-gauges", bytes(10_000, 8), null).applied(Duration.ofSeconds(60)).get();
        String m = metrics();
        assertThat(m).containsPattern("(?m)^lob_tablespace_bytes\\{tablespace=\"p-\\d+\"} [1-9]");
        assertThat(m).containsPattern("(?m)^lob_history_excess_ratio\\{tablespace=\"p-\\d+\"} 0\\.0$");
        for (String zero : List.of("lob_tablespace_incomplete", "lob_tablespace_sync_failed")) {
            // every tablespace's, not one of them
            assertThat(m).containsPattern("(?m)^" + zero + "\\{tablespace=\"p-\\d+\"} 0\\.0$")
                    .doesNotContainPattern("(?m)^" + zero + "\\{tablespace=\"p-\\d+\"} (?!0\\.0$)");
        }
        assertThat(m).contains("jvm_memory_used_bytes{", "jvm_gc_max_data_size_bytes", "jvm_threads_live_threads", "process_uptime_seconds",
                "lob_purge_lag_records{partition=\"0\"}", "lob_rebuild_remaining_records 0.0");
    }

    static String metrics() throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + node.httpPort() + "/metrics")).build(),
                HttpResponse.BodyHandlers.ofString()).body();
    }

    static double applyLagCount() throws Exception {
        return metrics().lines().filter(l -> l.startsWith("lob_command_apply_lag_seconds_count"))
                .mapToDouble(l -> Double.parseDouble(l.substring(l.lastIndexOf(' ') + 1))).sum();
    }

    @Test
    void updatesArePurgedAndHistoryDrainsToZero() throws Exception {
        double reclaimedBefore = reclaims("applied"); // the counter spans the class's tests
        for (int i = 0; i < 5; i++) {
            client.put("it-upd", bytes(100_000 + i, i), null).get();
        }
        byte[] last = bytes(50_000, 99);
        client.put("it-upd", last, null).get();
        awaitValue("it-upd", last);
        await().atMost(Duration.ofSeconds(60)).until(() -> totals().historyLength() == 0);
        // then no pending version at all: compaction, started by the holes purge left, moves the live version down and frees
        // its old copy itself moments later (and a flush may cut the free tail: free pages are no measure of purge here)
        await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(200)).until(() -> fsck().pagesHistory() == 0);
        assertThat(fsck().problems()).isEmpty();
        assertThat(reclaims("applied") - reclaimedBefore).isGreaterThanOrEqualTo(5);
    }

    /**
     * Streams commits the writer's transaction every lob.writer.commit.interval.ms; each commit must first sync the
     * tablespaces it wrote. The LOB's tablespace, written, comes to need no sync: the page syncs of compaction's moves
     * and of a cut tail, which other tests leave to do, would not do that.
     */
    @Test
    void tablespacesAreSyncedWhileTheNodeRuns() throws Exception {
        double before = pageSyncs();
        byte[] v = bytes(70_000, 5);
        client.put("it-sync", v, null).get();
        awaitValue("it-sync", v);
        LobStore tablespace = node.tablespaces().get(Nodes.partitionOf("it-sync", config.get(LobStreamConfig.PARTITIONS))).orElseThrow();
        await("the tablespace written is synced").atMost(Duration.ofSeconds(60)).until(() -> !tablespace.needsSync());
        assertThat(pageSyncs()).isGreaterThan(before);
    }

    static double pageSyncs() {
        return node.meters().find("lob_syncs").tag("file", "pages").counters().stream().mapToDouble(c -> c.count()).sum();
    }

    /** LobStream's serdes write and read the same wire format as Apicurio's stock Avro serdes, both ways. */
    @Test
    void commandsOnTheWireAreInterchangeableWithTheStockApicurioSerdes() throws Exception {
        byte[] v = bytes(300_000, 11);
        var sent = client.put("it-wire", v, "application/octet-stream").get();
        try (var stock = new io.apicurio.registry.serde.avro.AvroKafkaDeserializer<Object>();
             KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap()),
                     new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            stock.configure(config.serdeConfig(), false);
            var tp = new org.apache.kafka.common.TopicPartition(sent.topic(), sent.partition());
            consumer.assign(List.of(tp));
            consumer.seek(tp, sent.offset());
            ConsumerRecord<byte[], byte[]> r = null;
            for (long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos(); r == null && System.nanoTime() < deadline; ) {
                var polled = consumer.poll(Duration.ofMillis(200));
                r = polled.isEmpty() ? null : polled.iterator().next();
            }
            assertThat(r).isNotNull();
            var decoded = (io.lobstream.avro.LobCommand) stock.deserialize(r.topic(), r.value());
            assertThat(decoded.getLobId()).isEqualTo("it-wire");
            assertThat(bytesOf(decoded.getData())).isEqualTo(v);

            try (var stockWriter = new io.apicurio.registry.serde.avro.AvroKafkaSerializer<Object>()) {
                stockWriter.configure(config.serdeConfig(), false);
                byte[] wire = stockWriter.serialize(r.topic(), decoded);
                var ours = io.lobstream.schema.LobSerdes.decode(LobSerdes.valueDeserializer(config), r.topic(), wire,
                        io.lobstream.avro.LobCommand.class);
                assertThat(ours).isEqualTo(decoded);
                assertThat(LobSerdes.valueSerializer(config).serialize(r.topic(), decoded)).isEqualTo(wire);
            }
        }
    }

    private static byte[] bytesOf(java.nio.ByteBuffer b) {
        byte[] out = new byte[b.remaining()];
        b.duplicate().get(out);
        return out;
    }

    @Test
    void duplicateReclaimIsIgnoredAndReclaimOfLiveVersionFreesNothing() throws Exception {
        byte[] v = bytes(80_000, 7);
        client.put("it-dup", v, null).get();
        awaitValue("it-dup", v);
        VersionEntry live = current("it-dup").orElseThrow();
        List<Extent> extents = new ArrayList<>();
        live.extents().forEach(e -> extents.add(new Extent(e.firstPage(), e.pageCount())));
        ReclaimRecord forged = ReclaimRecord.newBuilder().setLobId("it-dup").setVersion(live.version())
                .setExtents(extents).setWorkerId("test").setTime(Instant.now()).build();
        double ignoredBefore = reclaims("ignored");
        try (KafkaProducer<String, Object> p = new KafkaProducer<>(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap()),
                new StringSerializer(), LobSerdes.valueSerializer(config))) {
            p.send(new ProducerRecord<>(config.topics().reclaim(), "it-dup", forged)).get();
            p.send(new ProducerRecord<>(config.topics().reclaim(), "it-dup", forged)).get();
        }
        await().atMost(Duration.ofSeconds(60)).until(() -> reclaims("ignored") >= ignoredBefore + 2);
        awaitValue("it-dup", v);
        assertThat(fsck().problems()).isEmpty();
    }

    static double reclaims(String outcome) {
        var c = node.meters().find("lob_reclaims").tag("outcome", outcome).counter();
        return c == null ? 0 : c.count();
    }

    @Test
    void malformedRecordGoesToTheDeadLetterTopicAndTheNextIsApplied() throws Exception {
        try (KafkaProducer<byte[], byte[]> raw = new KafkaProducer<>(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap()),
                new ByteArraySerializer(), new ByteArraySerializer())) {
            raw.send(new ProducerRecord<>(config.topics().commands(), "it-bad".getBytes(), "not avro at all".getBytes())).get();
        }
        byte[] good = bytes(1234, 3);
        client.put("it-bad", good, null).get();
        awaitValue("it-bad", good);

        ConsumerRecord<byte[], byte[]> dead = deadLetter("not avro at all");
        String reason = Nodes.header(dead, DeadLetterTopic.REASON);
        assertThat(reason).contains("cannot decode");
        assertThat(Nodes.header(dead, DeadLetterTopic.ORIGIN_TOPIC)).isEqualTo(config.topics().commands());
    }

    @Test
    void malformedReclaimGoesToTheDeadLetterTopicStampedWithTheClock() throws Exception {
        long before = System.currentTimeMillis();
        try (KafkaProducer<byte[], byte[]> raw = new KafkaProducer<>(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap()),
                new ByteArraySerializer(), new ByteArraySerializer())) {
            raw.send(new ProducerRecord<>(config.topics().reclaim(), "it-bad-reclaim".getBytes(), "not a reclaim".getBytes())).get();
        }
        ConsumerRecord<byte[], byte[]> dead = deadLetter("not a reclaim");
        assertThat(Nodes.header(dead, DeadLetterTopic.ORIGIN_TOPIC)).isEqualTo(config.topics().reclaim());
        assertThat(Nodes.header(dead, DeadLetterTopic.KIND)).isEqualTo("undecodable");
        // the writer reads reclaims with timestamp 0 (ReclaimsFirst); their dead letters carry the clock's (ReclaimProcessor)
        assertThat(dead.timestamp()).isGreaterThanOrEqualTo(before - 1_000);
    }

    /** An undo record naming impossible pages (not the writer's) is skipped by purge, which goes on purging. */
    @Test
    void anUndoRecordWithBadPagesDoesNotStopPurge() throws Exception {
        String id = "it-bad-undo";
        client.put(id, bytes(2000, 1), null).applied().get(60, java.util.concurrent.TimeUnit.SECONDS);
        int partition = Nodes.partitionOf(id, config.get(LobStreamConfig.PARTITIONS));
        String copy = node.tablespaces().get(partition).orElseThrow().copyId();
        UndoRecord forged = UndoRecord.newBuilder().setLobId(id).setVersion(1).setRootPage(0).setPageCount(1)
                .setRetained(List.of(new io.lobstream.avro.Extent(-5L, 1))).setByteLength(2000).setCause(UndoCause.UPDATE)
                .setSourceOffset(0).setTime(java.time.Instant.now()).setCopyId(copy).build();
        try (KafkaProducer<String, Object> avro = new KafkaProducer<>(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap()),
                new StringSerializer(), LobSerdes.valueSerializer(config))) {
            avro.send(new ProducerRecord<>(config.topics().undoHistory(), partition, id, forged)).get();
        }
        // an update on the same partition after it: its old version is purged, so the worker lived on
        byte[] next = bytes(3000, 2);
        client.put(id, next, null).applied().get(60, java.util.concurrent.TimeUnit.SECONDS);
        await().atMost(Duration.ofSeconds(60)).until(() -> totals().historyLength() == 0);
        awaitValue(id, next);
    }

    /** The committed dead letter whose value is {@code value}, waiting for it up to 30 s. */
    private static ConsumerRecord<byte[], byte[]> deadLetter(String value) {
        return Nodes.committedRecords(cluster, config.topics().deadLetters(), Duration.ofSeconds(30),
                        seen -> seen.stream().anyMatch(r -> new String(r.value()).equals(value)))
                .stream().filter(r -> new String(r.value()).equals(value)).findFirst().orElseThrow();
    }
}
