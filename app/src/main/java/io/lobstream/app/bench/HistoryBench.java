package io.lobstream.app.bench;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.lobstream.app.demo.LoadGenerator;
import io.lobstream.app.embedded.EmbeddedPipeline;
import io.lobstream.client.LobClient;
import io.lobstream.ingest.LobNode;
import io.lobstream.purge.PurgeWorkerPool;
import io.lobstream.store.StoreStats;
import io.micrometer.core.instrument.Counter;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;

/**
 * {@code ./lobstream bench history}: the shape of MySQL bug #107473 through the whole pipeline.
 * {@code --rows} LOBs are written once; then {@code --threads} producers update random ones with
 * values of {@code --blob-size} for {@code --duration}, while a node applies them and purge
 * workers reclaim the superseded versions. Every second it samples history length (versions
 * superseded and not yet reclaimed), tablespace bytes (all pages, free ones included: the file
 * does not shrink) and live bytes; after the writes stop it measures the time until every
 * acknowledged update is applied and history is 0.
 */
@Command(name = "history", mixinStandardHelpOptions = true,
        description = {"History length and space under the MySQL bug #107473 load (many threads updating large LOBs), "
                + "through the embedded broker, a node and purge workers; then the drain time once the writes stop."})
public final class HistoryBench implements Callable<Integer> {
    @Option(names = "--rows", defaultValue = "1000", description = "LOBs, written once before the updates (default: ${DEFAULT-VALUE}).")
    int rows;

    @Option(names = "--blob-size", defaultValue = "300k", description = "Value size or range, e.g. 300k or 10k-300k (default: ${DEFAULT-VALUE}).")
    SizeRange blobSize;

    @Option(names = {"--threads", "--producers"}, defaultValue = "16", description = "Producer threads (default: ${DEFAULT-VALUE}).")
    int threads;

    @Option(names = "--duration", defaultValue = "120s", description = "How long to update (default: ${DEFAULT-VALUE}).")
    Duration duration;

    @Option(names = "--warmup", defaultValue = "60s",
            description = "Updates before the measured --duration, not sampled (default: ${DEFAULT-VALUE}): on 2 cores the JIT "
                    + "of a JVM running broker, node and purge takes about a minute of load to settle, and history piles up "
                    + "while it compiles.")
    Duration warmup;

    @Option(names = "--purge-workers", defaultValue = "2", description = "Purge workers, in this process (default: ${DEFAULT-VALUE}).")
    int purgeWorkers;

    @Option(names = "--partitions", description = "Partitions = tablespaces (default: lob.topic.partitions, 8 unless -c sets it).")
    Integer partitions;

    @Option(names = "--drain-timeout", defaultValue = "300s", description = "How long to wait for history to reach 0 (default: ${DEFAULT-VALUE}).")
    Duration drainTimeout;

