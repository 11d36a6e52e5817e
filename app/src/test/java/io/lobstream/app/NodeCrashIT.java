package io.lobstream.app;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.lobstream.app.embedded.EmbeddedCluster;
import io.lobstream.avro.LobCommand;
import io.lobstream.avro.LobOp;
import io.lobstream.client.LobClient;
import io.lobstream.schema.LobSerdes;
import io.lobstream.schema.LobStreamConfig;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
import java.util.zip.CRC32C;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A writer node, as its own process, is killed with SIGKILL while commands of every kind keep
 * coming (PUTs, some in chunks; APPEND, WRITE, TRUNCATE, DELETE), several times. After each
 * restart on the same data directory everything Kafka acknowledged is applied exactly once:
 * every LOB ends with the value its acknowledged commands make, which an APPEND applied twice or
 * a lost WRITE would change; fsck is clean, and history drains to 0 (no undo record was lost).
 */
class NodeCrashIT {
    @TempDir
    static Path dir;

    static EmbeddedCluster cluster;
    static LobStreamConfig config;
    static final HttpClient http = HttpClient.newHttpClient();
    static final ObjectMapper json = new ObjectMapper();
    static int httpPort;
    static Process node;

    @BeforeAll
    static void start() throws Exception {
        cluster = EmbeddedCluster.start(dir.resolve("cluster"), 0, 0, 0);
        config = new LobStreamConfig(Map.of(
                LobStreamConfig.BOOTSTRAP.name(), cluster.bootstrap(),
                LobStreamConfig.REGISTRY_URL.name(), cluster.registryUrl(),
                LobStreamConfig.PARTITIONS.name(), 4));
        try (ServerSocket s = new ServerSocket(0)) {
            httpPort = s.getLocalPort();
        }
    }

    @AfterAll
    static void stop() throws Exception {
        if (node != null) {
            node.destroyForcibly().waitFor();
        }
        if (cluster != null) {
            cluster.close();
        }
    }

    /** The child node's jdk.httpserver.maxConnections. */
    static final int CONNECTIONS = 16;

    static Process startNode() throws Exception {
        String java = ProcessHandle.current().info().command().orElse("java");
        // its own java.io.tmpdir: RocksDB unpacks its native library there and a SIGKILLed JVM cannot delete it
        Path tmp = dir.resolve("node-tmp");
        tmp.toFile().mkdirs();
        // a connection limit far under the default 1,024, for the test of the answers cut short to reach it
        return new ProcessBuilder(java, "-Xmx384m", "-Djava.io.tmpdir=" + tmp, "-Djdk.httpserver.maxConnections=" + CONNECTIONS,
                "-cp", System.getProperty("java.class.path"),
                "io.lobstream.app.cli.LobStreamCli", "node", "--bootstrap", cluster.bootstrap(), "--registry", cluster.registryUrl(),
                "--data-dir", dir.resolve("node").toString(), "--http-port", Integer.toString(httpPort), "--purge-workers", "1",
                "--node-id", "crash-node", "-c", "lob.topic.partitions=4", "-c", "lob.writer.session.timeout.ms=6000")
                .redirectOutput(dir.resolve("node.log").toFile())
                .redirectErrorStream(true)
                .start();
    }

