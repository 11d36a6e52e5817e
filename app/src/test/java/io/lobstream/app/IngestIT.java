package io.lobstream.app;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.lobstream.app.embedded.EmbeddedCluster;
import io.lobstream.avro.LobCommand;
import io.lobstream.avro.LobOp;
import io.lobstream.avro.ReclaimRecord;
import io.lobstream.client.ClientHooks;
import io.lobstream.client.LobClient;
import io.lobstream.client.LobWrite;
import io.lobstream.client.WriteOutcome;
import io.lobstream.client.WriteStoppedException;
import io.lobstream.ingest.LobNode;
import io.lobstream.ingest.replay.DeadLetterRedrive;
import io.lobstream.ingest.replay.PartitionReplayer;
import io.lobstream.ingest.writer.AdminPurgeProgress;
import io.lobstream.ingest.writer.PurgeLag;
import io.lobstream.ingest.writer.TablespaceCatchUp;
import io.lobstream.ingest.writer.TablespaceCheck;
import io.lobstream.ingest.writer.WriterMetrics;
import io.lobstream.schema.DeadLetterTopic;
import io.lobstream.schema.LobSerdes;
import io.lobstream.schema.LobStreamConfig;
import io.lobstream.schema.LobStreamConfig.ClientKind;
import io.lobstream.schema.TopicSetup;
import io.lobstream.schema.Topics;
import io.lobstream.store.LobReadHandle;
import io.lobstream.store.LobStore;
import io.lobstream.store.LobStoreConfig;
import io.lobstream.store.Source;
import io.lobstream.store.fsck.FsckReport;
import io.lobstream.store.index.Rejection;
import io.lobstream.store.index.VersionEntry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.EncoderFactory;
import org.apache.avro.specific.SpecificDatumWriter;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerInterceptor;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.errors.LockException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.DigestInputStream;
import java.security.MessageDigest;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.zip.CRC32C;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * Ingest on a real broker and registry: large values in chunks, partial updates as events,
 * re-sent commands, expiring uploads, every kind of bad input, and offline replay.
 */
class IngestIT {
    @TempDir
    static Path dir;

    static EmbeddedCluster cluster;
    static LobNode node;
    static TestPipeline pipeline;
    static LobStreamConfig config;
    static LobClient client;
    static KafkaProducer<String, Object> avro;
    static final HttpClient http = HttpClient.newHttpClient();

