package io.lobstream.app.embedded;

import com.fasterxml.jackson.databind.JsonNode;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/**
 * The embedded default in a JVM of its own, {@code lobstream cluster}: the broker's JIT, heap and
 * GC are not shared with the clients measured against it, as in a deployment.
 */
public final class ClusterProcess implements Cluster {
    private final ChildJvm jvm;
    private final String bootstrap;
    private final String registryUrl;

    private ClusterProcess(ChildJvm jvm, String bootstrap, String registryUrl) {
        this.jvm = jvm;
        this.bootstrap = bootstrap;
        this.registryUrl = registryUrl;
    }

    /** The environment variable whose JVM options the child gets after {@code jvmOptions}. */
    public static final String JAVA_OPTS_ENV = "LOBSTREAM_CLUSTER_JAVA_OPTS";

    /** Starts it on free loopback ports and waits until broker and registry are ready. */
    public static ClusterProcess start(Path dataDir, Path logDir, Duration timeout) throws IOException, InterruptedException {
        return start(dataDir, logDir, timeout, List.of());
    }

    /** The same, with these JVM options for the broker's JVM. */
    public static ClusterProcess start(Path dataDir, Path logDir, Duration timeout, List<String> jvmOptions)
            throws IOException, InterruptedException {
        int[] ports = EmbeddedKafka.freePorts(3);
        List<String> args = List.of("cluster", "--data-dir=" + dataDir.toAbsolutePath(), "--kafka-port=" + ports[0],
                "--controller-port=" + ports[1], "--registry-port=" + ports[2]);
        ChildJvm jvm = ChildJvm.start("cluster", jvmOptions, JAVA_OPTS_ENV, args, logDir);
        long deadline = System.nanoTime() + timeout.toNanos();
        JsonNode ready;
        try {
            while ((ready = jvm.summary()) == null) {
                if (!jvm.isAlive() || System.nanoTime() > deadline) {
                    String why = jvm.isAlive() ? "not ready after " + timeout : "exited"; // before the stop makes it "exited" either way
                    throw new IOException("cluster " + why + "; " + jvm.seeLogs());
                }
                Thread.sleep(100);
            }
        } catch (IOException | InterruptedException | RuntimeException e) {
            try {
                jvm.stop(Duration.ofSeconds(10)); // not left running for as long as this JVM lives
            } catch (InterruptedException again) {
                Thread.currentThread().interrupt();
                e.addSuppressed(again); // signalled, not waited for (its orphan guard ends it with this JVM at the latest)
            }
            throw e;
        }
        return new ClusterProcess(jvm, ready.path("bootstrap").asText(), ready.path("registry").asText());
    }

    @Override
    public String bootstrap() {
        return bootstrap;
    }

    @Override
    public String registryUrl() {
        return registryUrl;
    }

    /** CPU time the broker's JVM has used (the registry runs in a JVM of its own). */
    public Duration cpu() {
        return jvm.cpu();
    }

    @Override
    public void close() {
        try {
            jvm.stop(Duration.ofSeconds(30));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