    static JsonNode status() throws Exception {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + httpPort + "/status")).build(),
                HttpResponse.BodyHandlers.ofString());
        return json.readTree(r.body());
    }

    /** Waits until the tablespace of {@code partition} has applied lob.commands up to {@code offset}. */
    static void awaitApplied(int partition, long offset) {
        await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(100)).ignoreExceptions().until(() -> {
            for (JsonNode p : status().path("partitions")) {
                if (p.path("partition").asInt() == partition) {
                    return p.path("applied_offset").asLong(-1) >= offset;
                }
            }
            return false;
        });
    }

    /** A chunked PUT sent as LobClient sends one, but in two steps: all chunks but the last, then the last. */
    static final class HeldUpload {
        static final int CHUNK = 512 * 1024;
        final String id;
        final byte[] value;
        private final int chunks;
        private final String uploadId = UUID.randomUUID().toString();

        HeldUpload(String id, int chunks) {
            this.id = id;
            this.chunks = chunks;
            this.value = new byte[chunks * CHUNK];
            new Random(42).nextBytes(value);
        }

        /** Sends every chunk but the last, and waits until the node has applied them. */
        void sendAllButLast() throws Exception {
            RecordMetadata last = null;
            for (int i = 0; i < chunks - 1; i++) {
                last = send(i);
            }
            awaitApplied(last.partition(), last.offset());
        }

        void sendLast() throws Exception {
            send(chunks - 1);
        }

        private RecordMetadata send(int i) throws Exception {
            LobCommand.Builder chunk = LobCommand.newBuilder().setCommandId(UUID.randomUUID().toString()).setLobId(id)
                    .setOp(LobOp.PUT).setUploadId(uploadId).setChunkIndex(i).setChunkCount(chunks).setOffset((long) i * CHUNK)
                    .setTotalLength(value.length).setData(ByteBuffer.wrap(value, i * CHUNK, CHUNK)).setMetadata(Map.of())
                    .setProducedAt(Instant.now());
            if (i == chunks - 1) { // the whole value's CRC32C, with the chunk that publishes it
                CRC32C crc = new CRC32C();
                crc.update(value);
                chunk.setCrc32c((int) crc.getValue());
            }
            try (KafkaProducer<String, Object> avro = new KafkaProducer<>(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
                    cluster.bootstrap()), new StringSerializer(), LobSerdes.valueSerializer(config))) {
                return avro.send(new ProducerRecord<>(config.topics().commands(), id, chunk.build())).get();
            }
        }
    }

    static void awaitRunning() {
        await().atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(200)).ignoreExceptions()
                .until(() -> status().path("state").asText().equals("RUNNING"));
    }

    static String sha(byte[] b) throws Exception {
        return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(b));
    }

    static String nodeSha(String id) throws Exception {
        HttpResponse<InputStream> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + httpPort + "/lobs/" + id)).build(),
                HttpResponse.BodyHandlers.ofInputStream());
        try (InputStream in = r.body()) {
            return r.statusCode() == 200 ? sha(in.readAllBytes()) : "HTTP " + r.statusCode();
        }
    }

    /**
     * One producer thread's ids and what each holds once Kafka acknowledged the last command sent
     * for it (null: deleted or never written). Each thread waits for every acknowledgement before
     * its next command, so for the ids it owns this is exactly what the node must end with.
     */
    static final class Model {
        final Map<String, byte[]> values = new ConcurrentHashMap<>();
        final Map<String, Integer> acknowledged = new ConcurrentHashMap<>(); // by kind, for the log

        private void acked(String kind) {
            acknowledged.merge(kind, 1, Integer::sum);
        }

        /**
         * Sends one command for {@code id}: a whole PUT (sometimes of several chunks) when it has no
         * value, else any kind. APPEND, WRITE and TRUNCATE are not idempotent, so a command applied
         * twice after a kill, or not at all, shows in the value the node ends with.
         */
        void next(LobClient client, Random random, String id) throws Exception {
            byte[] v = values.get(id);
            int kind = v == null ? 0 : random.nextInt(10);
            if (kind < 4 || v.length > 3_000_000) { // PUT
                byte[] n = new byte[random.nextInt(5) == 0 ? 1_300_000 + random.nextInt(400_000) : random.nextInt(60_000)];
                random.nextBytes(n);
                client.put(id, new ByteArrayInputStream(n), n.length, null, LobClient.Progress.NONE).get();
                values.put(id, n);
                acked("put");
            } else if (kind < 6) { // APPEND, one command (under the chunk size)
                byte[] more = new byte[1 + random.nextInt(40_000)];
                random.nextBytes(more);
                client.append(id, new ByteArrayInputStream(more), more.length, LobClient.Progress.NONE).get();
                byte[] n = Arrays.copyOf(v, v.length + more.length);
                System.arraycopy(more, 0, n, v.length, more.length);
                values.put(id, n);
                acked("append");
            } else if (kind < 8) { // WRITE from inside the value, sometimes past its end
                int at = random.nextInt(v.length + 1);
                byte[] data = new byte[1 + random.nextInt(30_000)];
                random.nextBytes(data);
                client.write(id, at, new ByteArrayInputStream(data), data.length, LobClient.Progress.NONE).get();
                byte[] n = Arrays.copyOf(v, Math.max(v.length, at + data.length));
                System.arraycopy(data, 0, n, at, data.length);
                values.put(id, n);
                acked("write");
            } else if (kind < 9) { // TRUNCATE
                int to = random.nextInt(v.length + 1);
                client.truncate(id, to).get();
                values.put(id, Arrays.copyOf(v, to));
                acked("truncate");
            } else { // DELETE
                client.delete(id).get();
                values.remove(id);
                acked("delete");
            }
        }
    }

    @Test
    void acknowledgedWritesSurviveSigkillsOfTheNode() throws Exception {
        if (node != null) { // another test's, on the same port and data directory
            node.destroyForcibly().waitFor();
        }
        node = startNode();
        awaitRunning();
        Map<String, Boolean> touched = new ConcurrentHashMap<>();
        Model model = new Model();
        AtomicBoolean stop = new AtomicBoolean();
        List<Throwable> failures = new ArrayList<>();
        List<Thread> producers = new ArrayList<>();
        for (int t = 0; t < 2; t++) {
            int thread = t;
            producers.add(new Thread(() -> {
                Random random = new Random(thread);
                try (LobClient client = new LobClient(config)) {
                    while (!stop.get()) {
                        // each thread owns its ids, so "last acknowledged" is well defined per id
                        String id = "crash-" + thread + "-" + random.nextInt(10);
                        touched.put(id, true);
                        model.next(client, random, id);
                    }
                } catch (Throwable e) {
                    synchronized (failures) {
                        failures.add(e);
                    }
                }
            }, "producer-" + t));
        }
        producers.forEach(Thread::start);
        long seed = ThreadLocalRandom.current().nextLong();
        Random when = new Random(seed);
        // An upload held open across the first kill, whatever the timing: two of its three chunks applied before it, the
        // last sent after the restart. (The producers' own chunked puts finish within milliseconds.)
        HeldUpload held = new HeldUpload("crash-held", 3);
        for (int kill = 0; kill < 3; kill++) {
            long after = 1500 + when.nextInt(2500);
            System.out.printf("NodeCrashIT: kill %d after %d ms (seed %d)%n", kill + 1, after, seed);
            Thread.sleep(after);
            if (kill == 0) {
                held.sendAllButLast();
                assertThat(status().path("totals").path("pages_uploading").asLong()).as("an upload in progress").isPositive();
            }
            node.destroyForcibly().waitFor(); // SIGKILL: mid-upload, mid-commit, wherever it is
            node = startNode();
            awaitRunning();
            if (kill == 0) {
                held.sendLast();
            }
        }
        Thread.sleep(2000);
        stop.set(true);
        for (Thread p : producers) {
            p.join(60_000);
            // one still in a write would change the model while the checks below read it
            assertThat(p.isAlive()).as(p.getName() + " ended").isFalse();
        }
        synchronized (failures) {
            assertThat(failures).isEmpty();
        }
        System.out.println("NodeCrashIT: commands acknowledged " + new java.util.TreeMap<>(model.acknowledged));
        assertThat(model.acknowledged).containsKeys("put", "append", "write");
        await().atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(500)).untilAsserted(() -> {
            for (String id : touched.keySet()) {
                byte[] v = model.values.get(id);
                assertThat(nodeSha(id)).as(id).isEqualTo(v == null ? "HTTP 404" : sha(v));
            }
            assertThat(nodeSha(held.id)).as("the upload the first kill interrupted").isEqualTo(sha(held.value));
        });
        await().atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(500))
                .until(() -> status().path("totals").path("history_length").asLong(-1) == 0);
        // fsck counts an upload's pages as accounted for: one a kill left behind, its value published, would hold them
        // until lob.upload.timeout.ms (10 minutes, past the wait). Every upload was finished here, every replaced version
        // purged, and their pages are freed as the reclaims are applied, after history_length fell to 0.
        AtomicReference<String> last = new AtomicReference<>();
        await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(500)).untilAsserted(() -> {
            last.set(http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + httpPort + "/fsck?data=true")).build(),
                    HttpResponse.BodyHandlers.ofString()).body());
            JsonNode report = json.readTree(last.get());
            assertThat(report.path("pages_uploading").asLong(-1)).as(last.get()).isZero();
            assertThat(report.path("pages_history").asLong(-1)).as(last.get()).isZero();
        });
        JsonNode report = json.readTree(last.get());
        assertThat(report.path("fsck_ok").asBoolean()).as(last.get()).isTrue();
        assertThat(report.path("partitions")).as("every partition checked: " + last.get()).hasSize(4);
        assertThat(report.path("complete").asBoolean()).as("none left out: " + last.get()).isTrue();
        // A copy a kill broke would be moved aside and rebuilt from lob.commands, and the rebuilt one pass every check
        // above: with acks=all and a process killed (not the machine), no kill may break one.
        try (Stream<Path> files = Files.walk(dir.resolve("node"))) {
            assertThat(files.map(f -> f.getFileName().toString()).filter(n -> n.matches("p-\\d+\\..+")))
                    .as("tablespaces set aside").isEmpty();
        }
    }

    /**
     * Downloads the client aborts mid-body, more of them than the node's connection limit: each closed its connection
     * under a failed answer, which the JDK server went on counting (it forgets a connection only when its handler ends by
     * throwing, or its answer ends whole), and past the limit the node refused every connection, /status included.
     */
    @Test
    void downloadsAbortedMidBodyDoNotUseUpTheNodesConnections() throws Exception {
        if (node == null || !node.isAlive()) {
            node = startNode();
        }
        awaitRunning();
        byte[] value = new byte[16 << 20]; // more than loopback's socket buffers hold: the answer is under way when cut
        new Random(7).nextBytes(value);
        try (LobClient client = new LobClient(config)) {
            client.put("aborted-downloads", value, null, Map.of()).applied().get(60, TimeUnit.SECONDS);
        }
        for (int i = 0; i < 2 * CONNECTIONS; i++) {
            try (java.net.Socket s = new java.net.Socket()) {
                s.setReceiveBufferSize(4096);
                s.setSoTimeout(120_000); // a node that stops answering fails the test, not surefire's fork timeout an hour on
                s.connect(new java.net.InetSocketAddress("127.0.0.1", httpPort));
                s.getOutputStream().write("GET /lobs/aborted-downloads HTTP/1.1\r\nHost: x\r\n\r\n"
                        .getBytes(java.nio.charset.StandardCharsets.US_ASCII));
                byte[] status = s.getInputStream().readNBytes(12);
                assertThat(new String(status, java.nio.charset.StandardCharsets.US_ASCII)).as("download " + i).isEqualTo("HTTP/1.1 200");
                s.setSoLinger(true, 0); // a reset, mid-body, as a client that gives up
            }
        }
        assertThat(status().path("state").asText()).as("the node still answers").isNotEmpty();
    }
}