    @BeforeAll
    static void start() throws Exception {
        pipeline = TestPipeline.start(dir, Map.of(
                LobStreamConfig.PARTITIONS.name(), 2,
                LobStreamConfig.VALUE_MAX_BYTES.name(), 100 << 20,
                LobStreamConfig.UPLOAD_TIMEOUT_MS.name(), 15_000)); // short, for the expiry tests; long enough that no pause of a loaded machine (a GC, a disk stall) expires an upload in progress, the 64 MiB one's included
        cluster = pipeline.cluster;
        config = pipeline.config;
        node = pipeline.node;
        client = pipeline.client;
        avro = new KafkaProducer<>(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap()), new StringSerializer(),
                LobSerdes.valueSerializer(config));
    }

    @AfterAll
    static void stop() throws Exception {
        if (avro != null) {
            avro.close();
        }
        if (pipeline != null) {
            pipeline.close();
        }
    }

    /**
     * A producer run before any node, on a broker that creates topics on first use, makes lob.commands alone with the
     * broker's partition count: the other topics are created to match it, not refused as not co-partitioned.
     */
    @Test
    void topicsAreCreatedWithThePartitionCountOfALobCommandsThatExists() throws Exception {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap()))) {
            LobStreamConfig early = config.with(LobStreamConfig.TOPIC_PREFIX.name(), "early.").with(LobStreamConfig.PARTITIONS.name(), 4);
            admin.createTopics(List.of(new NewTopic(early.topics().commands(), 3, (short) 1))).all().get();
            assertThat(TopicSetup.ensureTopics(admin, early)).isEqualTo(3);
            assertThat(admin.describeTopics(early.topics().all()).allTopicNames().get().values())
                    .allSatisfy(d -> assertThat(d.partitions()).as(d.name()).hasSize(3));
            // made as a broker makes a topic on first use, it keeps the broker's retention and the producers' timestamps:
            // said, for the node to warn of
            assertThat(TopicSetup.topicProblems(admin, early)).hasSize(2)
                    .anySatisfy(p -> assertThat(p).startsWith("early.commands has retention.ms=604800000, not -1"))
                    .anySatisfy(p -> assertThat(p).startsWith("early.commands has message.timestamp.type=CreateTime, not LogAppendTime"))
                    .allSatisfy(p -> assertThat(p).contains(": kafka-configs.sh --bootstrap-server " + cluster.bootstrap() + " --alter"));

            // created here, lob.commands keeps every record: neither time nor size deletes from the redo log
            LobStreamConfig fresh = config.with(LobStreamConfig.TOPIC_PREFIX.name(), "fresh.");
            assertThat(TopicSetup.ensureTopics(admin, fresh)).isEqualTo(2);
            ConfigResource commands = new ConfigResource(ConfigResource.Type.TOPIC, fresh.topics().commands());
            org.apache.kafka.clients.admin.Config c = admin.describeConfigs(List.of(commands)).all().get().get(commands);
            assertThat(c.get("retention.ms").value()).isEqualTo("-1");
            assertThat(c.get("retention.bytes").value()).isEqualTo("-1");
            assertThat(c.get("message.timestamp.type").value()).isEqualTo("LogAppendTime");
            assertThat(TopicSetup.topicProblems(admin, fresh)).isEmpty();
            // and its dead letters as long: replay and applied() read them for commands as old as any
            ConfigResource letters = new ConfigResource(ConfigResource.Type.TOPIC, fresh.topics().deadLetters());
            org.apache.kafka.clients.admin.Config d = admin.describeConfigs(List.of(letters)).all().get().get(letters);
            assertThat(d.get("retention.ms").value()).isEqualTo("-1");
            assertThat(d.get("retention.bytes").value()).isEqualTo("-1");
            assertThat(d.get("cleanup.policy").value()).isEqualTo("delete"); // whatever the broker's default
            // and the topics whose records list a version's pages take such a list of the longest value (TopicsTest)
            try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
                    cluster.bootstrap(), ProducerConfig.MAX_REQUEST_SIZE_CONFIG, Topics.PAGE_LIST_RECORD_MAX_BYTES),
                    new ByteArraySerializer(), new ByteArraySerializer())) {
                byte[] pageList = new byte[Topics.PAGE_LIST_RECORD_MAX_BYTES - 1024];
                for (String t : List.of(fresh.topics().undoHistory(), fresh.topics().reclaim())) {
                    assertThat(producer.send(new ProducerRecord<>(t, pageList)).get(30, TimeUnit.SECONDS).serializedValueSize())
                            .isEqualTo(pageList.length);
                }
            }

            // topics an older release made (with the broker's 7 days and 1 MiB records), or compacted by hand: said, for
            // the node to warn of (a compacted dead-letter topic keeps one letter per LOB, and its start does not move)
            LobStreamConfig old = config.with(LobStreamConfig.TOPIC_PREFIX.name(), "old.");
            admin.createTopics(List.of(new NewTopic(old.topics().deadLetters(), 2, (short) 1).configs(Map.of("cleanup.policy", "compact")),
                    new NewTopic(old.topics().reclaim(), 2, (short) 1))).all().get();
            assertThat(TopicSetup.ensureTopics(admin, old)).isEqualTo(2);
            assertThat(TopicSetup.topicProblems(admin, old)).hasSize(3)
                    .anySatisfy(p -> assertThat(p).startsWith("old.commands.dlq has retention.ms=604800000, not -1"))
                    .anySatisfy(p -> assertThat(p).startsWith("old.commands.dlq has cleanup.policy=compact, not delete"))
                    .anySatisfy(p -> assertThat(p).startsWith("old.reclaim has max.message.bytes=1048588, not 16777216"));
        }
    }

    static byte[] bytes(int n, long seed) {
        return TestPipeline.bytes(n, seed);
    }

    static String sha256(InputStream in) throws Exception {
        MessageDigest md = MessageDigest.getInstance("SHA-256");
        try (DigestInputStream d = new DigestInputStream(in, md)) {
            d.transferTo(java.io.OutputStream.nullOutputStream());
        }
        return HexFormat.of().formatHex(md.digest());
    }

    static HttpResponse<InputStream> get(String id) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + node.httpPort() + "/lobs/" + id)).build(),
                HttpResponse.BodyHandlers.ofInputStream());
    }

    static String nodeSha(String id) throws Exception {
        HttpResponse<InputStream> r = get(id);
        try (InputStream in = r.body()) {
            return r.statusCode() == 200 ? sha256(in) : "HTTP " + r.statusCode();
        }
    }

    static void awaitValue(String id, byte[] expected) throws Exception {
        String want = sha256(new ByteArrayInputStream(expected));
        await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(100)).until(() -> nodeSha(id).equals(want));
    }

    static FsckReport fsck() throws Exception {
        return pipeline.fsck();
    }

    @Test
    void valueOf64MiBRoundTripsInChunks() throws Exception {
        byte[] v = bytes(64 << 20, 1);
        client.put("it-64m", new ByteArrayInputStream(v), v.length, null, LobClient.Progress.NONE).get();
        awaitValue("it-64m", v);
        assertThat(fsck().problems()).isEmpty();
    }

    @Test
    void partialUpdatesAsEvents() throws Exception {
        byte[] v = bytes(1_500_000, 2);
        client.put("it-part", new ByteArrayInputStream(v), v.length, null, LobClient.Progress.NONE).get();
        byte[] patch = bytes(1000, 3);
        client.write("it-part", 700_000, new ByteArrayInputStream(patch), patch.length, LobClient.Progress.NONE).get();
        System.arraycopy(patch, 0, v, 700_000, patch.length);
        byte[] more = bytes(900_000, 4); // over one chunk: sent as two APPENDs
        client.append("it-part", new ByteArrayInputStream(more), more.length, LobClient.Progress.NONE).get();
        byte[] appended = Arrays.copyOf(v, v.length + more.length);
        System.arraycopy(more, 0, appended, v.length, more.length);
        client.truncate("it-part", 2_000_000).get();
        awaitValue("it-part", Arrays.copyOf(appended, 2_000_000));
        await().atMost(Duration.ofSeconds(60)).until(() -> node.tablespaces().totals().historyLength() == 0);
        assertThat(fsck().problems()).isEmpty();
    }

    @Test
    void theClientTellsWhenTheWriterHasAppliedOrDeadLetteredAWrite() throws Exception {
        byte[] v = bytes(700_000, 8); // two chunks
        try (LobClient own = new LobClient(config)) {
            WriteOutcome put = own.put("it-ryw", v, null).applied().get(60, TimeUnit.SECONDS);
            assertThat(put.applied()).isTrue();
            assertThat(nodeSha("it-ryw")).isEqualTo(sha256(new ByteArrayInputStream(v))); // read-your-writes, no polling
            LobWrite tooLong = own.truncate("it-ryw", 10_000_000);
            LobWrite nothing = own.delete("it-ryw-never-written");
            assertThat(tooLong.applied().get(60, TimeUnit.SECONDS).deadLetter())
                    .hasValueSatisfying(d -> assertThat(d.kind()).isEqualTo("out-of-range"));
            assertThat(tooLong.applied().get(60, TimeUnit.SECONDS).applied()).as("asked again: still dead-lettered").isFalse();
            assertThat(nothing.applied().get(60, TimeUnit.SECONDS).applied()).isTrue();
            // completed on the client's callback threads, where a chained stage may block, not the JVM's common pool
            assertThat(own.delete("it-ryw-never-either").applied().thenApply(o -> Thread.currentThread().getName())
                    .get(60, TimeUnit.SECONDS)).startsWith("lobstream-client-callbacks");
        }
        try (LobClient late = new LobClient(config)) {
            // asked only after both are settled: the dead-letter topic is read back from their send time
            LobWrite rejected = late.write("it-ryw", 5_000_000, new ByteArrayInputStream(new byte[10]), 10, LobClient.Progress.NONE);
            LobWrite accepted = late.write("it-ryw", 0, new ByteArrayInputStream(new byte[10]), 10, LobClient.Progress.NONE);
            accepted.get();
            Arrays.fill(v, 0, 10, (byte) 0);
            awaitValue("it-ryw", v);
            assertThat(accepted.applied().get(60, TimeUnit.SECONDS).applied()).isTrue();
            assertThat(rejected.applied().get(60, TimeUnit.SECONDS).deadLetter()).isPresent();
        }
    }

    /**
     * The pieces of an append are sent without waiting for each other, each naming the one before (after): a piece that
     * expired in the producer's buffer (a broker away for delivery.timeout.ms) would not hold back the next, so the writer
     * applies a piece only once the one it names is (CommandApplierTest, and the out-of-order letter below). Seen here
     * through a producer interceptor: the chain the client sends, and the value it makes. (The interceptor is set in
     * the client's configuration, as a user sets a tracing one, for producers: the consumer behind applied() takes none.)
     */
    @Test
    void eachPieceOfAnAppendNamesThePieceBeforeIt() throws Exception {
        int chunk = config.get(LobStreamConfig.CHUNK_SIZE);
        byte[] v = bytes(1000, 31);
        client.put("it-append-order", v, null).get();
        byte[] more = bytes(3 * chunk + 100, 32); // four pieces
        Pieces.SENT.clear();
        try (LobClient watched = new LobClient(config.with(ClientKind.PRODUCER.prefix() + ProducerConfig.INTERCEPTOR_CLASSES_CONFIG,
                Pieces.class.getName()))) {
            assertThat(watched.append("it-append-order", new ByteArrayInputStream(more), more.length, LobClient.Progress.NONE)
                    .applied().get(60, TimeUnit.SECONDS).applied()).isTrue();
        }
        assertThat(Pieces.SENT).hasSize(4);
        assertThat(Pieces.SENT.get(0).getAfter()).isNull();
        for (int i = 1; i < 4; i++) {
            assertThat(Pieces.SENT.get(i).getAfter()).isEqualTo(Pieces.SENT.get(i - 1).getCommandId());
        }
        byte[] appended = Arrays.copyOf(v, v.length + more.length);
        System.arraycopy(more, 0, appended, v.length, more.length);
        awaitValue("it-append-order", appended);
    }

    /** Keeps, in the order they are handed to the producer, the commands of the LOB {@code it-append-order}. */
    public static final class Pieces implements ProducerInterceptor<String, Object> {
        static final List<LobCommand> SENT = java.util.Collections.synchronizedList(new ArrayList<>());

        @Override
        public ProducerRecord<String, Object> onSend(ProducerRecord<String, Object> record) {
            if ("it-append-order".equals(record.key())) {
                SENT.add(LobCommand.newBuilder((LobCommand) record.value()).build()); // its data buffer is the client's, reused
            }
            return record;
        }

        @Override
        public void onAcknowledgement(RecordMetadata metadata, Exception exception) {
        }

        @Override
        public void close() {
        }

        @Override
        public void configure(Map<String, ?> configs) {
        }
    }

    /**
     * A write sent as several records applies them one by one (README, Read-your-writes): a later piece the writer
     * refuses, here one that would take the value past the node's lob.value.max.bytes, which a client with a larger
     * limit of its own does not refuse, is dead-lettered and the write is told so, while the pieces before it stay
     * applied.
     */
    @Test
    void aWriteWhoseLaterPieceIsRefusedIsToldSoAndKeepsItsEarlierPieces() throws Exception {
        long limit = config.get(LobStreamConfig.VALUE_MAX_BYTES);
        int chunk = config.get(LobStreamConfig.CHUNK_SIZE);
        byte[] v = bytes((int) limit - chunk / 2, 21);
        assertThat(client.put("it-pieces", new ByteArrayInputStream(v), v.length, null, LobClient.Progress.NONE)
                .applied().get(60, TimeUnit.SECONDS).applied()).isTrue();
        byte[] patch = bytes(2 * chunk, 22); // two pieces: the first ends at the value's end, the second past the limit
        int at = v.length - chunk;

        try (LobClient larger = new LobClient(config.with(LobStreamConfig.VALUE_MAX_BYTES.name(), limit * 2))) {
            WriteOutcome outcome = larger.write("it-pieces", at, new ByteArrayInputStream(patch), patch.length, LobClient.Progress.NONE)
                    .applied().get(60, TimeUnit.SECONDS);

            assertThat(outcome.deadLetter()).hasValueSatisfying(d -> assertThat(d.kind()).isEqualTo(Rejection.TOO_LARGE));
        }
        System.arraycopy(patch, 0, v, at, chunk);
        assertThat(nodeSha("it-pieces")).isEqualTo(sha256(new ByteArrayInputStream(v))); // the first piece, read-your-writes
    }

    @Test
    void aCommandSentTwiceIsAppliedOnce() throws Exception {
        double duplicatesBefore = skipped("duplicate-command-id"); // another test's count is not this one's
        LobCommand first = put("it-twice", bytes(10, 5)).build();
        avro.send(new ProducerRecord<>(config.topics().commands(), "it-twice", first)).get();
        byte[] second = bytes(20, 6);
        avro.send(new ProducerRecord<>(config.topics().commands(), "it-twice", put("it-twice", second).build())).get();
        avro.send(new ProducerRecord<>(config.topics().commands(), "it-twice", first)).get(); // re-sent: must not win
        byte[] marker = bytes(30, 7);
        avro.send(new ProducerRecord<>(config.topics().commands(), "it-twice-marker", put("it-twice-marker", marker).build())).get();
        awaitValue("it-twice-marker", marker);
        await().atMost(Duration.ofSeconds(30)).until(() -> skipped("duplicate-command-id") > duplicatesBefore);
        awaitValue("it-twice", second);
    }

    /**
     * A write retried with its idempotency key is applied once, by another client too: a put the first try left
     * part-way (its input failed after the first chunk was sent) resumes where it stopped, and a put and an append
     * retried after they were applied change nothing.
     */
    @Test
    void aWriteRetriedWithItsIdempotencyKeyIsAppliedOnce() throws Exception {
        String id = "it-idempotent";
        byte[] v = bytes(1_200_000, 11); // three chunks
        InputStream failsAfterTheFirstChunk = new java.io.SequenceInputStream(new ByteArrayInputStream(v, 0, 600_000),
                new InputStream() {
                    @Override
                    public int read() throws java.io.IOException {
                        throw new java.io.IOException("the disk went away");
                    }
                });
        double duplicatesBefore = skipped("duplicate-command-id");
        byte[] more = bytes(1000, 12);
        try (LobClient restarted = new LobClient(config)) {
            // started (producer id, metadata, registry) before the first try: the upload it leaves part-way must not
            // expire (lob.upload.timeout.ms is 15 s here) while a new client starts on a loaded machine
            restarted.put(id + "-warm-up", bytes(10, 1), null).get(60, TimeUnit.SECONDS);
            assertThatThrownBy(() -> client.idempotent("job-1").put(id, failsAfterTheFirstChunk, v.length, null, Map.of(),
                    LobClient.Progress.NONE)).hasMessageContaining("the disk went away");
            assertThat(restarted.idempotent("job-1").put(id, new ByteArrayInputStream(v), v.length, null, Map.of(),
                    LobClient.Progress.NONE).applied().get(60, TimeUnit.SECONDS).applied()).isTrue();
            assertThat(restarted.idempotent("job-2").append(id, new ByteArrayInputStream(more), more.length,
                    LobClient.Progress.NONE).applied().get(60, TimeUnit.SECONDS).applied()).isTrue();
            String version = get(id).headers().firstValue("ETag").orElseThrow();

            assertThat(restarted.idempotent("job-1").put(id, v, null, Map.of()).applied().get(60, TimeUnit.SECONDS).applied())
                    .isTrue();
            assertThat(restarted.idempotent("job-2").append(id, new ByteArrayInputStream(more), more.length,
                    LobClient.Progress.NONE).applied().get(60, TimeUnit.SECONDS).applied()).isTrue();
            assertThat(get(id).headers().firstValue("ETag")).as("no new version").hasValue(version);
            // the key reused for another write: told, not dropped in silence
            assertThat(restarted.idempotent("job-2").append(id, new ByteArrayInputStream(new byte[7]), 7, LobClient.Progress.NONE)
                    .applied().get(60, TimeUnit.SECONDS).deadLetter())
                    .hasValueSatisfying(d -> assertThat(d.kind()).isEqualTo(Rejection.ID_CONFLICT));
        }
        byte[] whole = Arrays.copyOf(v, v.length + more.length);
        System.arraycopy(more, 0, whole, v.length, more.length);
        assertThat(nodeSha(id)).isEqualTo(sha256(new ByteArrayInputStream(whole)));
        // the first try's chunk; the second put's three chunks; the second append. At least: a meter is no part of the
        // writer's transaction, and a Streams task retried after an abort counts the skips it makes again
        assertThat(skipped("duplicate-command-id") - duplicatesBefore).isGreaterThanOrEqualTo(5);
    }

    @Test
    void anUploadWhoseProducerStopsExpiresAndFreesItsPages() throws Exception {
        double expiredBefore = uploadsExpired();
        String upload = UUID.randomUUID().toString();
        for (int i = 0; i < 2; i++) {
            avro.send(new ProducerRecord<>(config.topics().commands(), "it-stopped", put("it-stopped", bytes(1000, i)).setUploadId(upload)
                    .setChunkIndex(i).setChunkCount(5).setOffset(i * 1000L).setTotalLength(5000).build())).get();
        }
        await().atMost(Duration.ofSeconds(120)).until(() -> uploadsExpired() > expiredBefore);
        FsckReport r = fsck();
        assertThat(r.problems()).isEmpty();
        assertThat(r.pagesUploading()).isZero();
        assertThat(get("it-stopped").statusCode()).isEqualTo(404);
    }

    /**
     * A put whose input fails after its first chunk: the client sends an ABORT after the chunks it sent, and the writer
     * frees the upload's pages at once, where they stayed taken until lob.upload.timeout.ms (ten minutes by default).
     */
    @Test
    void aPutWhoseInputFailsAbortsItsUpload() throws Exception {
        double expiredBefore = uploadsExpired();
        double abortsBefore = abortsApplied();
        InputStream failing = new InputStream() {
            private long read;

            @Override
            public int read() throws IOException {
                if (read == 600_000) { // and at every read after it: InputStream.read(byte[]) drops a failure after a first byte
                    throw new IOException("the disk went away");
                }
                read++;
                return 7;
            }
        };
        assertThatThrownBy(() -> client.put("it-aborted", failing, 2_000_000, null, Map.of(), LobClient.Progress.NONE))
                .isInstanceOf(IOException.class).hasMessageContaining("the upload is aborted").hasMessageContaining("the disk went away");
        assertAbortedAndFreed("it-aborted", abortsBefore);
        assertThat(uploadsExpired()).as("aborted, not expired").isEqualTo(expiredBefore);
    }

    /** The writer applied an ABORT since {@code abortsBefore} were, and {@code lobId}'s upload left no page taken. */
    private void assertAbortedAndFreed(String lobId, double abortsBefore) throws Exception {
        await().atMost(Duration.ofSeconds(60)).until(() -> abortsApplied() > abortsBefore);
        FsckReport r = fsck();
        assertThat(r.problems()).isEmpty();
        assertThat(r.pagesUploading()).isZero();
        assertThat(get(lobId).statusCode()).isEqualTo(404);
    }

    private double abortsApplied() {
        var c = node.meters().find("lob_commands_applied").tag("op", "ABORT").counter();
        return c == null ? 0 : c.count();
    }

    /**
     * A put told to stop mid-upload (the CLI's Ctrl-C): it aborts its upload, as a put whose input fails does, so that the
     * writer frees the pages at once; before, the JVM exited with the chunks sent and they stayed taken for ten minutes.
     */
    @Test
    void aPutToldToStopMidUploadAbortsIt() throws Exception {
        double abortsBefore = abortsApplied();
        try (LobClient stopped = new LobClient(config)) {
            InputStream ctrlC = new InputStream() {
                private long read;

                @Override
                public int read() {
                    if (++read == 600_000) { // past the first chunk
                        stopped.stopSending("stopped by a SIGTERM or Ctrl-C");
                    }
                    return 7;
                }
            };
            assertThatThrownBy(() -> stopped.put("it-stopped-by-user", ctrlC, 2_000_000, null, Map.of(), LobClient.Progress.NONE)
                    .get(60, TimeUnit.SECONDS)).hasRootCauseInstanceOf(WriteStoppedException.class)
                    .hasMessageContaining("as the client was told to stop").hasMessageContaining("the upload is aborted");
            // for good: a write after it sends nothing
            assertThatThrownBy(() -> stopped.delete("it-stopped-by-user").get(60, TimeUnit.SECONDS))
                    .hasRootCauseInstanceOf(WriteStoppedException.class);
        }
        assertAbortedAndFreed("it-stopped-by-user", abortsBefore);
    }

    /**
     * A chunk appended more than lob.upload.timeout.ms after the one before it (in the commands'
     * time: the broker's, lob.commands being LogAppendTime) finds its upload gone, as replay decides
     * it, whenever the writer's housekeeping last ran; it used to depend on whether housekeeping had
     * come round, and a copy rebuilt from lob.commands could disagree with the writer's.
     */
    @Test
    void aChunkSentAfterTheUploadTimeoutFindsItsUploadExpiredAsReplayWould() throws Exception {
        String id = "it-late-chunk";
        String upload = UUID.randomUUID().toString();
        String topic = config.topics().commands();
        avro.send(new ProducerRecord<>(topic, id, put(id, bytes(1000, 1)).setUploadId(upload).setChunkIndex(0)
                .setChunkCount(2).setOffset(0).setTotalLength(2000).build())).get();
        Thread.sleep(16_000); // the upload timeout is 15 s
        avro.send(new ProducerRecord<>(topic, id, put(id, bytes(1000, 2)).setUploadId(upload).setChunkIndex(1)
                .setChunkCount(2).setOffset(1000).setTotalLength(2000).build())).get();
        Map<String, String> reasons = new HashMap<>();
        Nodes.committedRecords(cluster, config.topics().deadLetters(), Duration.ofSeconds(60), seen -> {
            seen.stream().filter(r -> r.key() != null && new String(r.key(), StandardCharsets.UTF_8).equals(id))
                    .forEach(r -> reasons.put(Nodes.header(r, DeadLetterTopic.KIND), Nodes.header(r, DeadLetterTopic.REASON)));
            return reasons.containsKey("upload");
        });
        assertThat(reasons.get("upload")).contains(upload);
        assertThat(get(id).statusCode()).isEqualTo(404);
        // and a copy rebuilt from the log refuses it too
        try (LobStore replayed = LobStore.open(dir.resolve("replay-late-chunk"), LobStoreConfig.defaults())) {
            new PartitionReplayer(config).replay(Nodes.partitionOf(id, config.get(LobStreamConfig.PARTITIONS)), replayed);
            assertThat(replayed.current(id)).isEmpty();
        }
    }

    /**
     * Each bad record's own dead letter, found by the record's partition and offset (not by kind or key: another test's
     * letter of the same kind, or a second record of this one's, must not stand in for it), with its kind and reason.
     */
    @Test
    void everyKindOfBadInputIsDeadLetteredWithItsReasonAndGoodRecordsAroundItAreApplied() throws Exception {
        String topic = config.topics().commands();
        byte[] before = bytes(10, 1);
        client.put("it-dlq", before, null).get();
        awaitValue("it-dlq", before); // the good record before them, applied
        record Bad(String key, Object value, String kind, String reason) {
        }
        List<Bad> bad = List.of(
                new Bad("it-dlq", put("it-dlq-other", bytes(5, 1)).build(), "invalid", "record key does not match lobId it-dlq-other"),
                new Bad("it-dlq", put("it-dlq", bytes(5, 7)).setOp(LobOp.WRITE).setOffset(-5).build(), "invalid", "negative offset -5"),
                new Bad("it-dlq", put("it-dlq", new byte[0]).setUploadId("u-big").setChunkCount(400).setTotalLength(200L << 20).build(),
                        "too-large", "lob.value.max.bytes"),
                new Bad("it-dlq", put("it-dlq", bytes(5, 2)).setOp(LobOp.WRITE).setOffset(1_000).build(), "out-of-range",
                        "WRITE at offset 1000 of it-dlq, which has 10 bytes"),
                new Bad("it-dlq-none", put("it-dlq-none", new byte[0]).setOp(LobOp.TRUNCATE).setTotalLength(0).build(), "not-found",
                        "TRUNCATE of it-dlq-none, which does not exist"),
                new Bad("it-dlq", put("it-dlq", bytes(5, 3)).setCrc32c(12345).build(), "crc-mismatch", "does not match the expected 00003039"),
                new Bad("it-dlq", put("it-dlq", bytes(5, 4)).setUploadId("u-unknown").setChunkIndex(3).setChunkCount(5).setOffset(15)
                        .setTotalLength(25).build(), "upload", "u-unknown"),
                new Bad("it-dlq", put("it-dlq", bytes(5, 5)).setOp(LobOp.APPEND).setUploadId("u-append").setChunkCount(2).build(),
                        "unsupported", "APPEND in chunks"),
                new Bad("it-dlq", put("it-dlq", bytes(5, 6)).setOp(LobOp.APPEND).setAfter("c-never-sent").build(), "out-of-order",
                        "c-never-sent"),
                new Bad("it-dlq", unknownOp("it-dlq"), "undecodable", "cannot decode a LobCommand"));
        Map<String, Bad> expected = new HashMap<>(); // by "partition/offset"
        for (Bad b : bad) {
            RecordMetadata md = avro.send(new ProducerRecord<>(topic, b.key(), b.value())).get();
            expected.put(md.partition() + "/" + md.offset(), b);
        }
        try (KafkaProducer<byte[], byte[]> raw = new KafkaProducer<>(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap()),
                new ByteArraySerializer(), new ByteArraySerializer())) {
            RecordMetadata md = raw.send(new ProducerRecord<>(topic, "it-dlq".getBytes(), "not avro at all".getBytes())).get();
            expected.put(md.partition() + "/" + md.offset(), new Bad("it-dlq", null, "undecodable", "cannot decode a LobCommand"));
        }
        byte[] good = bytes(77, 9);
        client.put("it-dlq", good, null).get();
        awaitValue("it-dlq", good); // the good record after them, applied

        Map<String, Map.Entry<String, String>> letters = new HashMap<>(); // (kind, reason) by the origin's "partition/offset"
        Nodes.committedRecords(cluster, config.topics().deadLetters(), Duration.ofSeconds(60), seen -> {
            for (ConsumerRecord<byte[], byte[]> r : seen) {
                String origin = Nodes.header(r, DeadLetterTopic.ORIGIN_PARTITION) + "/" + Nodes.header(r, DeadLetterTopic.ORIGIN_OFFSET);
                if (topic.equals(Nodes.header(r, DeadLetterTopic.ORIGIN_TOPIC)) && expected.containsKey(origin)) {
                    letters.put(origin, Map.entry(Nodes.header(r, DeadLetterTopic.KIND), Nodes.header(r, DeadLetterTopic.REASON)));
                    // under Kafka Streams' own names too (KIP-1034)
                    assertThat(Nodes.header(r, DeadLetterTopic.STREAMS_OFFSET)).isEqualTo(Nodes.header(r, DeadLetterTopic.ORIGIN_OFFSET));
                    assertThat(Nodes.header(r, DeadLetterTopic.STREAMS_EXCEPTION)).endsWith(": " + Nodes.header(r, DeadLetterTopic.KIND));
                }
            }
            return letters.keySet().containsAll(expected.keySet());
        });
        expected.forEach((origin, b) -> {
            assertThat(letters.get(origin).getKey()).as(b.reason()).isEqualTo(b.kind());
            assertThat(letters.get(origin).getValue()).as(b.kind()).contains(b.reason());
        });
    }

    /**
     * A record near Kafka's 1 MiB whose reason quotes a long lobId: its dead letter, value and reason together, would be
     * over the limit, refused by the broker at every try, and the partition would stop. It goes without the value
     * (which stays on lob.commands, where the letter's headers point), and the partition goes on.
     */
    @Test
    void aDeadLetterThatWouldBeTooLargeForKafkaGoesWithoutTheValue() throws Exception {
        String key = "it-dlq-huge";
        LobCommand near1MiB = put("it-dlq-" + "x".repeat(30_000), bytes(1_000_000, 11)).build(); // not its key's lobId: invalid
        avro.send(new ProducerRecord<>(config.topics().commands(), key, near1MiB)).get();
        byte[] good = bytes(100, 12);
        client.put(key, good, null).get(); // the same partition, after it
        awaitValue(key, good);
        List<ConsumerRecord<byte[], byte[]>> letters = new ArrayList<>();
        Nodes.committedRecords(cluster, config.topics().deadLetters(), Duration.ofSeconds(60), seen -> {
            letters.clear();
            seen.stream().filter(r -> r.key() != null && new String(r.key(), StandardCharsets.UTF_8).equals(key)).forEach(letters::add);
            return !letters.isEmpty();
        });
        ConsumerRecord<byte[], byte[]> letter = letters.get(0);
        assertThat(letter.value()).isNull();
        assertThat(Long.parseLong(Nodes.header(letter, DeadLetterTopic.VALUE_DROPPED))).isGreaterThan(1_000_000);
        assertThat(Nodes.header(letter, DeadLetterTopic.KIND)).isEqualTo("invalid");
        assertThat(Nodes.header(letter, DeadLetterTopic.REASON)).hasSizeLessThanOrEqualTo(1027);
    }

    @Test
    void aReclaimRecordTheWriterCannotApplyIsDeadLetteredAndTheTaskGoesOn() throws Exception {
        String topic = config.topics().reclaim();
        String id = "it-bad-reclaim";
        client.put(id, bytes(10, 1), null).get();
        ReclaimRecord overlapping = ReclaimRecord.newBuilder().setLobId(id).setVersion(1)
                .setExtents(List.of(new io.lobstream.avro.Extent(10L, 4), new io.lobstream.avro.Extent(12L, 4)))
                .setWorkerId("it").setTime(Instant.now()).build();
        avro.send(new ProducerRecord<>(topic, id, overlapping)).get();
        // the same record with its extents block claiming 2^31 - 9 items: a decoder that allocated what it
        // claims would end the stream thread with an OutOfMemoryError at every restart of the task
        byte[] wire = LobSerdes.valueSerializer(config).serialize(topic, overlapping);
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        BinaryEncoder enc = EncoderFactory.get().binaryEncoder(body, null);
        new SpecificDatumWriter<>(ReclaimRecord.class).write(overlapping, enc);
        enc.flush();
        ByteArrayOutputStream forged = new ByteArrayOutputStream();
        forged.write(wire, 0, wire.length - body.size()); // the registry's header
        enc = EncoderFactory.get().binaryEncoder(forged, null);
        enc.writeString(id);
        enc.writeLong(1);
        enc.writeLong(Integer.MAX_VALUE - 8);
        enc.flush();
        try (KafkaProducer<byte[], byte[]> raw = new KafkaProducer<>(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap()),
                new ByteArraySerializer(), new ByteArraySerializer())) {
            raw.send(new ProducerRecord<>(topic, id.getBytes(StandardCharsets.UTF_8), forged.toByteArray())).get();
        }
        byte[] good = bytes(33, 5);
        client.put(id, good, null).get();
        awaitValue(id, good);

        await().atMost(60, TimeUnit.SECONDS).until(() -> {
            List<Map.Entry<String, String>> letters = deadLetterList(1);
            return letters.stream().anyMatch(e -> e.getKey().equals("invalid") && e.getValue().contains("extents overlap"))
                    && letters.stream().anyMatch(e -> e.getKey().equals("undecodable") && e.getValue().contains("overruns the record"));
        });
    }

    @Test
    void aCommandOffItsKeysPartitionIsDeadLetteredNotStoredWhereNothingReadsIt() throws Exception {
        String topic = config.topics().commands();
        avro.send(new ProducerRecord<>(topic, null, put("it-nokey", bytes(5, 1)).build())).get();
        int home = avro.partitionsFor(topic).size() == 2 ? Nodes.partitionOf("it-elsewhere", 2) : 0;
        avro.send(new ProducerRecord<>(topic, 1 - home, "it-elsewhere", put("it-elsewhere", bytes(5, 2)).build())).get();
        byte[] marker = bytes(40, 3);
        client.put("it-nokey", marker, null).get(); // after both, on the key's partition
        awaitValue("it-nokey", marker);
        await().atMost(Duration.ofSeconds(60)).until(() -> {
            List<String> invalid = deadLetterList(1).stream().filter(e -> e.getKey().equals("invalid")).map(Map.Entry::getValue).toList();
            return invalid.stream().anyMatch(r -> r.contains("no key")) && invalid.stream().anyMatch(r -> r.contains("belongs to partition " + home));
        });
        assertThat(get("it-elsewhere").statusCode()).isEqualTo(404);
        // each letter on the partition numbered as its command's, where a replay of that partition reads, not its key's
        List<ConsumerRecord<byte[], byte[]>> letters = Nodes.committedRecords(cluster, config.topics().deadLetters(), Duration.ofSeconds(60),
                seen -> seen.stream().anyMatch(r -> r.key() != null && new String(r.key(), StandardCharsets.UTF_8).equals("it-elsewhere")));
        assertThat(letters).filteredOn(r -> r.key() != null && new String(r.key(), StandardCharsets.UTF_8).equals("it-elsewhere"))
                .singleElement().extracting(ConsumerRecord::partition).isEqualTo(1 - home);
        assertThat(letters).filteredOn(r -> r.headers().lastHeader(DeadLetterTopic.ORIGIN_PARTITION) != null).isNotEmpty()
                .allSatisfy(r -> assertThat(r.partition()).isEqualTo(Integer.parseInt(Nodes.header(r, DeadLetterTopic.ORIGIN_PARTITION))));
        // redrive leaves it: sent back it would land on its key's partition after the LOB's newer commands, applied over them
        long letter = letters.stream().filter(r -> r.key() != null && new String(r.key(), StandardCharsets.UTF_8).equals("it-elsewhere"))
                .findFirst().orElseThrow().offset();
        DeadLetterRedrive.Result left = DeadLetterRedrive.run(config, Set.of(1 - home), letter, Rejection.INVALID::equals, false, true);
        assertThat(left.misrouted()).isPositive();
        DeadLetterRedrive.Result asked = DeadLetterRedrive.run(config, Set.of(1 - home), letter, Rejection.INVALID::equals, true, true);
        assertThat(asked.misrouted()).isZero();
        assertThat(asked.redriven()).as("sent back only when asked (--kind invalid)").isEqualTo(left.redriven() + left.misrouted());
    }

    @Test
    void replayOfAPartitionGivesByteIdenticalValues() throws Exception {
        for (int i = 0; i < 20; i++) {
            client.put("it-replay-" + (i % 7), bytes(20_000 + 1000 * i, i), null).get();
        }
        client.append("it-replay-1", new ByteArrayInputStream(bytes(5000, 50)), 5000, LobClient.Progress.NONE).get();
        byte[] last = bytes(123, 51);
        client.put("it-replay-last", last, null).get();
        awaitValue("it-replay-last", last);
        for (int p : node.tablespaces().all().keySet()) {
            try (LobStore replayed = LobStore.open(dir.resolve("replay").resolve("p-" + p), LobStoreConfig.defaults())) {
                new PartitionReplayer(config).replay(p, replayed);
                assertThat(replayed.fsck(true).problems()).isEmpty();
                List<VersionEntry> live = new ArrayList<>();
                replayed.forEachCurrent(live::add);
                assertThat(live).isNotEmpty();
                // the replay read to the log's end: the node may still be applying the last commands of this partition
                await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> {
                    for (VersionEntry e : live) {
                        try (LobReadHandle h = replayed.open(e.lobId()).orElseThrow(); InputStream in = h.stream(0, h.length())) {
                            assertThat(sha256(in)).as(e.lobId()).isEqualTo(nodeSha(e.lobId()));
                        }
                    }
                });
                // and the other way: nothing live on the node is missing from the replay (the node may still be applying)
                List<String> replayedIds = live.stream().map(VersionEntry::lobId).toList();
                await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> {
                    List<String> onNode = new ArrayList<>();
                    node.tablespaces().get(p).orElseThrow().forEachCurrent(e -> onNode.add(e.lobId()));
                    assertThat(onNode).as("partition " + p).containsExactlyElementsOf(replayedIds);
                });
            }
        }
    }

    /**
     * A replay given a lob.value.max.bytes raised since refuses, by the writer's letter, what the writer refused as too
     * large: applying it there would apply the commands after it in another order than the writer did, and skip the copy
     * redrive sent back as a duplicate.
     */
    @Test
    void aReplayWithALimitRaisedSinceRefusesWhatTheWriterRefusedByItsLetter() throws Exception {
        String id = "it-raised";
        int p = Nodes.partitionOf(id, config.get(LobStreamConfig.PARTITIONS));
        String topic = config.topics().commands();
        RecordMetadata over = avro.send(new ProducerRecord<>(topic, id, put(id, new byte[0]).setUploadId("u-raised").setChunkCount(400)
                .setTotalLength(200L << 20).build())).get(); // over the node's 100 MiB
        Nodes.committedRecords(cluster, config.topics().deadLetters(), Duration.ofSeconds(60), seen -> seen.stream()
                .anyMatch(r -> r.key() != null && id.equals(new String(r.key(), StandardCharsets.UTF_8))));
        LobStreamConfig raised = config.with(LobStreamConfig.VALUE_MAX_BYTES.name(), 1L << 30);
        try (LobStore replayed = LobStore.open(dir.resolve("replay-raised"), LobStoreConfig.defaults())) {
            PartitionReplayer.Result r = new PartitionReplayer(raised).replay(p, replayed, over.offset(), over.offset() + 1);
            assertThat(r.rejected()).isEqualTo(1);
            assertThat(replayed.rejection(new Source(new TopicPartition(topic, p).toString(), over.offset())))
                    .get().extracting(Rejection::kind).isEqualTo(Rejection.TOO_LARGE);
            assertThat(replayed.stats().pagesUploading()).as("no upload begun").isZero();
        }
    }

    /**
     * A replay of a lob.commands whose first records retention deleted builds what is left and marks the copy incomplete
     * before it applies anything: fsck says which offsets it misses, where a copy that looks whole would hide the loss.
     */
    @Test
    void aReplayOfATopicThatRetentionTrimmedMarksItsCopyIncomplete() throws Exception {
        LobStreamConfig trimmed = config.with(LobStreamConfig.TOPIC_PREFIX.name(), "trimmed.");
        List<String> ids = idsOfPartition0("it-trimmed-", 4);
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap()));
             LobClient writer = new LobClient(trimmed)) {
            TopicSetup.ensureTopics(admin, trimmed);
            for (int i = 0; i < ids.size(); i++) {
                writer.put(ids.get(i), bytes(1000 + i, 70 + i), null).get(); // offsets 0 to 3: an idempotent producer, no markers
            }
            TopicPartition tp = new TopicPartition(trimmed.topics().commands(), 0);
            admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(2))).all().get(); // as retention would
            try (LobStore replayed = LobStore.open(dir.resolve("replay-trimmed"), LobStoreConfig.defaults())) {
                PartitionReplayer.Result r = new PartitionReplayer(trimmed).replay(0, replayed);
                assertThat(r.records()).isEqualTo(2);
                assertThat(replayed.current(ids.get(0))).isEmpty();
                assertThat(replayed.current(ids.get(3))).isPresent();
                FsckReport fsck = replayed.fsck(true);
                assertThat(fsck.ok()).isFalse();
                assertThat(fsck.problems()).singleElement().asString().contains("offsets [0, 2) of " + tp);
                assertThat(replayed.incompleteness()).get().asString().contains("offsets [0, 2) of " + tp); // /status, the gauge
            }
        }
    }

    /**
     * A replay of a lob.commands that compacts marks its copy incomplete: compaction keeps only each LOB's newest record
     * and leaves the log's start where it was, so the copy would otherwise pass fsck with uploads and writes missing. So
     * does one whose lob.commands.dlq compacts: a command the writer refused may have lost its letter, and the copy may
     * then apply it.
     */
    @Test
    void aReplayOfACompactedTopicMarksItsCopyIncomplete() throws Exception {
        for (String prefix : List.of("compacted.", "compacted-dlq.")) {
            LobStreamConfig compacted = config.with(LobStreamConfig.TOPIC_PREFIX.name(), prefix);
            boolean commands = prefix.equals("compacted.");
            String compacts = commands ? compacted.topics().commands() : compacted.topics().deadLetters();
            String doesNot = commands ? compacted.topics().deadLetters() : compacted.topics().commands() + "-0";
            String id = idsOfPartition0("it-" + prefix, 1).get(0);
            try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap()));
                 LobClient writer = new LobClient(compacted)) {
                TopicSetup.ensureTopics(admin, compacted);
                ConfigResource topic = new ConfigResource(ConfigResource.Type.TOPIC, compacts);
                admin.incrementalAlterConfigs(Map.of(topic, List.of(new AlterConfigOp(new ConfigEntry("cleanup.policy", "compact"),
                        AlterConfigOp.OpType.SET)))).all().get(); // as a topic made by hand, or altered, can be
                writer.put(id, bytes(5000, 80), null).get();
                try (LobStore replayed = LobStore.open(dir.resolve("replay-" + prefix), LobStoreConfig.defaults())) {
                    new PartitionReplayer(compacted).replay(0, replayed);
                    assertThat(replayed.current(id)).as("what is left is applied").isPresent();
                    assertThat(replayed.incompleteness()).as(compacts).get().asString().contains(compacts, "cleanup.policy=compact")
                            .doesNotContain(doesNot);
                    assertThat(replayed.fsck(true).ok()).isFalse();
                }
            }
        }
    }

    /**
     * Retention that deletes the records a replay was about to read, while it runs: Kafka's default for a consumer is to
     * jump to the log's end, which ended the replay as if it were done. It marks its copy incomplete, as for a gap at the
     * start, and goes on from the first record kept.
     */
    @Test
    void aReplayWhoseNextRecordsRetentionDeletesMeanwhileMarksItsCopyIncomplete() throws Exception {
        // one record per fetch, so that the records past the first are still to be fetched when retention deletes them
        LobStreamConfig own = config.with(LobStreamConfig.TOPIC_PREFIX.name(), "trimmed-meanwhile.")
                .with("lob.consumer.max.partition.fetch.bytes", "1");
        List<String> ids = idsOfPartition0("it-trimmed-meanwhile-", 6);
        TopicPartition tp = new TopicPartition(own.topics().commands(), 0);
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap()));
             LobClient writer = new LobClient(own)) {
            TopicSetup.ensureTopics(admin, own);
            for (int i = 0; i < ids.size(); i++) {
                writer.put(ids.get(i), bytes(3000 + i, 90 + i), null).get(); // offsets 0 to 5: an idempotent producer, no markers
            }
            try (LobStore replayed = LobStore.open(dir.resolve("replay-trimmed-meanwhile"), LobStoreConfig.defaults())) {
                PartitionReplayer.Progress trimAtTheFirst = new PartitionReplayer.Progress() {
                    @Override
                    public void at(long offset, long endOffset) {
                    }

                    @Override
                    public void firstRecord(long offset) throws IOException {
                        try {
                            admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(4))).all().get(); // as retention would
                        } catch (InterruptedException | ExecutionException e) {
                            throw new IOException(e);
                        }
                    }
                };
                PartitionReplayer.Result r = new PartitionReplayer(own).replay(0, replayed, 0, -1, trimAtTheFirst);
                assertThat(replayed.incompleteness()).get().asString().matches(".*offsets \\[[1-3], 4\\) of " + tp + ".*");
                assertThat(r.endOffset()).isEqualTo(6);
                assertThat(replayed.current(ids.get(4))).isPresent();
                assertThat(replayed.current(ids.get(5))).isPresent();
                assertThat(replayed.fsck(true).ok()).isFalse();
            }
        }
    }

    /**
     * A replay asked to stop (the node closing under a catch-up) stops between two commands, by a flag and not by an
     * interrupt, and leaves its tablespace whole; started again from the offset the tablespace recorded, it applies the
     * rest.
     */
    @Test
    void aReplayStoppedPartWayGoesOnFromWhatItsTablespaceRecorded() throws Exception {
        LobStreamConfig own = config.with(LobStreamConfig.TOPIC_PREFIX.name(), "stopped.");
        List<String> ids = idsOfPartition0("it-stopped-", 4);
        TopicPartition tp = new TopicPartition(own.topics().commands(), 0);
        Path copy = dir.resolve("replay-stopped");
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap()));
             LobClient writer = new LobClient(own)) {
            TopicSetup.ensureTopics(admin, own);
            for (int i = 0; i < ids.size(); i++) {
                writer.put(ids.get(i), bytes(2000 + i, 80 + i), null).get(); // offsets 0 to 3: an idempotent producer, no markers
            }
        }
        try (LobStore replayed = LobStore.open(copy, LobStoreConfig.defaults())) {
            PartitionReplayer replayer = new PartitionReplayer(own);
            PartitionReplayer.Progress stopAtTheFirst = new PartitionReplayer.Progress() {
                @Override
                public void at(long offset, long endOffset) {
                }

                @Override
                public void firstRecord(long offset) {
                    replayer.stop(); // as a closing node does, from another thread
                }
            };
            assertThatThrownBy(() -> replayer.replay(0, replayed, 0, -1, stopAtTheFirst))
                    .isInstanceOf(InterruptedIOException.class).hasMessage("replay of " + tp + " stopped before offset 1");
        }
        try (LobStore replayed = LobStore.open(copy, LobStoreConfig.defaults())) {
            long applied = replayed.appliedOffset(tp.toString());
            assertThat(applied).isZero();
            assertThat(new PartitionReplayer(own).replay(0, replayed, applied + 1, -1).records()).isEqualTo(3);
            for (int i = 0; i < ids.size(); i++) {
                try (LobReadHandle h = replayed.open(ids.get(i)).orElseThrow(); InputStream in = h.stream(0, h.length())) {
                    assertThat(in.readAllBytes()).as(ids.get(i)).isEqualTo(bytes(2000 + i, 80 + i));
                }
            }
            assertThat(replayed.fsck(true).problems()).isEmpty();
        }
    }

    /** The first {@code n} ids of the form prefix + i that hash to partition 0. */
    private static List<String> idsOfPartition0(String prefix, int n) {
        List<String> ids = new ArrayList<>();
        for (int i = 0; ids.size() < n; i++) {
            if (Nodes.partitionOf(prefix + i, config.get(LobStreamConfig.PARTITIONS)) == 0) {
                ids.add(prefix + i);
            }
        }
        return ids;
    }

    /**
     * A command naming a schema id the registry does not have is dead-lettered by the writer; a replay, meeting it, finds
     * its letter on lob.commands.dlq and skips it as the writer did (DeadLetterLogTest has a replay that finds none).
     */
    @Test
    void replaySkipsACommandOfAnUnknownSchemaThatTheWriterDeadLettered() throws Exception {
        String id = "it-noschema";
        try (KafkaProducer<byte[], byte[]> raw = new KafkaProducer<>(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap()),
                new ByteArraySerializer(), new ByteArraySerializer())) {
            byte[] frame = ByteBuffer.allocate(9).put((byte) 0).putInt(987_654).putInt(42).array(); // magic byte, an id no schema has
            raw.send(new ProducerRecord<>(config.topics().commands(), id.getBytes(StandardCharsets.UTF_8), frame)).get();
        }
        byte[] after = bytes(50, 61);
        client.put(id, after, null).get();
        awaitValue(id, after);
        int p = Nodes.partitionOf(id, config.get(LobStreamConfig.PARTITIONS));
        try (LobStore replayed = LobStore.open(dir.resolve("replay-noschema"), LobStoreConfig.defaults())) {
            PartitionReplayer.Result r = new PartitionReplayer(config).replay(p, replayed);
            assertThat(r.rejected()).isGreaterThanOrEqualTo(1);
            try (LobReadHandle h = replayed.open(id).orElseThrow(); InputStream in = h.stream(0, h.length())) {
                assertThat(in.readAllBytes()).isEqualTo(after);
            }
        }
    }

    /**
     * A catch-up reads the dead letters from a while before its first command's time, not every letter ever kept; a
     * command stamped earlier (here by a producer, after the topic was set to CreateTime by hand) has them read again from
     * the start. Two letters stamped an hour ago: one names the undecodable command at offset 1, which the replay must
     * find; the other claims the PUT at offset 0 was refused, which a read bounded by the PUT's time does not see, so the
     * replay applies it (no writer ever read this topic: the letters, made by hand, say what a read finds).
     */
    @Test
    void aReplayReadsTheLettersOfItsTimeAndAllOfThemForACommandStampedEarlier() throws Exception {
        LobStreamConfig own = config.with(LobStreamConfig.TOPIC_PREFIX.name(), "bounded.")
                .with(LobStreamConfig.APPLICATION_ID.name(), "it-bounded-" + UUID.randomUUID());
        List<String> ids = idsOfPartition0("it-bounded-", 2);
        TopicPartition tp = new TopicPartition(own.topics().commands(), 0);
        long hourAgo = System.currentTimeMillis() - Duration.ofHours(1).toMillis();
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap()));
             LobClient writer = new LobClient(own);
             KafkaProducer<byte[], byte[]> raw = new KafkaProducer<>(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap()),
                     new ByteArraySerializer(), new ByteArraySerializer())) {
            TopicSetup.ensureTopics(admin, own);
            assertThat(writer.put(ids.get(0), bytes(4000, 90), null).get().offset()).isZero();
            ConsumerRecord<byte[], byte[]> put = Nodes.committedRecords(cluster, tp.topic(), Duration.ofSeconds(60), seen -> !seen.isEmpty()).get(0);
            assertThat(put.timestampType()).as("stamped by the broker, as LobStream makes the topic").isEqualTo(TimestampType.LOG_APPEND_TIME);
            admin.incrementalAlterConfigs(Map.of(new ConfigResource(ConfigResource.Type.TOPIC, tp.topic()), List.of(new AlterConfigOp(
                    new ConfigEntry("message.timestamp.type", "CreateTime"), AlterConfigOp.OpType.SET)))).all().get();
            byte[] unknownSchema = ByteBuffer.allocate(9).put((byte) 0).putInt(987_655).putInt(42).array();
            byte[] key = ids.get(1).getBytes(StandardCharsets.UTF_8);
            await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(raw.send(new ProducerRecord<>(tp.topic(), 1, hourAgo,
                    key, new byte[0])).get().timestamp()).as("a probe on partition 1 keeps the producer's time").isEqualTo(hourAgo));
            assertThat(raw.send(new ProducerRecord<>(tp.topic(), 0, hourAgo, key, unknownSchema)).get())
                    .extracting(RecordMetadata::offset, RecordMetadata::timestamp).containsExactly(1L, hourAgo);
            raw.send(letter(own, 0, hourAgo, put.key(), put.value(), Rejection.TOO_LARGE)).get();
            raw.send(letter(own, 1, hourAgo, key, unknownSchema, Rejection.UNDECODABLE)).get();
            admin.alterConsumerGroupOffsets(own.get(LobStreamConfig.APPLICATION_ID), Map.of(tp, new OffsetAndMetadata(2))).all().get();
        }
        try (LobStore replayed = LobStore.open(dir.resolve("replay-bounded"), LobStoreConfig.defaults())) {
            PartitionReplayer.Result r = new PartitionReplayer(own).replay(0, replayed);
            assertThat(r.applied()).as("the PUT, whose letter is older than the letters read for it").isEqualTo(1);
            assertThat(r.rejected()).as("the command whose letter only a read from the start finds").isEqualTo(1);
            assertThat(replayed.current(ids.get(0))).isPresent();
            assertThat(replayed.rejection(new Source(tp.toString(), 1))).get().extracting(Rejection::kind).isEqualTo(Rejection.UNDECODABLE);
        }
    }

    /** A letter as the writer sends it, refusing the command at {@code offset} of partition 0 for {@code kind}. */
    private static ProducerRecord<byte[], byte[]> letter(LobStreamConfig own, long offset, long timestamp, byte[] key, byte[] value,
                                                        String kind) {
        ProducerRecord<byte[], byte[]> letter = new ProducerRecord<>(own.topics().deadLetters(), 0, timestamp, key, value);
        Map.of(DeadLetterTopic.ORIGIN_TOPIC, own.topics().commands(), DeadLetterTopic.ORIGIN_PARTITION, "0",
                DeadLetterTopic.ORIGIN_OFFSET, Long.toString(offset), DeadLetterTopic.KIND, kind, DeadLetterTopic.REASON, kind + ": by hand")
                .forEach((name, text) -> letter.headers().add(name, text.getBytes(StandardCharsets.UTF_8)));
        return letter;
    }

    /**
     * A replay purges its copy itself, between commands: it keeps the copy within the store's own backpressure limit
     * (here 4 versions), or each command would wait for a purge that only the waiting thread runs.
     */
    @Test
    void aReplayKeepsItsCopyWithinBackpressureAndNeverWaits() throws Exception {
        String id = idsOfPartition0("it-replay-bp-", 1).get(0);
        for (int i = 0; i < 20; i++) {
            client.put(id, bytes(100, 90 + i), null).get();
        }
        awaitValue(id, bytes(100, 109));
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        LobStoreConfig tight = new LobStoreConfig(Map.of(LobStoreConfig.HISTORY_MAX.name(), 4));
        try (LobStore replayed = LobStore.open(dir.resolve("replay-backpressure"), tight, meters, "replay-bp")) {
            new PartitionReplayer(config).replay(0, replayed);
            assertThat(meters.get("lob_backpressure_delay_seconds").timer().count()).as("writes that waited").isZero();
            try (LobReadHandle h = replayed.open(id).orElseThrow(); InputStream in = h.stream(0, h.length())) {
                assertThat(in.readAllBytes()).isEqualTo(bytes(100, 109));
            }
        }
    }

    /**
     * While the partition's last owner has a commit in flight (here a transaction with an offset
     * commit, left open) the writer group's committed offset is not stable, and a task's init
     * cannot tell whether its tablespace is current (it used to read "nothing committed", and
     * start). The question goes to the catch-up thread, which waits for the transaction to end
     * and replays up to the offset it committed; the stream thread does not wait.
     */
    @Test
    void aCommitStillInFlightIsWaitedForOnTheCatchUpThreadNotInTheTasksInit() throws Exception {
        TopicPartition tp = new TopicPartition(config.topics().commands(), 0);
        Map<String, byte[]> values = new LinkedHashMap<>();
        long end = 0;
        for (int i = 0; values.size() < 3; i++) {
            String id = "it-in-flight-" + i;
            if (Nodes.partitionOf(id, 2) == 0) {
                values.put(id, bytes(3000 + i, 70 + i));
                end = client.put(id, values.get(id), null).get().offset() + 1;
            }
        }
        String group = "it-catch-up-" + UUID.randomUUID();
        LobStreamConfig writer = config.with(LobStreamConfig.APPLICATION_ID.name(), group);
        Path copy = dir.resolve("in-flight-p0");
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        try (TablespaceCatchUp replay = new TablespaceCatchUp(writer, new WriterMetrics(meters));
             KafkaProducer<byte[], byte[]> lastOwner = commitInFlight(group, tp, end)) {
            try (LobStore store = LobStore.open(copy, LobStoreConfig.defaults())) {
                assertThat(replay.check(0, store)).isEqualTo(TablespaceCheck.Verdict.UNKNOWN);
            }
            replay.rebuildInBackground(0, () -> LobStore.open(copy, LobStoreConfig.defaults()));
            assertThatThrownBy(() -> replay.awaitRebuilt(0)).isInstanceOf(LockException.class);
            assertThat(replay.catchingUp()).as("what GET /status shows as catching_up").containsExactly(0);
            lastOwner.commitTransaction();
            await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(100))
                    .untilAsserted(() -> assertThatCode(() -> replay.awaitRebuilt(0)).doesNotThrowAnyException());
            assertThat(replay.catchingUp()).isEmpty();
            try (LobStore store = LobStore.open(copy, LobStoreConfig.defaults())) {
                assertThat(store.appliedOffset(tp.topic() + "-0")).isEqualTo(end - 1);
                assertThat(replay.check(0, store)).isEqualTo(TablespaceCheck.Verdict.CURRENT);
                for (Map.Entry<String, byte[]> v : values.entrySet()) {
                    try (LobReadHandle h = store.open(v.getKey()).orElseThrow(); InputStream in = h.stream(0, h.length())) {
                        assertThat(in.readAllBytes()).as(v.getKey()).isEqualTo(v.getValue());
                    }
                }
            }
            assertThat(meters.get("lob_rebuilds_completed").counter().count()).isEqualTo(1);
        }
    }

    /**
     * A closing node stops a catch-up that waits for a stable committed offset: it wakes the catch-up's consumer, not its
     * thread (an interrupt that reaches a thread writing or syncing a page file closes the file for every thread). The
     * catch-up ends, its tablespace closed, before close returns; not counted as a failure.
     */
    @Test
    void aCatchUpStillWaitingForACommitEndsWhenTheWriterCloses() throws Exception {
        TopicPartition tp = new TopicPartition(config.topics().commands(), 0);
        String group = "it-catch-up-closed-" + UUID.randomUUID();
        Path copy = dir.resolve("in-flight-closed-p0");
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        try (KafkaProducer<byte[], byte[]> lastOwner = commitInFlight(group, tp, 1);
             TablespaceCatchUp replay = new TablespaceCatchUp(config.with(LobStreamConfig.APPLICATION_ID.name(), group),
                     new WriterMetrics(meters))) {
            replay.rebuildInBackground(0, () -> LobStore.open(copy, LobStoreConfig.defaults()));
            assertThat(replay.catchingUp()).containsExactly(0);
            await().atMost(Duration.ofSeconds(30)).until(() -> Thread.getAllStackTraces().entrySet().stream().anyMatch(t ->
                    t.getKey().getName().equals("lob-rebuild-0")
                            && Arrays.stream(t.getValue()).anyMatch(f -> f.getMethodName().equals("awaitStableCommittedOffset"))));
            replay.close();
            assertThat(replay.catchingUp()).isEmpty();
            assertThat(meters.find("lob_rebuild_failures").counter()).isNull();
            try (LobStore store = LobStore.open(copy, LobStoreConfig.defaults())) { // its lock released: the catch-up ended
                assertThat(store.appliedOffset(tp.toString())).isEqualTo(-1);
            }
            lastOwner.abortTransaction();
        }
    }

    /**
     * A producer that committed, in a transaction left open, {@code offset} of {@code tp} for {@code group}, an empty group
     * until then: the writer group's committed offset is not stable until the transaction ends.
     */
    private static KafkaProducer<byte[], byte[]> commitInFlight(String group, TopicPartition tp, long offset) throws Exception {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap()))) {
            admin.alterConsumerGroupOffsets(group, Map.of(tp, new OffsetAndMetadata(0))).all().get(); // an empty group
        }
        KafkaProducer<byte[], byte[]> lastOwner = new KafkaProducer<>(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap(),
                ProducerConfig.TRANSACTIONAL_ID_CONFIG, group + "-last-owner"), new ByteArraySerializer(), new ByteArraySerializer());
        // the group's metadata as a member that has not joined yet has it (generation -1)
        try (KafkaConsumer<byte[], byte[]> ofGroup = new KafkaConsumer<>(Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap(),
                ConsumerConfig.GROUP_ID_CONFIG, group), new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            lastOwner.initTransactions();
            lastOwner.beginTransaction();
            lastOwner.sendOffsetsToTransaction(Map.of(tp, new OffsetAndMetadata(offset)), ofGroup.groupMetadata());
        } catch (RuntimeException e) {
            lastOwner.close();
            throw e;
        }
        return lastOwner;
    }

    static double skipped(String reason) {
        var c = node.meters().find("lob_commands_skipped").tag("reason", reason).counter();
        return c == null ? 0 : c.count();
    }

    static LobCommand.Builder put(String id, byte[] data) {
        java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
        crc.update(data);
        return LobCommand.newBuilder().setCommandId(UUID.randomUUID().toString()).setLobId(id).setOp(LobOp.PUT)
                .setTotalLength(data.length).setCrc32c((int) crc.getValue()).setData(ByteBuffer.wrap(data)).setMetadata(Map.of())
                .setProducedAt(Instant.now());
    }

    /**
     * Schemas evolve compatibly (BACKWARD_TRANSITIVE, the registry's global rule): a producer whose LobCommand
     * schema could not read what was written before is refused at its first send, so nothing it
     * writes reaches the topic. A compatible change (a new op symbol, above) is accepted.
     */
    @Test
    void aBreakingSchemaChangeIsRefusedByTheRegistry() throws Exception {
        client.put("it-schema", bytes(10, 1), null).get(); // the artifact exists
        HttpResponse<String> rule = http.send(HttpRequest.newBuilder(URI.create(config.get(LobStreamConfig.REGISTRY_URL)
                + "/admin/rules/COMPATIBILITY")).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(rule.body()).contains("\"BACKWARD_TRANSITIVE\"");
        // each step compatible with the one before, the last not with the first: BACKWARD let it by, and a replay of a
        // command of the first version would have found it unreadable
        String ccompat = config.get(LobStreamConfig.REGISTRY_URL).replace("/apis/registry/v2", "/apis/ccompat/v7");
        String record = "{\"type\":\"record\",\"name\":\"Steps\",\"fields\":[%s]}";
        registerThroughConfluentApi(ccompat, "it-transitive-value", record.formatted("{\"name\":\"a\",\"type\":\"int\"}"));
        registerThroughConfluentApi(ccompat, "it-transitive-value", record.formatted(""));
        HttpResponse<String> third = http.send(HttpRequest.newBuilder(URI.create(ccompat + "/subjects/it-transitive-value/versions"))
                .header("Content-Type", "application/vnd.schemaregistry.v1+json")
                .POST(HttpRequest.BodyPublishers.ofString(new ObjectMapper().writeValueAsString(Map.of("schema",
                        record.formatted("{\"name\":\"a\",\"type\":\"string\",\"default\":\"\"}"))))).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(third.statusCode()).as(third.body()).isEqualTo(409);

        // a new field without a default: this schema cannot read the commands written so far
        String json = LobCommand.getClassSchema().toString().replaceFirst("\"fields\":\\[",
                "\"fields\":[{\"name\":\"tenant\",\"type\":\"string\"},");
        Schema breaking = new Schema.Parser().parse(json);
        GenericRecord r = new GenericData.Record(breaking);
        LobCommand valid = put("it-schema", bytes(5, 2)).build();
        for (Schema.Field f : LobCommand.getClassSchema().getFields()) {
            Object v = valid.get(f.name());
            r.put(f.name(), v instanceof LobOp op ? new GenericData.EnumSymbol(breaking.getField("op").schema(), op.name())
                    : v instanceof Instant t ? t.toEpochMilli() : v);
        }
        r.put("tenant", "t1");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> avro.send(new ProducerRecord<>(config.topics().commands(), "it-schema", r)).get())
                .hasStackTraceContaining("Incompatible artifact: lob.commands-value");
    }

    /**
     * A producer in another language, with none of LobStream's code: it registers the schema through the registry's
     * Confluent-compatible API (what Confluent's serializers and librdkafka-based clients speak), frames the value by
     * hand (byte 0, the id that API returned, the Avro binary) and sends bytes. Apicurio answers that API with content
     * ids, which is what the node's deserializer reads; one content under two subjects first makes global and content
     * ids differ, so a producer framing the wrong one would be dead-lettered, not pass by chance.
     */
    @Test
    void aProducerInAnotherLanguageRegistersThroughTheConfluentApiAndIsApplied() throws Exception {
        String registry = config.get(LobStreamConfig.REGISTRY_URL);
        String ccompat = registry.replace("/apis/registry/v2", "/apis/ccompat/v7");
        registerThroughConfluentApi(ccompat, "it-foreign-a-value", ReclaimRecord.getClassSchema().toString());
        registerThroughConfluentApi(ccompat, "it-foreign-b-value", ReclaimRecord.getClassSchema().toString());
        // the subject's latest schema (another test may have added an op symbol: BACKWARD would refuse a schema without
        // it), with a property of its own: new content, so a new version and ids
        String subject = config.topics().commands() + "-value";
        Schema schema = new Schema.Parser().parse(latestCommandSchema(ccompat).toString()
                .replaceFirst("\\{", "{\"producer\":\"it-foreign\","));
        int id = registerThroughConfluentApi(ccompat, subject, schema.toString());
        JsonNode meta = new ObjectMapper().readTree(http.send(HttpRequest.newBuilder(URI.create(registry + "/groups/default/artifacts/"
                + subject + "/meta")).build(), HttpResponse.BodyHandlers.ofString()).body());
        assertThat(meta.get("contentId").asInt()).as("the Confluent API's id").isEqualTo(id);
        assertThat(meta.get("globalId").asInt()).as("ids that differ, so the test tells them apart").isNotEqualTo(id);

        byte[] value = bytes(3000, 21);
        try (KafkaProducer<byte[], byte[]> plain = new KafkaProducer<>(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap(),
                ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true, ProducerConfig.ACKS_CONFIG, "all"),
                new ByteArraySerializer(), new ByteArraySerializer())) {
            plain.send(new ProducerRecord<>(config.topics().commands(), "it-foreign".getBytes(StandardCharsets.UTF_8),
                    framedPut(schema, id, "it-foreign", value))).get();
        }
        awaitValue("it-foreign", value);
        HttpResponse<Void> head = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + node.httpPort() + "/lobs/it-foreign"))
                .method("HEAD", HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.discarding());
        assertThat(head.headers().firstValue("Content-Type")).hasValue("application/x-foreign");
    }

    /**
     * A newer producer registered a version of the commands' schema with a field more (with a default: compatible). A
     * LobClient that does not register its schema (as production registries often require) is given the latest
     * version's id: it refuses to frame its bytes with it (the writer would read them with the wrong schema), and
     * sends them once told the version of its own schema.
     */
    @Test
    void aClientThatDoesNotRegisterNeverFramesItsBytesWithAnotherSchemasId() throws Exception {
        client.put("it-own-schema", new byte[1], null).get(60, TimeUnit.SECONDS); // registers this client's schema, if no test has
        String own = new ObjectMapper().readTree(http.send(HttpRequest.newBuilder(URI.create(config.get(LobStreamConfig.REGISTRY_URL)
                + "/groups/default/artifacts/" + config.topics().commands() + "-value/meta?canonical=true"))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(LobCommand.getClassSchema().toString())).build(),
                HttpResponse.BodyHandlers.ofString()).body()).get("version").asText();
        String ccompat = config.get(LobStreamConfig.REGISTRY_URL).replace("/apis/registry/v2", "/apis/ccompat/v7");
        String subject = config.topics().commands() + "-value";
        Schema newer = withIntField(latestCommandSchema(ccompat), "priority");
        registerThroughConfluentApi(ccompat, subject, newer.toString());
        byte[] value = bytes(2000, 22);
        LobStreamConfig registered = config.with("apicurio.registry.auto-register", "false");
        try (LobClient unpinned = new LobClient(registered)) {
            assertThat(unpinned.put("it-own-schema", value, "application/x-own")).failsWithin(Duration.ofSeconds(60))
                    .withThrowableOfType(java.util.concurrent.ExecutionException.class)
                    .withMessageContaining("is not io.lobstream.avro.LobCommand's as this client knows it");
        }
        try (LobClient pinned = new LobClient(registered.with("apicurio.registry.artifact.version", own))) {
            pinned.put("it-own-schema", value, "application/x-own").get(60, TimeUnit.SECONDS);
        }
        awaitValue("it-own-schema", value);
    }

    /**
     * More dead letters of one client's writes than its tracker keeps, read in one round: each write is still told it
     * was dead-lettered. (Trimmed while it read, the tracker let go of the first ones before it looked, and the writes,
     * their partition committed past them, were reported applied.)
     */
    @Test
    void everyWriteIsToldItWasDeadLetteredThoughMoreCameThanTheClientKeeps() throws Exception {
        try (LobClient small = ClientHooks.keepingDeadLetters(new LobClient(config), 3)) {
            List<LobWrite> writes = new ArrayList<>();
            List<CompletableFuture<String>> completedOn = new ArrayList<>();
            for (int i = 0; i < 12; i++) {
                LobWrite w = small.truncate("it-missing-" + i, 0); // no such LOB: dead-lettered as not-found
                // chained before Kafka acknowledges, so it runs where the write completes
                completedOn.add(w.thenApply(md -> Thread.currentThread().getName()));
                writes.add(w);
            }
            for (CompletableFuture<String> thread : completedOn) {
                // on the client's threads: a stage chained here may send or block without stalling the producer
                assertThat(thread.get(60, TimeUnit.SECONDS)).doesNotStartWith("kafka-producer-network-thread");
            }
            // every letter there before the first applied(): the tracker reads them all in one round, not one per write
            Nodes.committedRecords(cluster, config.topics().deadLetters(), Duration.ofSeconds(60), seen -> seen.stream()
                    .filter(r -> r.key() != null && new String(r.key(), StandardCharsets.UTF_8).startsWith("it-missing-")).count() >= 12);
            for (LobWrite w : writes) {
                WriteOutcome outcome = w.applied(Duration.ofSeconds(60)).get();
                assertThat(outcome.deadLetter()).as(w.lobId()).hasValueSatisfying(d -> assertThat(d.kind()).isEqualTo("not-found"));
            }
        }
    }

    /** A command dead-lettered (a truncate of a LOB not yet there), sent back once the LOB exists, is applied. */
    @Test
    void aDeadLetterSentBackOnceItsCauseIsGoneIsApplied() throws Exception {
        String id = "it-redrive";
        assertThat(client.truncate(id, 3).applied(Duration.ofSeconds(60)).get().deadLetter())
                .hasValueSatisfying(d -> assertThat(d.kind()).isEqualTo("not-found"));
        byte[] value = bytes(10, 31);
        assertThat(client.put(id, value, null).applied(Duration.ofSeconds(60)).get().applied()).isTrue();
        int p = Nodes.partitionOf(id, 2);
        long letter = Nodes.committedRecords(cluster, config.topics().deadLetters(), Duration.ofSeconds(60),
                        seen -> seen.stream().anyMatch(r -> r.key() != null && id.equals(new String(r.key(), StandardCharsets.UTF_8))))
                .stream().filter(r -> r.key() != null && id.equals(new String(r.key(), StandardCharsets.UTF_8))).findFirst().orElseThrow().offset();
        long commandsEnd = Nodes.endOffset(cluster, config.topics().commands(), p);
        assertThat(DeadLetterRedrive.run(config, Set.of(p), letter, kind -> true, false, true).redriven()).as("a dry run").isEqualTo(1);
        // a partition the topic lacks was left out without a word: the caller was told every letter asked for was sent
        assertThatThrownBy(() -> DeadLetterRedrive.run(config, Set.of(p, 2), letter, kind -> true, false, true))
                .isInstanceOf(DeadLetterRedrive.NoSuchPartitionException.class).hasMessage("partition [2]: " + config.topics().deadLetters()
                        + " has 2 partitions (0..1)");
        // a truncate to 3 sent twice leaves what one does: only the log tells that the dry run sent nothing
        assertThat(Nodes.endOffset(cluster, config.topics().commands(), p)).as("sent by the dry run").isEqualTo(commandsEnd);
        assertThat(DeadLetterRedrive.run(config, Set.of(p), letter, "not-found"::equals, false, false).redriven()).isEqualTo(1);
        awaitValue(id, Arrays.copyOf(value, 3));
    }

    /**
     * A command too large for its letter to carry (1 MB of bytes that are no Avro) is dead-lettered without its value;
     * redrive fetches it from lob.commands, where it is the letter's key and length, and sends it back.
     */
    @Test
    void aLetterSentWithoutItsValueIsSentBackWithTheCommandItNames() throws Exception {
        String id = "it-redrive-large";
        int p = Nodes.partitionOf(id, 2);
        try (KafkaProducer<byte[], byte[]> raw = new KafkaProducer<>(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap()),
                new ByteArraySerializer(), new ByteArraySerializer())) {
            raw.send(new ProducerRecord<>(config.topics().commands(), id.getBytes(StandardCharsets.UTF_8), new byte[1_000_100])).get();
        }
        Predicate<ConsumerRecord<byte[], byte[]>> ours = r -> r.key() != null && id.equals(new String(r.key(), StandardCharsets.UTF_8));
        ConsumerRecord<byte[], byte[]> letter = Nodes.committedRecords(cluster, config.topics().deadLetters(), Duration.ofSeconds(60),
                seen -> seen.stream().anyMatch(ours)).stream().filter(ours).findFirst().orElseThrow();
        assertThat(letter.value()).isNull();
        assertThat(Nodes.header(letter, DeadLetterTopic.VALUE_DROPPED)).isEqualTo("1000100");

        DeadLetterRedrive.Result r = DeadLetterRedrive.run(config, Set.of(p), letter.offset(), Rejection.UNDECODABLE::equals, false, false);
        assertThat(r.redriven()).isEqualTo(1);
        assertThat(r.commandGone()).isZero();
        // sent back whole, and dead-lettered again (still no Avro): a second letter of the same length
        assertThat(Nodes.committedRecords(cluster, config.topics().deadLetters(), Duration.ofSeconds(60),
                seen -> seen.stream().filter(ours).count() >= 2).stream().filter(ours).skip(1).findFirst().orElseThrow())
                .satisfies(again -> assertThat(Nodes.header(again, DeadLetterTopic.VALUE_DROPPED)).isEqualTo("1000100"));
    }

    /**
     * A command the writer could not decode (its schema not registered yet) is dead-lettered; the schema is registered,
     * the LOB put again, and the letter sent back: the writer applies it last. A replay decodes it at its first offset
     * now, and must refuse it there by its letter as the writer did, or it applies the two PUTs the other way round.
     */
    @Test
    void aReplayRefusesWhereTheWriterDidACommandThatDecodesOnlyNow() throws Exception {
        String id = "it-late-schema";
        int p = Nodes.partitionOf(id, 2);
        client.put(id + "-first", new byte[1], null).get(60, TimeUnit.SECONDS); // the commands' schema registered, if no test has
        String ccompat = config.get(LobStreamConfig.REGISTRY_URL).replace("/apis/registry/v2", "/apis/ccompat/v7");
        String unique = UUID.randomUUID().toString().replace("-", "");
        Schema probe = withIntField(ReclaimRecord.getClassSchema(), "probe_" + unique);
        int next = registerThroughConfluentApi(ccompat, "it-late-probe-value", probe.toString()) + 1; // the next new content's id
        Schema schema = withIntField(latestCommandSchema(ccompat), "late_" + unique);
        byte[] first = bytes(40, 81);
        try (KafkaProducer<byte[], byte[]> plain = new KafkaProducer<>(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap(),
                ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true, ProducerConfig.ACKS_CONFIG, "all"),
                new ByteArraySerializer(), new ByteArraySerializer())) {
            plain.send(new ProducerRecord<>(config.topics().commands(), id.getBytes(StandardCharsets.UTF_8), framedPut(schema, next, id, first)))
                    .get();
        }
        long letter = Nodes.committedRecords(cluster, config.topics().deadLetters(), Duration.ofSeconds(60),
                        seen -> seen.stream().anyMatch(r -> r.key() != null && id.equals(new String(r.key(), StandardCharsets.UTF_8))))
                .stream().filter(r -> r.key() != null && id.equals(new String(r.key(), StandardCharsets.UTF_8))).findFirst().orElseThrow().offset();
        assertThat(registerThroughConfluentApi(ccompat, config.topics().commands() + "-value", schema.toString()))
                .as("the id the command named").isEqualTo(next);
        byte[] second = bytes(50, 82);
        assertThat(client.put(id, second, null).applied(Duration.ofSeconds(60)).get().applied()).isTrue();
        assertThat(DeadLetterRedrive.run(config, Set.of(p), letter, Rejection.UNDECODABLE::equals, false, false).redriven()).isEqualTo(1);
        awaitValue(id, first);

        try (LobStore replayed = LobStore.open(dir.resolve("replay-late-schema"), LobStoreConfig.defaults())) {
            new PartitionReplayer(config).replay(p, replayed);
            try (LobReadHandle h = replayed.open(id).orElseThrow(); InputStream in = h.stream(0, h.length())) {
                assertThat(in.readAllBytes()).as("the value the writer holds").isEqualTo(first);
            }
        }
    }

    /**
     * Purge lag on a partition the purge group never committed on counts from the log's start, not offset 0, and on one
     * it committed on below the log's start, from there: after retention (here deleteRecords) trimmed it, the records it
     * deleted are no lag.
     */
    @Test
    void purgeLagOfAGroupThatNeverCommittedCountsFromTheLogStart() throws Exception {
        LobStreamConfig lag = config.with(LobStreamConfig.TOPIC_PREFIX.name(), "lag.")
                .with(LobStreamConfig.PURGE_GROUP.name(), "it-lag-" + UUID.randomUUID())
                .with(LobStreamConfig.UNDO_RESEND_INTERVAL_MS.name(), 200);
        TopicPartition undo0 = new TopicPartition(lag.topics().undoHistory(), 0);
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap()))) {
            int partitions = TopicSetup.ensureTopics(admin, lag);
            try (KafkaProducer<byte[], byte[]> plain = new KafkaProducer<>(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap()),
                    new ByteArraySerializer(), new ByteArraySerializer())) {
                for (int i = 0; i < 10; i++) {
                    plain.send(new ProducerRecord<>(undo0.topic(), 0, null, new byte[1])).get();
                }
            }
            admin.deleteRecords(Map.of(undo0, RecordsToDelete.beforeOffset(6))).all().get();
            SimpleMeterRegistry meters = new SimpleMeterRegistry();
            try (AdminPurgeProgress progress = new AdminPurgeProgress(lag, partitions, meters)) {
                await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> assertThat(meters.get("lob_purge_lag_records")
                        .tag("partition", "0").gauge().value()).isEqualTo(4.0));
            }
            // what `lobstream status` shows, read the same way
            assertThat(PurgeLag.read(admin, undo0.topic(), partitions, Map.of(), 5_000)).containsEntry(0, 4L);
            assertThat(PurgeLag.read(admin, undo0.topic(), partitions, Map.of(undo0, new OffsetAndMetadata(2)), 5_000))
                    .as("a committed offset that retention passed: the records deleted are no lag either").containsEntry(0, 4L);
        }
    }

    /** The commands subject's latest schema (other tests add op symbols and fields: BACKWARD refuses a schema without them). */
    static Schema latestCommandSchema(String ccompat) throws Exception {
        return new Schema.Parser().parse(new ObjectMapper().readTree(http.send(HttpRequest.newBuilder(URI.create(ccompat + "/subjects/"
                + config.topics().commands() + "-value/versions/latest")).build(), HttpResponse.BodyHandlers.ofString()).body())
                .get("schema").asText());
    }

    /** {@code schema} with an int field more, default 0 (compatible): new content to the registry, which ignores properties. */
    static Schema withIntField(Schema schema, String name) {
        List<Schema.Field> fields = new ArrayList<>();
        schema.getFields().forEach(f -> fields.add(new Schema.Field(f, f.schema())));
        fields.add(new Schema.Field(name, Schema.create(Schema.Type.INT), null, 0));
        return Schema.createRecord(schema.getName(), schema.getDoc(), schema.getNamespace(), false, fields);
    }

    /** A PUT of {@code value} to {@code lobId} as a producer in another language frames it: byte 0, {@code schemaId}, Avro binary. */
    static byte[] framedPut(Schema schema, int schemaId, String lobId, byte[] value) throws IOException {
        CRC32C crc = new CRC32C();
        crc.update(value);
        GenericRecord command = new GenericData.Record(schema);
        for (Schema.Field f : schema.getFields()) { // fields another test added, with their defaults
            if (f.hasDefaultValue()) {
                command.put(f.name(), GenericData.get().getDefaultValue(f));
            }
        }
        command.put("commandId", UUID.randomUUID().toString());
        command.put("lobId", lobId);
        command.put("op", new GenericData.EnumSymbol(schema.getField("op").schema(), "PUT"));
        command.put("uploadId", null);
        command.put("chunkIndex", 0);
        command.put("chunkCount", 1);
        command.put("offset", 0L);
        command.put("totalLength", (long) value.length);
        command.put("crc32c", (int) crc.getValue());
        command.put("data", ByteBuffer.wrap(value));
        command.put("contentType", "application/x-foreign");
        command.put("metadata", Map.of("from", "elsewhere"));
        command.put("producedAt", System.currentTimeMillis());
        ByteArrayOutputStream frame = new ByteArrayOutputStream();
        frame.write(0);
        frame.writeBytes(ByteBuffer.allocate(4).putInt(schemaId).array());
        BinaryEncoder encoder = EncoderFactory.get().binaryEncoder(frame, null);
        new GenericDatumWriter<GenericRecord>(schema).write(command, encoder);
        encoder.flush();
        return frame.toByteArray();
    }

    /** Registers {@code schema} under {@code subject} as a Confluent client does; returns the id it answers. */
    static int registerThroughConfluentApi(String ccompat, String subject, String schema) throws Exception {
        ObjectMapper json = new ObjectMapper();
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(ccompat + "/subjects/" + subject + "/versions"))
                .header("Content-Type", "application/vnd.schemaregistry.v1+json")
                .POST(HttpRequest.BodyPublishers.ofString(json.writeValueAsString(Map.of("schema", schema)))).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        return json.readTree(r.body()).get("id").asInt();
    }

    /** A command written with a newer schema whose op enum has a symbol this writer does not know. */
    static GenericRecord unknownOp(String id) {
        String json = LobCommand.getClassSchema().toString().replace("\"ABORT\"]", "\"ABORT\",\"COPY\"]");
        Schema newer = new Schema.Parser().parse(json);
        GenericRecord r = new GenericData.Record(newer);
        for (Schema.Field f : newer.getFields()) {
            if (f.hasDefaultValue()) {
                r.put(f.name(), GenericData.get().getDefaultValue(f));
            }
        }
        r.put("commandId", UUID.randomUUID().toString());
        r.put("lobId", id);
        r.put("op", new GenericData.EnumSymbol(newer.getField("op").schema(), "COPY"));
        r.put("producedAt", Instant.now().toEpochMilli());
        return r;
    }

    static double uploadsExpired() {
        var counter = node.meters().find("lob_uploads_expired").counter();
        return counter == null ? 0 : counter.count();
    }

    /** (kind, reason) of every dead letter so far, once at least {@code atLeast} are there. */
    static List<Map.Entry<String, String>> deadLetterList(int atLeast) {
        return Nodes.committedRecords(cluster, config.topics().deadLetters(), Duration.ofSeconds(60), seen -> seen.size() >= atLeast).stream()
                .map(r -> Map.entry(Nodes.header(r, DeadLetterTopic.KIND), Nodes.header(r, DeadLetterTopic.REASON)))
                .toList();
    }
}
