package io.lobstream.app.embedded;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * A purge worker in its own JVM: {@code lobstream purge --json} run from this JVM's classpath,
 * its stdout and stderr in files under {@code logDir}. A small shell parent waits for the worker
 * (so its exit is seen at once) while a subshell holds our stdin: when this JVM dies, even by
 * SIGKILL, the pipe closes and the worker is stopped, so no orphan is left behind.
 */
public final class PurgeProcess implements AutoCloseable {
    private static final String MAIN = "io.lobstream.app.cli.LobStreamCli";

    private final String workerId;
    private final Process shell;
    private final ProcessHandle java;
    private final Path stdout;
    private final Path stderr;

    private PurgeProcess(String workerId, Process shell, ProcessHandle java, Path stdout, Path stderr) {
        this.workerId = workerId;
        this.shell = shell;
        this.java = java;
        this.stdout = stdout;
        this.stderr = stderr;
    }

    /**
     * @param readLatency null or zero for none
     * @param config      {@code -c KEY=VALUE} pairs (e.g. lob.purge.group, lob.purge.prefetch, session.timeout.ms)
     */
    public static PurgeProcess start(String workerId, String bootstrap, String registryUrl, Path dataDir, Duration readLatency,
                                     Map<String, String> config, Path logDir) throws IOException {
        Files.createDirectories(logDir);
        Path out = logDir.resolve("purge-" + workerId + ".out");
        Path err = logDir.resolve("purge-" + workerId + ".log");
        Path pidFile = logDir.resolve("purge-" + workerId + ".pid");
        Files.deleteIfExists(pidFile);
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.add("-Xmx256m");
        cmd.add("-XX:+UseSerialGC");
        // C1 only: young JVMs otherwise spend seconds of CPU in C2 compiler threads, once per worker, which on a
        // small machine competes with the work being done; a worker's own CPU work per record is small.
        cmd.add("-XX:TieredStopAtLevel=1");
        String extra = System.getenv("LOBSTREAM_WORKER_JAVA_OPTS"); // e.g. a profiler or another heap size
        if (extra != null && !extra.isBlank()) {
            cmd.addAll(List.of(extra.trim().split("\\s+")));
        }
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(MAIN);
        cmd.add("purge");
        cmd.add("--json");
        cmd.add("--worker-id=" + workerId);
        cmd.add("--bootstrap=" + bootstrap);
        cmd.add("--registry=" + registryUrl);
        cmd.add("--data-dir=" + dataDir.toAbsolutePath());
        if (readLatency != null && !readLatency.isZero()) {
            cmd.add("--read-latency=" + readLatency.toNanos() / 1000 + "us");
        }
        config.forEach((k, v) -> {
            cmd.add("-c");
            cmd.add(k + "=" + v);
        });
        // fd 3 keeps our stdin: an asynchronous list's own stdin is /dev/null
        String script = "exec 3<&0; " + cmd.stream().map(PurgeProcess::quote).collect(Collectors.joining(" "))
                + " & child=$!; echo $child > " + quote(pidFile.toString()) + "; (read -r _ <&3; kill $child 2>/dev/null) & wait $child";
        Process shell = new ProcessBuilder("/bin/sh", "-c", script).redirectOutput(out.toFile()).redirectError(err.toFile()).start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        Optional<ProcessHandle> java = Optional.empty();
        while (java.isEmpty() && System.nanoTime() < deadline && shell.isAlive()) {
            String pid = Files.exists(pidFile) ? Files.readString(pidFile).trim() : "";
            java = pid.isEmpty() ? Optional.empty() : ProcessHandle.of(Long.parseLong(pid));
            if (java.isEmpty()) {
                sleep(10);
            }
        }
        if (java.isEmpty()) {
            shell.destroyForcibly();
            throw new IOException("purge worker " + workerId + " did not start; see " + err);
        }
        return new PurgeProcess(workerId, shell, java.get(), out, err);
    }

    public String workerId() {
        return workerId;
    }

    public long pid() {
        return java.pid();
    }

    /** CPU time the worker JVM has used so far (zero if the OS does not say). */
    public Duration cpu() {
        return java.info().totalCpuDuration().orElse(Duration.ZERO);
    }

    public boolean isAlive() {
        return shell.isAlive();
    }

    /** SIGKILL: no shutdown hook, no clean leave of the group, an open transaction stays open. */
    public void kill() throws InterruptedException {
        java.destroyForcibly();
        shell.waitFor(10, TimeUnit.SECONDS);
        release();
    }

    /**
     * SIGTERM, as Ctrl-C: the worker finishes its transaction, leaves the group and prints its
     * summary; returns that summary (versions, pages read by type), or null if there is none.
     */
    public JsonNode stop() throws IOException, InterruptedException {
        signalStop();
        if (!shell.waitFor(30, TimeUnit.SECONDS)) {
            java.destroyForcibly();
            shell.waitFor(5, TimeUnit.SECONDS);
        }
        release();
        return summary();
    }

    /** SIGTERM without waiting: stop several workers at once with this, then {@link #stop()} each. */
    public void signalStop() {
        java.destroy();
    }

    /** The JSON object the worker printed last on stdout, or null. */
    public JsonNode summary() throws IOException {
        List<String> lines = Files.readAllLines(stdout);
        for (int i = lines.size() - 1; i >= 0; i--) {
            String l = lines.get(i).trim();
            if (l.startsWith("{")) {
                return new ObjectMapper().readTree(l);
            }
        }
        return null;
    }

    /** What the worker wrote so far: stderr, then stdout (where a test's logging configuration may send logs). */
    public String log() throws IOException {
        return Files.readString(stderr) + Files.readString(stdout);
    }

    public Path logFile() {
        return stderr;
    }

    /** Lets the subshell that guards our stdin go. */
    private void release() {
        try (OutputStream in = shell.getOutputStream()) {
            in.write('\n');
        } catch (IOException ignored) {
            // gone already
        }
    }

    @Override
    public void close() throws InterruptedException {
        if (shell.isAlive()) {
            java.destroy();
            if (!shell.waitFor(15, TimeUnit.SECONDS)) {
                java.destroyForcibly();
                shell.waitFor(5, TimeUnit.SECONDS);
            }
        }
        release();
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static String quote(String s) {
        return "'" + s.replace("'", "'\\''") + "'";
    }
}
