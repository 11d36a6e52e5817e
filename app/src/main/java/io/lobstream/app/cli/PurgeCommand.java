package io.lobstream.app.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.lobstream.purge.PurgeWorker;
import io.lobstream.schema.LobStreamConfig;
import io.lobstream.store.page.PageType;
import com.sun.net.httpserver.HttpServer;
import io.lobstream.ingest.http.MetricsEndpoint;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/** {@code ./lobstream purge}: one purge worker process. */
@Command(name = "purge", mixinStandardHelpOptions = true,
        description = {"Run a purge worker: a member of the consumer group on the undo-history topic.",
                "It reads the node's tablespaces read-only, so it must run on the host (or shared volume) that holds "
                        + "the node's data directory. Start more to purge faster; the group gives each the partitions whose "
                        + "tablespaces its data directory holds (those its node there uses, where one runs), so with several "
                        + "nodes run workers beside each."})
final class PurgeCommand implements Runnable {
    /** Short: no broker yet (one starting with the worker) keeps the worker from its subscription for this long, silently. */
    private static final Duration NO_TOPIC_WAIT = Duration.ofSeconds(2);

    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Mixin
    ClusterOptions cluster;

    @Option(names = "--data-dir", converter = DataDir.class, description = "The node's data directory (sets lob.data.dir; default: " + LobStreamConfig.DEFAULT_DATA_DIR + ").")
    Path dataDir;

    /** The image's entry point sets the variable to the container's hostname: an argument it added could repeat one in an @FILE. */
    @Option(names = "--worker-id", defaultValue = "${env:LOBSTREAM_PURGE_WORKER_ID}",
            description = "Stable id of this worker (its transactional id is lob.purge.group-ID); default: $LOBSTREAM_PURGE_WORKER_ID, "
                    + "else random.")
    String workerId;

    @Option(names = "--read-latency", paramLabel = "DURATION",
            description = "Add this delay to every page read (benchmarks: models remote block storage), e.g. 1ms (a bare number is seconds).")
    Duration readLatency;

    @Option(names = "--metrics-port", paramLabel = "PORT", defaultValue = "-1",
            description = "Serve this worker's metrics (lob_purge_versions_total, lob_purge_pages_total, lob_purge_pages_read_total{type}, "
                    + "lob_purge_prefetch_in_flight, ...) for Prometheus at http://HOST:PORT/metrics; 0 = any free port "
                    + "(printed at start). Default: off.")
    int metricsPort;

    @Option(names = "--metrics-host", defaultValue = "0.0.0.0", description = "Address the metrics endpoint binds (default: ${DEFAULT-VALUE}).")
    String metricsHost;

    @Option(names = "--json", description = "When stopped, print one JSON object as the last line of stdout: versions purged and "
            + "pages read by type (and the injected read latency, if any).")
    boolean json;

