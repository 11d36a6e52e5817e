package io.lobstream.app.embedded;

import kafka.server.KafkaConfig;
import kafka.server.KafkaRaftServer;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.utils.internals.Exit;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.metadata.storage.Formatter;
import org.apache.kafka.server.common.Feature;
import org.apache.kafka.server.common.MetadataVersion;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.PrintStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Properties;

/**
 * A real single-node Kafka broker in KRaft mode (broker and controller in one), started
 * in-process from the broker's production classes: storage is formatted with the metadata
 * {@link Formatter} on first start, then {@link KafkaRaftServer} runs it. Bound to 127.0.0.1.
 * Settings are those a one-node cluster needs for transactions to work in a small heap.
 */
public final class EmbeddedKafka implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(EmbeddedKafka.class);
    private static final int NODE_ID = 1;

    private final Path logDir;
    private final int port;
    private final int controllerPort;
    private final Map<String, String> settings;
    private KafkaRaftServer server;

    public EmbeddedKafka(Path dir, int port, int controllerPort) {
        this(dir, port, controllerPort, Map.of());
    }

    /** @param settings broker settings over the ones below (tests: an authorizer) */
    public EmbeddedKafka(Path dir, int port, int controllerPort, Map<String, String> settings) {
        this.logDir = dir.toAbsolutePath();
        this.port = port;
        this.controllerPort = controllerPort;
        this.settings = Map.copyOf(settings);
    }

    public EmbeddedKafka start() throws Exception {
        Files.createDirectories(logDir);
        // A broker whose only log directory fails (a full disk, an I/O error), or that cannot bind its port, halts the JVM
        // (ReplicaManager, often with no message), with no shutdown hook and no word but its own log's: say so, where an
        // operator of the embedded default looks
        Exit.setHaltProcedure((code, message) -> {
            log.error("the embedded Kafka broker halts this JVM (exit {}){}; Kafka's error above says why (most often a full or "
                    + "failed disk under its log directory {}, or a port another process took). The tablespaces are crash-safe: "
                    + "start again once that is mended", code, message == null ? "" : ": " + message, logDir);
            Runtime.getRuntime().halt(code);
        });
        Properties p = new Properties();
        p.put("process.roles", "broker,controller");
        p.put("node.id", Integer.toString(NODE_ID));
        p.put("controller.quorum.voters", NODE_ID + "@127.0.0.1:" + controllerPort);
        p.put("listeners", "PLAINTEXT://127.0.0.1:" + port + ",CONTROLLER://127.0.0.1:" + controllerPort);
        p.put("advertised.listeners", "PLAINTEXT://127.0.0.1:" + port);
        p.put("controller.listener.names", "CONTROLLER");
        p.put("inter.broker.listener.name", "PLAINTEXT");
        p.put("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT");
        p.put("log.dirs", logDir.toString());
        p.put("num.partitions", "1");
        p.put("offsets.topic.replication.factor", "1");
        p.put("offsets.topic.num.partitions", "8");
        p.put("transaction.state.log.replication.factor", "1");
        p.put("transaction.state.log.min.isr", "1");
        p.put("transaction.state.log.num.partitions", "1");
        p.put("share.coordinator.state.topic.replication.factor", "1");
        p.put("share.coordinator.state.topic.min.isr", "1");
        p.put("group.initial.rebalance.delay.ms", "0");
        // a transaction left open by a killed producer is aborted within a second of its timeout (default: 10 s)
        p.put("transaction.abort.timed.out.transaction.cleanup.interval.ms", "1000");
        p.put("log.cleaner.dedupe.buffer.size", Integer.toString(8 * 1024 * 1024));
        p.put("auto.create.topics.enable", "false");
        // The broker fsyncs a log segment when it rolls it. With the default 1 GiB segments and keys spread evenly,
        // every partition of lob.commands rolls at about the same moment and the disk the tablespaces share takes
        // gigabytes of fsync at once: the writer's commits stalled for seconds (bench history, every ~50 s).
        p.put("log.segment.bytes", Integer.toString(128 * 1024 * 1024));
        // Retention by size or age is enforced within seconds, not the default 5 minutes: the bench's scratch topics,
        // bounded by retention.bytes, fill the disk faster than that. The check walks each partition's segment list.
        p.put("log.retention.check.interval.ms", "5000");
        // A deleted topic's directory leaves the disk about 5 s after the deletion, not a minute: the bench deletes its
        // scratch topics (gigabytes; their own file.delete.delay.ms is 1 s, which a topic's deletion does not read) and
        // waits for their files to go before it measures the producer again. It is also the default file.delete.delay.ms
        // of the segments retention deletes and of those compaction replaces: the delay lets a fetch in flight finish
        // before the file is closed, milliseconds on one host (a fetch cut short is sent again).
        p.put("log.segment.delete.delay.ms", "5000");
        // A group's offsets are kept as long as lob.commands keeps commands (for ever), not Kafka's 7 days after its last
        // member left: a node stopped for a week would start again from offset 0 and read the whole log (correct, as
        // its tablespaces record what they applied, but as slow as a rebuild), and its purge workers from lob.undo's start
        p.put("offsets.retention.minutes", Integer.toString(Integer.MAX_VALUE));
        p.putAll(settings);
        KafkaConfig config = KafkaConfig.fromProps(p, false);

        if (!Files.exists(logDir.resolve("meta.properties"))) {
            Formatter formatter = new Formatter()
                    .setPrintStream(new PrintStream(OutputStream.nullOutputStream()))
                    .setNodeId(NODE_ID)
                    .setClusterId(Uuid.randomUuid().toString())
                    .addDirectory(logDir.toString())
                    .setMetadataLogDirectory(logDir.toString())
                    .setControllerListenerName("CONTROLLER")
                    .setSupportedFeatures(Feature.PRODUCTION_FEATURES)
                    .setReleaseVersion(MetadataVersion.LATEST_PRODUCTION)
                    .setIgnoreFormatted(true);
            formatter.run();
            log.info("formatted KRaft storage in {}", logDir);
        }
        server = new KafkaRaftServer(config, Time.SYSTEM);
        server.startup();
        log.info("embedded Kafka broker on 127.0.0.1:{} (KRaft, data {})", port, logDir);
        return this;
    }

    public String bootstrap() {
        return "127.0.0.1:" + port;
    }

    @Override
    public void close() {
        if (server != null) {
            server.shutdown();
            server.awaitShutdown();
            server = null;
        }
    }

    public static int freePort() throws IOException {
        return freePorts(1)[0];
    }

    /**
     * {@code n} loopback ports free now, all different: held open together while they are chosen (one at a time, the
     * system could hand out a port just given back, and a broker given the same port twice halts its JVM).
     */
    public static int[] freePorts(int n) throws IOException {
        java.net.ServerSocket[] sockets = new java.net.ServerSocket[n];
        try {
            int[] ports = new int[n];
            for (int i = 0; i < n; i++) {
                sockets[i] = new java.net.ServerSocket(0, 0, java.net.InetAddress.getLoopbackAddress());
                ports[i] = sockets[i].getLocalPort();
            }
            return ports;
        } finally {
            for (java.net.ServerSocket s : sockets) {
                if (s != null) {
                    s.close();
                }
            }
        }
    }
}
