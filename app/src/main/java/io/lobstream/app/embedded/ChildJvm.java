package io.lobstream.app.embedded;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.lobstream.ingest.http.StreamedResponse;

import java.io.IOException;
import java.io.OutputStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
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
 * A {@code lobstream} subcommand in its own JVM, run from this JVM's classpath, its stdout and
 * stderr in files under a log directory. A small shell parent waits for the JVM (so its exit is
 * seen at once) while a subshell holds our stdin: when this JVM dies, even by SIGKILL, the pipe
 * closes and the child is stopped, so no orphan is left behind.
 */
final class ChildJvm implements AutoCloseable {
    private static final String MAIN = "io.lobstream.app.cli.LobStreamCli";
    private static final Duration HTTP_CONNECT_TIMEOUT = Duration.ofSeconds(2);
    private static final Duration HTTP_TIMEOUT = Duration.ofSeconds(10);

    private final Process shell;
    private final ProcessHandle java;
    private final Path stdout;
    private final Path stderr;

    private ChildJvm(Process shell, ProcessHandle java, Path stdout, Path stderr) {
        this.shell = shell;
        this.java = java;
        this.stdout = stdout;
        this.stderr = stderr;
    }

    /**
     * @param name        base name of its files in {@code logDir}: NAME.out, NAME.log, NAME.pid
     * @param jvmOptions  options before the main class; then those of {@code extraOptionsEnv}, if set
     * @param args        the subcommand and its arguments
     */
    static ChildJvm start(String name, List<String> jvmOptions, String extraOptionsEnv, List<String> args, Path logDir)
            throws IOException {
        Files.createDirectories(logDir);
        Path out = logDir.resolve(name + ".out");
        Path err = logDir.resolve(name + ".log");
        Path pidFile = logDir.resolve(name + ".pid");
        Files.deleteIfExists(pidFile);
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.addAll(jvmOptions);
        // RocksDB unpacks its native library into java.io.tmpdir at every start and deletes it at a clean exit
        // only; a killed child would leave 15 MB behind in /tmp each time. Its own directory is removed with it.
        cmd.add("-Djava.io.tmpdir=" + Files.createDirectories(logDir.resolve(name + ".tmp")).toAbsolutePath());
        String extra = System.getenv(extraOptionsEnv); // e.g. a profiler or another heap size
        if (extra != null && !extra.isBlank()) {
            cmd.addAll(List.of(extra.trim().split("\\s+")));
        }
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(MAIN);
        cmd.addAll(args);
        String script = orphanGuard(cmd.stream().map(ShellWords::quote).collect(Collectors.joining(" ")), pidFile);
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
            throw new IOException(name + " did not start; " + seeLogs(out, err));
        }
        return new ChildJvm(shell, java.get(), out, err);
    }

    long pid() {
        return java.pid();
    }

    /** CPU time the JVM has used so far (zero if the OS does not say). */
    Duration cpu() {
        return java.info().totalCpuDuration().orElse(Duration.ZERO);
    }

    boolean isAlive() {
        return shell.isAlive();
    }

    /** SIGKILL: no shutdown hook runs. */
    void kill() throws InterruptedException {
        java.destroyForcibly();
        shell.waitFor(10, TimeUnit.SECONDS);
        release();
    }

    /** SIGTERM, as Ctrl-C, and waits up to {@code timeout} for the exit; then SIGKILL. */
    void stop(Duration timeout) throws InterruptedException {
        signalStop();
        if (!shell.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            java.destroyForcibly();
            shell.waitFor(5, TimeUnit.SECONDS);
        }
        release();
    }

    /** SIGTERM without waiting. */
    void signalStop() {
        java.destroy();
    }

    /** The JSON object the child printed last on stdout, or null. */
    JsonNode summary() throws IOException {
        List<String> lines = Files.readAllLines(stdout);
        for (int i = lines.size() - 1; i >= 0; i--) {
            String l = lines.get(i).trim();
            if (l.startsWith("{")) {
                return new ObjectMapper().readTree(l);
            }
        }
        return null;
    }

    /** What the child wrote so far: stderr, then stdout (where a test's logging configuration may send logs). */
    String log() throws IOException {
        return Files.readString(stderr) + Files.readString(stdout);
    }

    Path logFile() {
        return stderr;
    }

    /** For a failure's message: where its logs are, with their last lines (the JVM's own start-up errors go to stdout). */
    String seeLogs() {
        return seeLogs(stdout, stderr);
    }

    private static String seeLogs(Path stdout, Path stderr) {
        return LogTail.seeLog(stderr) + (isEmpty(stdout) ? "" : "; " + LogTail.seeLog(stdout));
    }

    private static boolean isEmpty(Path file) {
        try {
            return Files.size(file) == 0;
        } catch (IOException e) {
            return true;
        }
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
            stop(Duration.ofSeconds(15));
        }
        release();
    }

    /**
     * {@code GET uri} of a child's HTTP endpoint: the body, or an IOException naming the status.
     * Through {@link StreamedResponse} (HttpURLConnection), not HttpClient: the bench's apply
     * tracker calls this tens of times a second, and HttpClient cost it 2.5 times the CPU per
     * request (its selector thread and timers, at 20 requests a second).
     */
    static String httpGet(URI uri) throws IOException {
        try (StreamedResponse r = StreamedResponse.send(uri, "GET", Map.of(), HTTP_CONNECT_TIMEOUT, HTTP_TIMEOUT)) {
            if (r.statusCode() != 200) {
                throw new IOException("GET " + uri + ": HTTP " + r.statusCode());
            }
            return new String(r.body().readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * A {@code /bin/sh -c} script that runs {@code commandLine} (already quoted) and waits for it, so
     * the shell's exit status is the child's; a subshell holds our stdin meanwhile, and when this JVM
     * dies, even by SIGKILL, the pipe closes, {@code read} returns and the child is killed: no orphan
     * keeps its ports or files. Fd 3 keeps our stdin (an asynchronous list's own stdin is /dev/null).
     * The shell ignores SIGINT and SIGQUIT, as the child does (a background job): Ctrl-C reaches the
     * whole process group, and a shell that died of it left this JVM's shutdown nothing to stop the
     * child through. A child that ends first takes its guard with it, so the guard never signals
     * another process that got the pid since.
     *
     * @param pidFile where the child's pid is written, or null
     */
    static String orphanGuard(String commandLine, Path pidFile) {
        return "trap '' INT QUIT; exec 3<&0; " + commandLine + " & child=$!; "
                + (pidFile == null ? "" : "echo $child > " + ShellWords.quote(pidFile.toString()) + "; ")
                + "(read -r _ <&3; kill $child 2>/dev/null) & guard=$!; wait $child; rc=$?; kill $guard 2>/dev/null; exit $rc";
    }
}
