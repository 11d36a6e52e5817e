package io.lobstream.app.cli;

import io.lobstream.purge.PurgeWorker;
import io.lobstream.schema.LobStreamConfig;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.time.Duration;
import java.util.UUID;

/** {@code ./lobstream purge}: one purge worker process. */
@Command(name = "purge", mixinStandardHelpOptions = true,
        description = {"Run a purge worker: a member of the consumer group on the undo-history topic.",
                "It reads the node's tablespaces read-only, so it must run on the host (or shared volume) that holds "
                        + "the node's data directory. Start more to purge faster; they split the partitions."})
final class PurgeCommand implements Runnable {
    @Mixin
    ClusterOptions cluster;

    @Option(names = "--data-dir", defaultValue = "lobstream-data", description = "The node's data directory (default: ${DEFAULT-VALUE}).")
    String dataDir;

    @Option(names = "--worker-id", description = "Stable id of this worker (its transactional id); default: random.")
    String workerId;

    @Option(names = "--read-latency", paramLabel = "DURATION",
            description = "Add this delay to every page read (benchmarks: models remote block storage), e.g. 1ms.")
    Duration readLatency;

    @Override
    public void run() {
        LobStreamConfig cfg = cluster.streamConfig(dataDir);
        String id = workerId != null ? workerId : UUID.randomUUID().toString().substring(0, 8);
        long latency = readLatency == null ? 0 : readLatency.toNanos();
        if (latency > 0) {
            System.err.println("purge worker " + id + ": injecting " + readLatency.toNanos() / 1000 + " us per page read");
        }
        PurgeWorker worker = new PurgeWorker(cfg, cluster.storeConfig(), id, latency, new SimpleMeterRegistry());
        Thread main = Thread.currentThread();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            worker.close();
            try {
                main.join(10_000);
            } catch (InterruptedException ignored) {
                Thread.currentThread().interrupt();
            }
        }, "purge-shutdown"));
        System.err.println("purge worker " + id + " running on " + cfg.bootstrap() + " (Ctrl-C to stop)");
        worker.run();
    }
}
