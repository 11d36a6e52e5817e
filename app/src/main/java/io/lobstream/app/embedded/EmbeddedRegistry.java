package io.lobstream.app.embedded;

import io.lobstream.schema.LobStreamConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeoutException;

/**
 * A real Apicurio Registry (2.6, SQL storage on an H2 file) run as a child JVM bound to loopback. Its
 * distribution is unpacked by the build into {@code app/target/apicurio-registry}; set
 * {@code lobstream.registry.home} to use another copy. The child is destroyed on close, and by
 * a shutdown hook when this JVM exits otherwise (Ctrl-C, SIGTERM), and by its shell parent when
 * this JVM is killed outright. Its storage is an H2 file under the data directory, so schema ids
 * stay valid across restarts (records in Kafka refer to them). Its global compatibility rule is
 * BACKWARD_TRANSITIVE.
 */
public final class EmbeddedRegistry implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(EmbeddedRegistry.class);
    public static final String HOME_PROPERTY = "lobstream.registry.home";
    private static final String RUNNER = "apicurio-registry-app-2.6.13.Final-runner.jar";

    private final int port;
    private final Path logFile;
    private Process process;
    private Thread hook;
    /** Set as it is stopped on purpose: an exit after that is no news. */
    private volatile boolean stopping;

    public EmbeddedRegistry(int port, Path logFile) {
        this.port = port;
        this.logFile = logFile;
    }

    public static Path home() {
        String prop = System.getProperty(HOME_PROPERTY);
        if (prop != null) {
            return Path.of(prop);
        }
        try {
            // next to the application jar: app/target/lobstream-app.jar -> app/target/apicurio-registry
            Path jar = Path.of(EmbeddedRegistry.class.getProtectionDomain().getCodeSource().getLocation().toURI());
            return jar.getParent().resolve("apicurio-registry");
        } catch (Exception e) {
            return Path.of("app", "target", "apicurio-registry");
        }
    }

    public EmbeddedRegistry start(Duration timeout) throws IOException, InterruptedException, TimeoutException {
        launch();
        awaitReady(timeout);
        return this;
    }

    /** Starts the child process without waiting for it to serve. */
    public void launch() throws IOException {
        Path runner = home().resolve(RUNNER);
        if (!Files.exists(runner)) {
            throw new IOException("Apicurio Registry not found at " + runner + ": build with ./mvnw package (it unpacks "
                    + "io.apicurio:apicurio-registry-app:2.6.13.Final:tar.gz:all) or set -D" + HOME_PROPERTY);
        }
        Files.createDirectories(logFile.getParent());
        List<String> cmd = new ArrayList<>();
        cmd.add(ShellWords.quote(Path.of(System.getProperty("java.home"), "bin", "java").toString()));
        cmd.add("-Xmx256m");
        cmd.add("-XX:+UseSerialGC");
        cmd.add("-Dquarkus.http.host=127.0.0.1");
        cmd.add("-Dquarkus.http.port=" + port);
        cmd.add("-Dquarkus.log.level=WARN");
        // schemas evolve compatibly: a new version must read what every earlier one wrote, or the registry refuses it,
        // and a producer with a breaking change fails at its first send. Transitive, not DESIGN's BACKWARD (against the
        // latest version only): a replay reads commands of every version lob.commands kept, for ever
        cmd.add("-Dregistry.rules.global.compatibility=BACKWARD_TRANSITIVE");
        cmd.add("-jar");
        cmd.add(ShellWords.quote(runner.toString()));
        // the shell waits for the registry, so one that dies at startup is seen at once, not after awaitReady's timeout
        String script = ChildJvm.orphanGuard(String.join(" ", cmd), null);
        // appended to: after a restart the log of the registry that died is still there (a line marks each start)
        Files.writeString(logFile, "--- LobStream starts the registry on port " + port + " at " + java.time.Instant.now() + "\n",
                StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        ProcessBuilder pb = new ProcessBuilder("/bin/sh", "-c", script).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(logFile.toFile()));
        // the schemas survive restarts of a node: H2 in a file under the data directory, not in memory. WRITE_DELAY=0: H2
        // writes a commit at once, not up to 500 ms later, so a registry killed (the OOM killer, destroyForcibly) keeps
        // every schema it answered with an id, which records in Kafka already carry; registrations are few
        pb.environment().put("REGISTRY_DATASOURCE_URL", "jdbc:h2:file:" + logFile.getParent().toAbsolutePath().resolve("registry-db")
                + ";DB_CLOSE_ON_EXIT=FALSE;WRITE_DELAY=0");
        process = pb.start();
        hook = new Thread(this::destroy, "registry-shutdown");
        Runtime.getRuntime().addShutdownHook(hook);
    }

    public void awaitReady(Duration timeout) throws InterruptedException, TimeoutException, IOException {
        HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(1)).build();
        URI probe = URI.create(url() + "/system/info");
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                throw new IOException("registry exited with " + process.exitValue() + "; " + LogTail.seeLog(logFile));
            }
            try {
                HttpResponse<Void> r = http.send(HttpRequest.newBuilder(probe).timeout(Duration.ofSeconds(2)).build(),
                        HttpResponse.BodyHandlers.discarding());
                if (r.statusCode() == 200) {
                    ready();
                    return;
                }
            } catch (IOException notYet) {
                // not listening yet
            }
            Thread.sleep(200);
        }
        destroy();
        throw new TimeoutException("registry not ready after " + timeout + "; " + LogTail.seeLog(logFile));
    }

    private void ready() {
        log.info("embedded Apicurio Registry on {} (pid {}, log {})", url(), process.pid(), logFile);
        // watched from here on: killed (the OOM killer, its 256 MB heap), it left running writers on their cached schemas,
        // every new client failing with "did not answer", and nothing said why
        // (a moment later, and not while the JVM stops: a SIGTERM to the whole process group, as systemd sends, ends the
        // registry's shell before this JVM's hooks have set stopping)
        process.onExit().thenAcceptAsync(p -> {
            if (!stopping && !io.lobstream.app.JvmShutdown.underWay()) {
                log.error("the embedded Apicurio Registry on {} exited ({}) while this process runs: writers go on with the "
                        + "schemas they hold, but new clients cannot register or find theirs, and a task that starts again "
                        + "waits for it; restart this process (the schemas are kept in the data directory). {}", url(),
                        p.exitValue(), LogTail.seeLog(logFile));
            }
        }, java.util.concurrent.CompletableFuture.delayedExecutor(2, java.util.concurrent.TimeUnit.SECONDS));
    }

    /** The Apicurio v2 API. */
    public String url() {
        return "http://127.0.0.1:" + port + LobStreamConfig.REGISTRY_API_PATH;
    }

    private void destroy() {
        stopping = true;
        Process p = process;
        if (p != null && p.isAlive()) {
            List<ProcessHandle> descendants = p.descendants().toList(); // the registry's JVM among them
            descendants.forEach(ProcessHandle::destroy);
            try {
                p.getOutputStream().close(); // the shell's `read` returns and it stops the registry
            } catch (IOException ignored) {
                // already closed
            }
            try {
                if (!p.waitFor(10, java.util.concurrent.TimeUnit.SECONDS)) {
                    descendants.forEach(ProcessHandle::destroyForcibly); // not only the shell: its JVM would live on
                    p.destroyForcibly().waitFor(5, java.util.concurrent.TimeUnit.SECONDS);
                }
            } catch (InterruptedException e) {
                descendants.forEach(ProcessHandle::destroyForcibly);
                p.destroyForcibly();
                Thread.currentThread().interrupt();
            }
        }
    }

    @Override
    public void close() {
        destroy();
        if (hook != null) {
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException shuttingDown) {
                // the hook is running already
            }
            hook = null;
        }
    }
}
