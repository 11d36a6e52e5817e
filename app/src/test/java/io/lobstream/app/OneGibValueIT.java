package io.lobstream.app;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.lobstream.app.embedded.EmbeddedCluster;
import io.lobstream.client.LobClient;
import io.lobstream.client.LobWrite;
import io.lobstream.client.WriteOutcome;
import io.lobstream.schema.LobStreamConfig;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.InputStream;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.HexFormat;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The 1 GiB value, as its must-show runs it: a node in a process of its own with a 512 MiB heap, and from this
 * process a {@code put} that waits until applied, then a {@code GET} of the whole value, both streamed (neither side
 * holds the value), compared by SHA-256; fsck clean after. Tagged slow, left out of the default build: {@code ./mvnw -B
 * verify -Pslow} runs it (about 40 s here, and 1 GiB of the broker's disk besides the node's).
 */
@Tag("slow")
class OneGibValueIT {
    static final long GIB = 1L << 30;

    @TempDir
    static Path dir;

    static EmbeddedCluster cluster;
    static LobStreamConfig config;
    static Process node;
    static int httpPort;
    static final HttpClient http = HttpClient.newHttpClient();
    static final ObjectMapper json = new ObjectMapper();

    @BeforeAll
    static void start() throws Exception {
        cluster = EmbeddedCluster.start(dir.resolve("cluster"), 0, 0, 0);
        config = new LobStreamConfig(Map.of(LobStreamConfig.BOOTSTRAP.name(), cluster.bootstrap(),
                LobStreamConfig.REGISTRY_URL.name(), cluster.registryUrl()));
        try (ServerSocket s = new ServerSocket(0)) {
            httpPort = s.getLocalPort();
        }
        String java = ProcessHandle.current().info().command().orElse("java");
        Path tmp = Files.createDirectories(dir.resolve("node-tmp")); // RocksDB's native library, unpacked per process
        node = new ProcessBuilder(java, "-Xmx512m", "-XX:+ExitOnOutOfMemoryError", "-Djava.io.tmpdir=" + tmp,
                "-cp", System.getProperty("java.class.path"), "io.lobstream.app.cli.LobStreamCli", "node",
                "--bootstrap", cluster.bootstrap(), "--registry", cluster.registryUrl(),
                "--data-dir", dir.resolve("node").toString(), "--http-port", Integer.toString(httpPort))
                .redirectOutput(dir.resolve("node.log").toFile())
                .redirectErrorStream(true)
                .start();
        await().atMost(Duration.ofSeconds(180)).pollInterval(Duration.ofMillis(500)).ignoreExceptions()
                .until(() -> status().path("state").asText().equals("RUNNING"));
    }

    @AfterAll
    static void stop() throws Exception {
        try {
            if (node != null) {
                node.destroy(); // SIGTERM: a clean close
                if (!node.waitFor(2, TimeUnit.MINUTES)) { // a node that hangs in its close must not outlive the run
                    node.destroyForcibly().waitFor();
                }
            }
        } finally {
            if (cluster != null) {
                cluster.close();
            }
        }
    }

    @Test
    void aGibValueGoesThroughANodeWithAHalfGibHeapAndComesBackIdentical() throws Exception {
        NoiseStream value = new NoiseStream(GIB, 1);
        try (LobClient client = new LobClient(config)) {
            client.watchApplied();
            LobWrite put = client.put("gib", value, GIB, "application/x-test", Map.of("k", "v"), LobClient.Progress.NONE);
            WriteOutcome outcome = put.applied(Duration.ofMinutes(5)).get();
            assertThat(outcome.deadLetter()).as("applied, not dead-lettered").isEmpty();
        }
        String sent = value.sha256();

        HttpResponse<InputStream> got = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + httpPort + "/lobs/gib")).build(),
                HttpResponse.BodyHandlers.ofInputStream());
        assertThat(got.statusCode()).isEqualTo(200);
        assertThat(got.headers().firstValueAsLong("Content-Length")).hasValue(GIB);
        MessageDigest read = MessageDigest.getInstance("SHA-256");
        long n = 0;
        try (InputStream in = got.body()) {
            byte[] buf = new byte[1 << 20];
            for (int r; (r = in.read(buf)) > 0; n += r) {
                read.update(buf, 0, r);
            }
        }
        assertThat(n).isEqualTo(GIB);
        assertThat(HexFormat.of().formatHex(read.digest())).isEqualTo(sent);
        assertThat(node.isAlive()).as("the node, with its 512 MiB heap").isTrue();

        HttpResponse<String> fsck = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + httpPort + "/fsck")).build(),
                HttpResponse.BodyHandlers.ofString());
        JsonNode report = json.readTree(fsck.body());
        assertThat(report.path("fsck_ok").asBoolean()).as(fsck.body()).isTrue();
        assertThat(report.path("complete").asBoolean()).as(fsck.body()).isTrue();
    }

    static JsonNode status() throws Exception {
        return json.readTree(http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + httpPort + "/status")).build(),
                HttpResponse.BodyHandlers.ofString()).body());
    }

    /** {@code length} pseudo-random bytes from {@code seed}, made as they are read and hashed on the way: no 1 GiB file. */
    static final class NoiseStream extends InputStream {
        private final SplittableRandom random;
        private final MessageDigest digest;
        private long left;

        NoiseStream(long length, long seed) throws NoSuchAlgorithmException {
            this.random = new SplittableRandom(seed);
            this.digest = MessageDigest.getInstance("SHA-256");
            this.left = length;
        }

        @Override
        public int read() throws IOException {
            byte[] one = new byte[1];
            return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
        }

        @Override
        public int read(byte[] b, int off, int len) {
            if (left == 0) {
                return -1;
            }
            int n = (int) Math.min(len, left);
            for (int i = 0; i < n; i++) {
                b[off + i] = (byte) random.nextInt();
            }
            digest.update(b, off, n);
            left -= n;
            return n;
        }

        String sha256() {
            assertThat(left).as("the value read to its end").isZero();
            return HexFormat.of().formatHex(digest.digest());
        }
    }
}
