package io.lobstream.app.embedded;

import com.fasterxml.jackson.databind.JsonNode;

import java.io.IOException;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** A purge worker in its own JVM: {@code lobstream purge --json} as a {@link ChildJvm}. */
public final class PurgeProcess implements AutoCloseable {
    private final String workerId;
    private final ChildJvm jvm;

    private PurgeProcess(String workerId, ChildJvm jvm) {
        this.workerId = workerId;
        this.jvm = jvm;
    }

    /**
     * @param readLatency null or zero for none
     * @param config      {@code -c KEY=VALUE} pairs (e.g. lob.purge.group, lob.purge.prefetch, session.timeout.ms)
     */
    private static final Pattern METRICS_URL = Pattern.compile("metrics at (http://\\S+/metrics)");

    public static PurgeProcess start(String workerId, String bootstrap, String registryUrl, Path dataDir, Duration readLatency,
                                     Map<String, String> config, Path logDir) throws IOException {
        List<String> args = new ArrayList<>(List.of("purge", "--json", "--worker-id=" + workerId, "--bootstrap=" + bootstrap,
                "--registry=" + registryUrl, "--data-dir=" + dataDir.toAbsolutePath(), "--metrics-host=127.0.0.1", "--metrics-port=0"));
        if (readLatency != null && !readLatency.isZero()) {
            args.add("--read-latency=" + readLatency.toNanos() / 1000 + "us");
        }
        config.forEach((k, v) -> args.addAll(List.of("-c", k + "=" + v)));
        // C1 only: young JVMs otherwise spend seconds of CPU in C2 compiler threads, once per worker, which on a
        // small machine competes with the work being done; a worker's own CPU work per record is small. And C1 early
        // (a tenth of the default thresholds): the per-record path is compiled within the first few dozen records
        // instead of after a few hundred, which with 4 workers starting together took a tenth of bench purge's window.
        List<String> jvmOptions = List.of("-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "-XX:Tier3InvocationThreshold=20", "-XX:Tier3MinInvocationThreshold=10", "-XX:Tier3CompileThreshold=200",
                "-XX:Tier3BackEdgeThreshold=2000");
        return new PurgeProcess(workerId, ChildJvm.start("purge-" + workerId, jvmOptions, "LOBSTREAM_WORKER_JAVA_OPTS", args, logDir));
    }

    public String workerId() {
        return workerId;
    }

    public long pid() {
        return jvm.pid();
    }

    /** CPU time the worker JVM has used so far (zero if the OS does not say). */
    public Duration cpu() {
        return jvm.cpu();
    }

    public boolean isAlive() {
        return jvm.isAlive();
    }

    /** SIGKILL: no shutdown hook, no clean leave of the group, an open transaction stays open. */
    public void kill() throws InterruptedException {
        jvm.kill();
    }

    /**
     * SIGTERM, as Ctrl-C: the worker finishes its transaction, leaves the group and prints its
     * summary; returns that summary (versions, pages read by type), or null if there is none.
     */
    public JsonNode stop() throws IOException, InterruptedException {
        jvm.stop(Duration.ofSeconds(30));
        return summary();
    }

    /** SIGTERM without waiting: stop several workers at once with this, then {@link #stop()} each. */
    public void signalStop() {
        jvm.signalStop();
    }

    /** The JSON object the worker printed last on stdout, or null. */
    public JsonNode summary() throws IOException {
        return jvm.summary();
    }

    /** What the worker wrote so far: stderr, then stdout (where a test's logging configuration may send logs). */
    public String log() throws IOException {
        return jvm.log();
    }

    public Path logFile() {
        return jvm.logFile();
    }

    /** "see" its logs, with their last lines: a bench's temporary directory, and the logs with it, may be gone when one looks. */
    public String seeLogs() {
        return "worker " + workerId + (isAlive() ? "" : " (exited)") + ": " + jvm.seeLogs();
    }

    /**
     * {@code GET /metrics} of the worker (started with {@code --metrics-port 0}: the port it found
     * is read from its log).
     */
    public String metrics() throws IOException, InterruptedException {
        Matcher m = METRICS_URL.matcher(log());
        if (!m.find()) {
            throw new IOException("purge worker " + workerId + " has not said where its metrics are; " + jvm.seeLogs());
        }
        return ChildJvm.httpGet(URI.create(m.group(1)));
    }

    @Override
    public void close() throws InterruptedException {
        jvm.close();
    }
}
