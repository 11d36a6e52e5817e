package io.lobstream.app.embedded;

import io.lobstream.app.DataDirs;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.Map;

/**
 * The embedded default: a real KRaft broker in this JVM and a real registry as a child
 * process, both under {@code dataDir}, both on loopback.
 */
public final class EmbeddedCluster implements Cluster {
    /** The file whose lock says a process runs an embedded cluster on its directory. */
    static final String LOCK_FILE = "embedded.lock";

    private final EmbeddedKafka kafka;
    private final EmbeddedRegistry registry;
    private final FileChannel lock;

    private EmbeddedCluster(EmbeddedKafka kafka, EmbeddedRegistry registry, FileChannel lock) {
        this.kafka = kafka;
        this.registry = registry;
        this.lock = lock;
    }

    /** Ports 0 mean "any free port". */
    public static EmbeddedCluster start(Path dataDir, int kafkaPort, int controllerPort, int registryPort) throws Exception {
        return start(dataDir, kafkaPort, controllerPort, registryPort, Map.of());
    }

    /** @param brokerSettings broker settings over the embedded broker's own (tests: an authorizer) */
    public static EmbeddedCluster start(Path dataDir, int kafkaPort, int controllerPort, int registryPort, Map<String, String> brokerSettings)
            throws Exception {
        int[] free = EmbeddedKafka.freePorts(3);
        int kp = kafkaPort == 0 ? free[0] : kafkaPort;
        int cp = controllerPort == 0 ? free[1] : controllerPort;
        int rp = registryPort == 0 ? free[2] : registryPort;
        if (kp == cp || kp == rp || cp == rp) { // a free port may be one given for another role
            throw new IllegalArgumentException("the broker, the KRaft controller and the registry need three different ports, not "
                    + kp + ", " + cp + " and " + rp + " (--kafka-port, --controller-port, --registry-port)");
        }
        // the data directory first: a second node started on it is told so, not to move ports the first one holds
        FileChannel lock = lock(dataDir);
        EmbeddedRegistry registry = null;
        EmbeddedKafka kafka = null;
        try {
            // Kafka halts the JVM when it cannot bind: say which port, and which option moves it, first
            requireFree(kp, "broker", "--kafka-port");
            requireFree(cp, "KRaft controller", "--controller-port");
            requireFree(rp, "registry", "--registry-port");
            registry = new EmbeddedRegistry(rp, dataDir.resolve("registry").resolve("registry.log"));
            kafka = new EmbeddedKafka(dataDir.resolve("kafka"), kp, cp, brokerSettings);
            // the registry takes ~10 s to boot in its own JVM: the broker starts meanwhile
            registry.launch();
            kafka.start();
            registry.awaitReady(Duration.ofSeconds(120));
        } catch (Exception e) {
            // each closed, whatever the one before threw: the lock kept would refuse this directory to the next start
            // in this JVM ("in use by another LobStream node"), and a close's failure would hide why the start failed
            closeAll(registry, kafka, lock, e);
            throw e;
        }
        return new EmbeddedCluster(kafka, registry, lock);
    }

    /**
     * Throws, as {@link #start} would, if another process's embedded cluster holds {@code dataDir}: for a command that
     * checks what it binds before it starts one (a node's HTTP port), so that a second node on the directory is told
     * that, not to move a port the first one holds.
     */
    public static void requireDataDirFree(Path dataDir) throws IOException {
        if (Files.exists(dataDir.resolve(LOCK_FILE))) { // else no cluster has run there: nothing made for this question
            lock(dataDir).close();
        }
    }

    /**
     * Locks {@code dataDir} for this process's embedded cluster. On other ports, a second one would go ahead: its
     * registry truncates the first's log, and its KRaft controller opens the first's metadata log before the broker's own
     * lock would refuse it.
     */
    private static FileChannel lock(Path dataDir) throws IOException {
        Files.createDirectories(dataDir);
        FileChannel channel = FileChannel.open(dataDir.resolve(LOCK_FILE), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
        FileLock held;
        try {
            held = DataDirs.tryLock(channel);
        } catch (IOException | RuntimeException e) {
            channel.close();
            throw e;
        }
        if (held == null) {
            channel.close();
            throw new IllegalStateException("the data directory " + dataDir + " is in use by another LobStream node, demo or "
                    + "cluster on this machine (its embedded broker and registry); stop it, or give another --data-dir");
        }
        return channel; // closing it releases the lock
    }

    private static void requireFree(int port, String what, String option) {
        try (ServerSocket probe = new ServerSocket(port, 0, InetAddress.getLoopbackAddress())) {
            // bound, so free; closing a socket that never accepted leaves no TIME_WAIT behind
        } catch (IOException e) {
            // the system's own words (in its language) say which: in use, not this user's to open, no such address
            throw new IllegalStateException("cannot open port " + port + " for the embedded " + what + " (" + e.getMessage()
                    + "): another LobStream node or cluster may have it, or this user may not open it (below 1024); stop it, or "
                    + "choose another port with " + option, e);
        }
    }

    @Override
    public String bootstrap() {
        return kafka.bootstrap();
    }

    @Override
    public String registryUrl() {
        return registry.url();
    }

    @Override
    public void close() {
        RuntimeException failed = new RuntimeException("closing the embedded cluster");
        closeAll(registry, kafka, lock, failed);
        Throwable[] causes = failed.getSuppressed();
        if (causes.length > 0) { // its first cause in its message: a caller that prints only that says why
            RuntimeException said = new RuntimeException("closing the embedded cluster: " + causes[0], causes[0]);
            for (int i = 1; i < causes.length; i++) {
                said.addSuppressed(causes[i]);
            }
            throw said;
        }
    }

    /** Closes each of them (null: not made), adding what a close throws to {@code failure}; the lock's is let go. */
    private static void closeAll(EmbeddedRegistry registry, EmbeddedKafka kafka, FileChannel lock, Exception failure) {
        for (AutoCloseable c : new AutoCloseable[]{registry, kafka, lock}) {
            try {
                if (c != null) {
                    c.close();
                }
            } catch (Exception e) {
                if (c != lock) { // the lock goes with the process anyway
                    failure.addSuppressed(e);
                }
            }
        }
    }
}