    @Mixin
    BenchOptions options;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        options.checkConfig(spec, Map.of());
        partitions = options.partitions(spec, partitions);
        options.checkOutputs(spec);
        options.checkDataDirEmpty(spec);
        if (rows < 1 || threads < 1 || purgeWorkers < 1 || duration.isNegative() || duration.isZero()
                || drainTimeout.toSeconds() < 1) {
            throw new CommandLine.ParameterException(spec.commandLine(), "need --rows, --threads, --purge-workers >= 1, a positive "
                    + "--duration and --drain-timeout >= 1s");
        }
        BenchOutput out = new BenchOutput(System.err, List.of("t_s", "updates_acked", "updates_applied", "history_length", "tablespace_mb", "live_mb", "space_ratio"));
        out.note(String.format(Locale.ROOT, "bench history: %d rows, %s values, %d threads, %s, %d purge workers, %d partitions",
                rows, blobSize, threads, duration, purgeWorkers, partitions));
        long t0 = System.nanoTime();
        // the purge workers close before the pipeline (resources close in reverse): they read its tablespaces
        try (EmbeddedPipeline pipeline = EmbeddedPipeline.start(options.dataDir, "lobstream-bench-history-", partitions, options.config);
             PurgeWorkerPool purge = PurgeWorkerPool.subscribed(pipeline.config(), pipeline.storeConfig(), "history",
                     pipeline.node().meters(), purgeWorkers)) {
            LobNode node = pipeline.node();
            List<double[]> history = new ArrayList<>();
            List<double[]> tablespaceMb = new ArrayList<>();
            List<double[]> liveMb = new ArrayList<>();
            long updates;
            double seconds;
            long drainNanos;
            long failed;
            boolean allApplied;
            double ratioMax = 0;
            try (LobClient client = new LobClient(pipeline.config())) {
                out.note(String.format(Locale.ROOT, "pipeline up after %.1f s; writing the %d rows", (System.nanoTime() - t0) / 1e9, rows));
                populate(client);
                long rowsDeadline = System.nanoTime() + Duration.ofMinutes(5).toNanos();
                while (node.tablespaces().totals().lobs() < rows) {
                    if (System.nanoTime() > rowsDeadline) {
                        throw new IllegalStateException("the node did not apply the rows within 5 minutes");
                    }
                    Thread.sleep(50);
                }
                out.note("warming up for " + warmup + ", then updating for " + duration);
                long appliedAtLoadStart = applied(node);
                // the partitions' counters, all there once the rows are applied: read without a registry search
                List<Counter> appliedCounters = List.copyOf(node.meters().find("lob_commands_applied").counters());
                LoadGenerator load = new LoadGenerator(client, rows, blobSize.min(), blobSize.max(), 0.0);
                // as the bug report's clients, which wait for their updates: a bounded backlog (see PipelineBench.MAX_UNAPPLIED)
                load.writeWhile(() -> load.acked() - (count(appliedCounters) - appliedAtLoadStart) < PipelineBench.MAX_UNAPPLIED);
                load.start(threads);
                Thread.sleep(warmup.toMillis());
                long appliedBefore = applied(node);
                long ackedBefore = load.acked();
                long start = System.nanoTime();
                long end = start + duration.toNanos();
                long next = start;
                while (System.nanoTime() < end) {
                    next += 1_000_000_000L;
                    Thread.sleep(Math.max(0, (next - System.nanoTime()) / 1_000_000));
                    double t = (System.nanoTime() - start) / 1e9;
                    StoreStats st = node.tablespaces().totals();
                    double ratio = ratio(st);
                    ratioMax = Math.max(ratioMax, ratio);
                    history.add(new double[]{t, st.historyLength()});
                    tablespaceMb.add(new double[]{t, st.tablespaceBytes() / 1e6});
                    liveMb.add(new double[]{t, st.bytesLive() / 1e6});
                    out.row(Math.round(t), load.acked() - ackedBefore, applied(node) - appliedBefore, st.historyLength(), st.tablespaceBytes() / 1e6, st.bytesLive() / 1e6, ratio);
                }
                load.close(); // stops sending and waits for every update in flight to be acknowledged
                long stopped = System.nanoTime();
                seconds = (stopped - start) / 1e9;
                updates = load.acked() - ackedBefore;
                out.note(String.format(Locale.ROOT, "writes stopped: %d updates acknowledged (%d failed) in %.1f s; draining",
                        updates, load.failed(), seconds));
                long deadline = stopped + drainTimeout.toNanos();
                // drained: every update acknowledged (warm-up ones too) applied, and history back to 0
                while ((applied(node) - appliedAtLoadStart < load.acked() || node.tablespaces().totals().historyLength() > 0)
                        && System.nanoTime() < deadline) {
                    Thread.sleep(20);
                }
                drainNanos = System.nanoTime() - stopped;
                // history back to 0 alone is no success: a writer that stopped applying leaves nothing to purge
                allApplied = applied(node) - appliedAtLoadStart >= load.acked();
                failed = load.failed();
            }
            // The last reclaims are applied; the writer's next commit syncs and gives the free tail back
            // (lob.shrink.min.pages). Space at the end is read once the tablespaces have settled.
            StoreStats endStats = node.tablespaces().settledTotals(Duration.ofSeconds(2), Duration.ofSeconds(20));
            double updatesPerSecond = updates / seconds;
            double p99 = percentile(history.stream().mapToDouble(p -> p[1]).toArray(), 0.99);
            ObjectNode j = BenchOutput.newJson();
            j.put("updates_per_s", BenchOutput.round(updatesPerSecond, 1));
            j.put("history_p99", BenchOutput.round(p99, 1));
            j.put("history_p99_seconds", BenchOutput.round(updatesPerSecond == 0 ? 0 : p99 / updatesPerSecond, 3));
            j.put("history_max", history.stream().mapToDouble(p -> p[1]).max().orElse(0));
            // the same over the second half of the run: the steady state, without the start of a cold pipeline
            double p99Late = percentile(history.subList(history.size() / 2, history.size()).stream().mapToDouble(p -> p[1]).toArray(), 0.99);
            j.put("history_p99_second_half", BenchOutput.round(p99Late, 1));
            j.put("history_p99_seconds_second_half", BenchOutput.round(updatesPerSecond == 0 ? 0 : p99Late / updatesPerSecond, 3));
            j.put("drain_seconds", BenchOutput.round(drainNanos / 1e9, 2));
            j.put("history_length_end", endStats.historyLength());
            j.put("all_applied", allApplied);
            j.put("updates_failed", failed);
            j.put("space_ratio_end", BenchOutput.round(ratio(endStats), 3));
            j.put("space_ratio_max", BenchOutput.round(Math.max(ratioMax, ratio(endStats)), 3));
            j.put("tablespace_bytes_end", endStats.tablespaceBytes());
            j.put("live_bytes_end", endStats.bytesLive());
            j.put("pages_free_end", endStats.pagesFree());
            j.put("rows", rows);
            j.put("blob_size", blobSize.toString());
            j.put("threads", threads);
            j.put("warmup_s", warmup.toSeconds());
            j.put("duration_s", BenchOutput.round(seconds, 1));
            j.put("updates", updates);
            j.put("purge_workers", purgeWorkers);
            j.put("partitions", partitions);
            j.put("tablespace_shrinks", sum(node, "lob_tablespace_shrinks"));
            j.put("tablespace_shrunk_pages", sum(node, "lob_tablespace_shrunk_pages"));
            j.put("versions_reclaimed", (long) node.meters().find("lob_reclaims").tag("outcome", "applied").counters().stream()
                    .mapToDouble(Counter::count).sum());
            out.writeCsv(options.csv);
            Map<String, List<double[]>> series = BenchOutput.ordered();
            series.put("history length (versions)", history);
            series.put("tablespace (MB, free pages included)", tablespaceMb);
            series.put("live (MB)", liveMb);
            BenchOutput.lineChart(options.chart, String.format(Locale.ROOT, "LobStream under the #107473 load: %d rows, %s values, %d threads",
                    rows, blobSize, threads), "seconds", "versions / MB", series);
            if (options.json) {
                BenchOutput.printJson(j);
            } else {
                out.note(j.toPrettyString());
            }
            return endStats.historyLength() == 0 && allApplied && failed == 0 ? 0 : 1;
        }
    }

    /** Writes every row once (ids as the load generator names them), bounded in flight. */
    private void populate(LobClient client) throws Exception {
        byte[] noise = new byte[blobSize.max() + 4096];
        new Random(3).nextBytes(noise);
        Semaphore inFlight = new Semaphore(64);
        List<CompletableFuture<?>> all = new ArrayList<>();
        for (int i = 0; i < rows; i++) {
            inFlight.acquire();
            int size = blobSize.next();
            int from = i % 4096;
            all.add(client.put(LoadGenerator.id(i), Arrays.copyOfRange(noise, from, from + size), "application/octet-stream")
                    .whenComplete((md, e) -> inFlight.release()));
        }
        client.flush();
        CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).get();
    }

    private static long applied(LobNode node) {
        return sum(node, "lob_commands_applied");
    }

    private static long sum(LobNode node, String counter) {
        return count(node.meters().find(counter).counters());
    }

    private static long count(Collection<Counter> counters) {
        double sum = 0;
        for (Counter c : counters) {
            sum += c.count();
        }
        return (long) sum;
    }

    private static double ratio(StoreStats st) {
        return st.bytesLive() == 0 ? 0 : (double) st.tablespaceBytes() / st.bytesLive();
    }

    static double percentile(double[] values, double q) {
        if (values.length == 0) {
            return 0;
        }
        double[] v = values.clone();
        Arrays.sort(v);
        int i = (int) Math.ceil(q * v.length) - 1;
        return v[Math.max(0, Math.min(v.length - 1, i))];
    }
}