    @Override
    public void run() {
        if (metricsPort < -1 || metricsPort > 65_535) {
            throw new picocli.CommandLine.ParameterException(spec.commandLine(), "--metrics-port " + metricsPort
                    + ": a port (0 to 65535, 0 = any free one), or -1 for none");
        }
        if (metricsPort == -1 && spec.commandLine().getParseResult().hasMatchedOption("--metrics-host")) {
            throw new picocli.CommandLine.ParameterException(spec.commandLine(), "--metrics-host needs --metrics-port: without it "
                    + "the worker serves no metrics");
        }
        if (metricsHost.isBlank()) { // the JDK takes "" for the loopback: a worker no other container could scrape
            throw new picocli.CommandLine.ParameterException(spec.commandLine(), "--metrics-host must not be empty (0.0.0.0: every address)");
        }
        try {
            InetAddress.getByName(metricsHost); // a typo fails here, as a usage error, not after the broker is asked
        } catch (UnknownHostException e) {
            throw new picocli.CommandLine.ParameterException(spec.commandLine(), "--metrics-host " + metricsHost
                    + ": not an address, nor a name this machine resolves");
        }
        if (workerId != null && workerId.isBlank()) { // an unset $ID: every such worker the same transactional id, fencing each other
            if (spec.commandLine().getParseResult().hasMatchedOption("--worker-id")) {
                throw new picocli.CommandLine.ParameterException(spec.commandLine(), "--worker-id must not be empty (leave it out for a random one)");
            }
            workerId = null; // an empty LOBSTREAM_PURGE_WORKER_ID: random
        }
        LobStreamConfig cfg = cluster.streamConfig(dataDir == null ? null : dataDir.toString());
        Path tablespaces = Path.of(cfg.get(LobStreamConfig.DATA_DIR)).resolve("tablespaces");
        if (Files.isDirectory(tablespaces) && !Files.isReadable(tablespaces)) {
            throw new picocli.CommandLine.ParameterException(spec.commandLine(), "cannot read " + tablespaces
                    + ": permission denied (run the worker as the node's user)");
        }
        if (!Files.isDirectory(tablespaces)) { // not refused: started with its node, the worker may come first
            System.err.println("purge worker: no tablespaces under " + cfg.get(LobStreamConfig.DATA_DIR) + " yet: a node on this host "
                    + "makes them as it starts (the worker looks every 10 s); if that is not the node's --data-dir, the purge "
                    + "group gives this worker no partition");
        }
        warnIfNoTopic(cfg);
        try {
            RegistryCheck.warnIfNotApicurio(cfg, RegistryCheck.Looker.PURGE, System.err); // as a node's start says it
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt(); // stopped while asking: the worker's run sees it
        }
        String id = workerId != null ? workerId : UUID.randomUUID().toString().substring(0, 8);
        long latency = readLatency == null ? 0 : readLatency.toNanos();
        if (latency > 0) {
            System.err.println("purge worker " + id + ": injecting " + readLatency.toNanos() / 1000 + " us per page read");
        }
        PrometheusMeterRegistry meters = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        MetricsEndpoint.bindProcessMetrics(meters); // for the process's life: nothing to close
        PurgeWorker worker = PurgeWorker.subscribed(cfg, cluster.storeConfig(), id, latency, meters);
        HttpServer metrics = null;
        if (metricsPort >= 0) {
            try {
                metrics = MetricsEndpoint.serve(meters, metricsHost, metricsPort);
            } catch (java.io.IOException e) {
                worker.close();
                // the machine's problem, not the arguments' (exit 1, as a node's HTTP port taken): no usage text
                throw new IllegalStateException("cannot serve metrics on " + metricsHost + ":" + metricsPort + ": " + e.getMessage(), e);
            }
            System.err.println("purge worker " + id + ": metrics at http://" + metricsHost + ":" + metrics.getAddress().getPort()
                    + "/metrics");
        }
        CountDownLatch done = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            if (done.getCount() > 0) { // not after a worker that ended on its own: the JVM's exit runs this hook too
                System.err.println("purge worker " + id + ": stopping (SIGTERM or Ctrl-C): its last transaction commits or "
                        + "aborts, up to 20 s");
            }
            worker.close();
            try {
                // not a join of the main thread: after run() it blocks in System.exit while hooks run. Long enough for
                // the worker's last commit and its clients' closes (5 s each), within compose's 30 s grace period
                done.await(20, TimeUnit.SECONDS);
            } catch (InterruptedException ignored) {
                Thread.currentThread().interrupt();
            }
        }, "purge-shutdown"));
        System.err.println("purge worker " + id + " running on " + cfg.bootstrap() + " (Ctrl-C to stop)");
        boolean ran = false;
        try {
            worker.run();
            ran = true;
        } finally {
            if (metrics != null) {
                metrics.stop(0);
            }
            if (json && ran) { // a run that threw ends with the CLI's one error object instead, not a second line
                System.out.println(summary(worker, latency));
                System.out.flush();
            }
            done.countDown();
        }
    }

    /**
     * Not refused either: a subscriber to a topic the cluster lacks waits for it without a word, which is right before its
     * node has started, and wrong for ever with a lob.topic.prefix other than the nodes'.
     */
    private static void warnIfNoTopic(LobStreamConfig cfg) {
        String undo = cfg.topics().undoHistory();
        try {
            if (BrokerCheck.saysNoTopic(cfg, undo, NO_TOPIC_WAIT)) {
                System.err.println("purge worker: no topic " + undo + " on " + cfg.bootstrap() + " yet: a writer node makes it as it "
                        + "starts; if the nodes run with another " + LobStreamConfig.TOPIC_PREFIX.name() + ", this worker purges nothing");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt(); // stopped while asking: the worker's run sees it
        }
    }

    private static String summary(PurgeWorker worker, long latencyNanos) {
        ObjectNode s = new ObjectMapper().createObjectNode();
        s.put("worker_id", worker.workerId());
        s.put("versions", worker.versionsPurged());
        ObjectNode read = s.putObject("pages_read");
        for (PageType t : List.of(PageType.ROOT, PageType.INDEX, PageType.DATA)) {
            read.put(t.name().toLowerCase(Locale.ROOT), worker.pagesRead(t));
        }
        if (latencyNanos > 0) {
            s.put("read_latency_us", latencyNanos / 1000);
        }
        return s.toString();
    }
}
