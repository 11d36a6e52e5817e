package io.lobstream.app.embedded;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A writer node in its own JVM, {@code lobstream node --bootstrap ...}, as it is deployed: its
 * JIT, heap and GC its own, not shared with the broker or the producers. Watched through its
 * HTTP API.
 */
public final class NodeProcess implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();

    private final ChildJvm jvm;
    private final URI base;

    private NodeProcess(ChildJvm jvm, int httpPort) {
        this.jvm = jvm;
        this.base = URI.create("http://127.0.0.1:" + httpPort);
    }

    /** The environment variable whose JVM options the child gets after {@code jvmOptions}. */
    public static final String JAVA_OPTS_ENV = "LOBSTREAM_NODE_JAVA_OPTS";

    /**
     * @param purgeWorkers purge workers inside the node's JVM
     * @param config       {@code -c KEY=VALUE} pairs
     * @param jvmOptions   options of the node's JVM (the environment's {@value #JAVA_OPTS_ENV} come after)
     */
    public static NodeProcess start(String nodeId, String bootstrap, String registryUrl, Path dataDir, int httpPort, int purgeWorkers,
                                    Map<String, String> config, Path logDir, List<String> jvmOptions) throws IOException {
        List<String> args = new ArrayList<>(List.of("node", "--node-id=" + nodeId, "--bootstrap=" + bootstrap,
                "--registry=" + registryUrl, "--data-dir=" + dataDir.toAbsolutePath(), "--http-port=" + httpPort,
                "--purge-workers=" + purgeWorkers));
        config.forEach((k, v) -> args.addAll(List.of("-c", k + "=" + v)));
        return new NodeProcess(ChildJvm.start("node-" + nodeId, jvmOptions, JAVA_OPTS_ENV, args, logDir), httpPort);
    }

    /** Waits until the writer is RUNNING with {@code partitions} tablespaces open. */
    public NodeProcess awaitRunning(int partitions, Duration timeout) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            if (!jvm.isAlive()) {
                throw new IOException("node exited; " + jvm.seeLogs());
            }
            try {
                JsonNode s = status();
                if (s.path("state").asText().equals("RUNNING") && s.path("partitions").size() == partitions) {
                    return this;
                }
            } catch (IOException notYet) {
                // HTTP not up yet
            }
            if (System.nanoTime() > deadline) {
                throw new IOException("node not RUNNING with " + partitions + " partitions after " + timeout + "; "
                        + jvm.seeLogs());
            }
            Thread.sleep(200);
        }
    }

    /** {@code GET /status}. */
    public JsonNode status() throws IOException, InterruptedException {
        return JSON.readTree(get("/status"));
    }

    /** {@code GET /metrics}: the Prometheus text. */
    public String metrics() throws IOException, InterruptedException {
        return get("/metrics");
    }

    private String get(String path) throws IOException {
        return ChildJvm.httpGet(base.resolve(path));
    }

    public Duration cpu() {
        return jvm.cpu();
    }

    public Path logFile() {
        return jvm.logFile();
    }

    @Override
    public void close() throws InterruptedException {
        jvm.close();
    }
}
