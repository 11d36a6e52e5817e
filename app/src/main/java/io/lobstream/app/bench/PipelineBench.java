package io.lobstream.app.bench;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.lobstream.app.DataDirs;
import io.lobstream.app.demo.LoadGenerator;
import io.lobstream.app.embedded.ClusterProcess;
import io.lobstream.app.embedded.EmbeddedKafka;
import io.lobstream.app.embedded.NodeProcess;
import io.lobstream.client.LobClient;
import io.lobstream.schema.LobStreamConfig;
import org.HdrHistogram.Histogram;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;

import static io.lobstream.app.bench.BenchOutput.round;

/**
 * {@code ./lobstream bench pipeline}: end to end on the embedded broker, produce → applied, with
 * a writer node and its purge workers running; and, in the same run and on the same broker, a
 * plain KafkaProducer writing values of the same sizes, for the ratio, and the same producer
 * with a plain consumer reading all it writes, Kafka's own produce → consume (see
 * {@link KafkaBaseline}). The plain producer runs first: its warm-up fills the page cache, so
 * that every phase is measured with it full (see {@link KafkaBaseline#produce}). When the warm-up
 * cannot fill it in its time (much free memory, a slow VM), the plain producer is measured again
 * after the pipeline phase, with the page cache full, and the ratio uses that figure.
 *
 * <p>Each role runs where it would in a deployment, in a JVM of its own: the broker and registry
 * ({@code lobstream cluster}), the writer node with its purge workers ({@code lobstream node}),
 * and the producers (this JVM). No JIT, heap or GC is shared between them, so neither the
 * broker nor the node pays for the load generator's, as in a deployment. Both phases use the
 * same broker and the same producer settings; in the raw phase the node is idle.
 *
 * <p>Apply latency is observed without touching the write path: every acknowledged command's
 * (partition, offset, send time) is queued, and a tracker thread polls the node's
 * {@code GET /status} every {@link ApplyLatencyTracker#POLL_INTERVAL_NANOS 20 ms} for the offset of
 * {@code lob.commands} each tablespace has applied (the store records it in the same index batch
 * that makes the new version readable); a command counts as applied when that offset reaches it.
 * Figures include up to about 21 ms of polling delay.
 */
@Command(name = "pipeline", mixinStandardHelpOptions = true,
        description = {"End-to-end pipeline benchmark on the embedded broker: producers → lob.commands → writer node "
                + "(Kafka Streams, exactly-once) → tablespace, with purge workers running. Reports TPS, MB/s, p50/p99 apply "
                + "latency (send → applied) and, in the same run, a plain Kafka producer's throughput for the same payloads "
                + "(measured again after the pipeline when its warm-up could not fill the page cache: raw_kafka_measured_again). "
                + "Apply = readable on the node; the writer's commit follows. Exit 1 when a send failed (figures printed all the same).",
                "JSON (last line with --json): tps, mb_per_s, p50_apply_ms, p99_apply_ms, raw_kafka_mb_per_s, ratio_vs_raw_kafka (null "
                        + "when the raw figure is not comparable), ...; "
                        + "on Linux also cpu_ms_per_mb and raw_kafka_cpu_ms_per_mb (the whole machine's CPU per MB in each phase), cpu_busy, raw_kafka_cpu_busy, "
                        + "and cpu_ms_per_mb_by_process, raw_kafka_cpu_ms_per_mb_by_process (broker, node and load generator JVMs)."})
public final class PipelineBench implements Callable<Integer> {
    enum Workload { UPDATE, INSERT }

    @Option(names = "--workload", defaultValue = "update", description = "update (random ids among --rows, preloaded) or insert (new ids) (default: ${DEFAULT-VALUE}).")
    Workload workload;

    @Option(names = "--rows", defaultValue = "1000", description = "Ids updated at random (update workload; default: ${DEFAULT-VALUE}).")
    int rows;

    @Option(names = "--blob-size", defaultValue = "256k", converter = SizeRange.Converter.class,
            description = "Value size, or a range like 10k-300k (default: ${DEFAULT-VALUE}); at most lob.chunk.size (512k).")
    SizeRange blobSize;

    @Option(names = "--producers", defaultValue = "4", description = "Producer threads (default: ${DEFAULT-VALUE}).")
    int producers;

    @Option(names = "--duration", defaultValue = "30s", description = "Load time of each phase (default: ${DEFAULT-VALUE}).")
    Duration duration;

    @Option(names = "--warmup", defaultValue = "60s",
            description = "Load before each phase is measured (default: ${DEFAULT-VALUE}). On 2 cores the JIT of the node's and "
                    + "the broker's JVMs takes about a minute of load to settle; measured earlier, the compiler threads took a "
                    + "third of the CPU.")
    Duration warmup;

    @Option(names = "--partitions", description = "Partitions = tablespaces (default: lob.topic.partitions, 8 unless -c sets it).")
    Integer partitions;

    @Option(names = "--purge-workers", defaultValue = "2", description = "Purge workers in the node's process (default: ${DEFAULT-VALUE}).")
    int purgeWorkers;

    @Option(names = "--kafka-e2e", negatable = true, defaultValue = "true", fallbackValue = "true",
            description = "Between the raw and pipeline phases, measure the plain producer while a plain consumer reads all it "
                    + "writes: Kafka's own produce → consume on this machine, the most a pipeline reading its input once could "
                    + "apply (kafka_e2e_mb_per_s, ratio_vs_kafka_e2e). --no-kafka-e2e skips it (default: on).")
    boolean kafkaE2e;

    @Option(names = "--drain-timeout", defaultValue = "120s",
            description = "How long to wait for the writer to apply what was sent, then for purge to drain history (default: ${DEFAULT-VALUE}).")
    Duration drainTimeout;

    @CommandLine.Mixin
    BenchOptions options;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    /**
     * Commands acknowledged and not yet applied at most, in the pipeline phase; the producers wait
     * below it. Kafka acknowledges a command long before the writer applies it: bounded only by
     * what is in flight to Kafka, producers cheaper than the writer leave it ever further behind,
     * and apply latency then says how long the load ran, not what the pipeline does (session 13:
     * p99 of 12 to 23 s). With the bound, the phase measures what the pipeline sustains with a
     * bounded backlog, as producers waiting for their writes to be applied load it.
     */
    static final int MAX_UNAPPLIED = 4 * KafkaBaseline.IN_FLIGHT;
    /**
     * The heap of the broker's and the node's JVMs, as Kafka's own start scripts give a broker: a
     * fixed size (theirs is 1 GiB), here also touched at start. With the JVM's default (a quarter
     * of the memory at most, 1/64 at first) the heap kept growing through the run, and the pages
     * it took were fresh ones, dear on this VM: zeroing new arrays (fetch responses, record values)
     * was 18.7 % of the node's CPU samples, 4.2 % with this (session 13).
     */
    private static final List<String> SERVER_HEAP = List.of("-Xms2g", "-Xmx2g", "-XX:+AlwaysPreTouch");

    /** {@link #SERVER_HEAP}, unless the child's environment variable sets a heap size itself. */
    private static List<String> serverHeap(String javaOptsEnv) {
        String set = System.getenv(javaOptsEnv);
        return set != null && set.contains("-Xm") ? List.of() : SERVER_HEAP;
    }

    /** How many times {@code --warmup} the raw phase's warm-up may last to fill the page cache. */
    private static final int MAX_RAW_WARMUP_FACTOR = 4;
    /**
     * A scratch topic keeps at most this many times the raw phase's page-cache fill
     * ({@code retention.bytes}): its newest records, the ones the page cache may still hold; the
     * older segments, evicted from it long since, go. Unbounded, a raw phase at 880 MB/s left too
     * little disk for the kafka-e2e phase, which then did not run (session 32).
     */
    static final double SCRATCH_RETENTION_FACTOR = 1.5;

    @Override
    public Integer call() throws Exception {
        options.checkConfig(spec, Map.of());
        partitions = options.partitions(spec, partitions);
        if (rows < 1 || producers < 1 || partitions < 1 || purgeWorkers < 0 || duration.toSeconds() < 2 || warmup.isNegative()
                || drainTimeout.toSeconds() < 1 || blobSize.min() < 1) {
            throw new CommandLine.ParameterException(spec.commandLine(), "need --rows >= 1, --producers >= 1, --partitions >= 1, "
                    + "--purge-workers >= 0, --duration >= 2s (a CPU window needs two samples), --warmup >= 0, --drain-timeout >= 1s, "
                    + "--blob-size >= 1 byte");
        }
        options.checkOutputs(spec);
        // A larger value goes as an upload of several records while the raw phase would send it as one: not the same payloads.
        int chunkSize = new LobStreamConfig(options.config).get(LobStreamConfig.CHUNK_SIZE);
        if (blobSize.max() > chunkSize) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--blob-size " + blobSize + " is over lob.chunk.size ("
                    + chunkSize + " bytes): each command must be one record, as each raw-phase value is");
        }
        boolean temporary = options.dataDir == null;
        Path dir = temporary ? DataDirs.temporary("lobstream-bench-pipeline-") : Files.createDirectories(options.dataDir);
        BenchOutput out = new BenchOutput(System.err, List.of("phase", "second", "commands_per_s", "mb_per_s", "history_length"));
        out.note(String.format("bench pipeline: %s, %s values, %s, %d producers, %s measured per phase after %s warm-up, "
                        + "%d partitions, %d purge workers", workload.name().toLowerCase(Locale.ROOT), blobSize,
                workload == Workload.UPDATE ? rows + " rows" : "new ids", producers, duration, warmup, partitions, purgeWorkers));
        ObjectNode summary = BenchOutput.newJson();
        boolean failed;
        ScratchTopics scratch = new ScratchTopics(dir, partitions);
        try (ClusterProcess cluster = ClusterProcess.start(dir, dir.resolve("bench-logs"), Duration.ofSeconds(180),
                serverHeap(ClusterProcess.JAVA_OPTS_ENV))) {
            LobStreamConfig cfg = cluster.nodeConfig(dir, partitions, options.config);
            Map<String, String> nodeConfig = new HashMap<>(options.config);
            nodeConfig.put(LobStreamConfig.PARTITIONS.name(), Integer.toString(partitions));
            try (NodeProcess node = NodeProcess.start("bench", cluster.bootstrap(), cluster.registryUrl(), dir.resolve("node"),
                    EmbeddedKafka.freePort(), purgeWorkers, nodeConfig, dir.resolve("bench-logs"), serverHeap(NodeProcess.JAVA_OPTS_ENV))) {
                node.awaitRunning(partitions, Duration.ofSeconds(120));
                Map<String, Supplier<Duration>> processes = new LinkedHashMap<>();
                processes.put("broker", cluster::cpu);
                processes.put("node", node::cpu);
                processes.put("load", MachineCpu::thisProcess);
                Figures figures = measure(cfg, node, processes, scratch, dir, out);
                figures.note(out);
                figures.writeTo(summary.put("workload", workload.name().toLowerCase(Locale.ROOT)).put("blob_size", blobSize.toString())
                        .put("rows", workload == Workload.UPDATE ? rows : 0).put("producers", producers)
                        .put("duration_s", duration.toSeconds()).put("warmup_s", warmup.toSeconds()).put("partitions", partitions)
                        .put("purge_workers", purgeWorkers));
                failed = figures.failed();
            }
        } finally {
            if (temporary) {
                DataDirs.deleteTree(dir);
            } else {
                scratch.removeFiles();
            }
        }
        out.writeCsv(options.csv);
        if (options.chart != null) {
            chart(out);
        }
        if (options.json) {
            BenchOutput.printJson(summary);
        }
        return failed ? 1 : 0; // a run with failed sends is no measure of the pipeline (the figures are printed all the same)
    }

    /**
     * The phases, in their order: the plain producer (its warm-up fills the page cache), Kafka's own produce → consume,
     * the pipeline, and the plain producer measured again if its first warm-up could not fill the page cache.
     */
    private Figures measure(LobStreamConfig cfg, NodeProcess node, Map<String, Supplier<Duration>> processes, ScratchTopics scratch,
                            Path dir, BenchOutput out) throws Exception {
        long fill = Math.min(MachineMemory.freeBytes(), Files.getFileStore(dir).getUsableSpace() / 3);
        long scratchBytes = (long) (SCRATCH_RETENTION_FACTOR * fill);
        // created now: a topic used right after creation fails over leadership at first
        String rawTopic = scratch.create(cfg, "bench.raw", scratchBytes);
        String e2eTopic = kafkaE2e ? scratch.create(cfg, "bench.e2e", scratchBytes) : null;
        writeBack(out);
        // raw first: its warm-up fills the page cache, so every phase is measured with it full (see KafkaBaseline.produce)
        KafkaBaseline kafka = new KafkaBaseline(cfg, partitions, blobSize, rows, producers, duration, processes, out);
        KafkaBaseline.Result raw = kafka.produce(rawTopic, warmup, warmup.multipliedBy(MAX_RAW_WARMUP_FACTOR), fill);
        KafkaBaseline.Result e2e = null;
        long freeing = 0; // bytes of deleted topics the broker removes from the disk seconds later
        if (e2eTopic != null) {
            // A quarter of the warm-up: the broker and the producer are warm, only the fetch path is new (and the
            // disk must hold a second topic). It writes about the memory's worth again, so the raw topic's pages
            // have left the page cache when it is deleted after it (to make room on the disk): the pipeline then
            // still finds the page cache full.
            Duration e2eWarmup = warmup.dividedBy(4);
            if (scratch.room(Math.min(scratchBytes, raw.mbPerS() * 1e6 * e2eWarmup.plus(duration).toSeconds()))) {
                writeBack(out);
                e2e = kafka.produceAndConsume(e2eTopic, e2eWarmup);
                freeing = scratch.bytes(rawTopic);
                scratch.delete(cfg, rawTopic);
            } else {
                out.note("kafka e2e phase skipped: the disk may not hold its data next to the raw phase's");
                scratch.delete(cfg, e2eTopic); // never written: frees nothing
            }
        }
        // the pipeline's preload and warm-up take longer than those seconds before its data fills the disk
        boolean pipelineOnFreshMemory = false;
        if (!scratch.live().isEmpty() && !scratch.room(pipelineBytes(raw) - freeing)) {
            out.note("the disk may not hold the pipeline's data next to the scratch topic; deleted it now, "
                    + "so the pipeline phase takes fresh memory for its page cache (pipeline_on_fresh_memory)");
            scratch.delete(cfg, scratch.live().get(0));
            pipelineOnFreshMemory = true;
        }
        writeBack(out);
        Pipeline p = pipeline(cfg, node, processes, out);
        long historyEnd = historyAfterDrain(node); // now: the raw phase measured again below runs after the drain
        // the commands only, as the demo's key: the writer dead-letters reclaims there too, tagged topic=lob.reclaim
        long deadLettered = (long) prometheusSum(node.metrics(), "lob_commands_dead_lettered_total", "topic", cfg.topics().commands());
        // only now: deleted files give their pages back, and the pipeline would take fresh memory again
        List<String> deleted = scratch.deleteAll(cfg);
        KafkaBaseline.Result again = raw.pageCacheFull() ? null : rawAgain(cfg, kafka, scratch, deleted, scratchBytes, out);
        return new Figures(p, historyEnd, deadLettered, again == null ? raw : again, again == null ? null : raw, e2e,
                pipelineOnFreshMemory);
    }

    /**
     * The plain producer measured again, after the pipeline, when its first warm-up ended before the page cache was full:
     * the broker then took fresh memory in the window, dear on this VM, and the figure said how the VM was (BENCHMARKS.md,
     * "Why the raw phase moves so much"). Measured again, on a page cache as full as the pipeline had it, that is the
     * figure to compare with. Null when the disk may not hold it.
     */
    private KafkaBaseline.Result rawAgain(LobStreamConfig cfg, KafkaBaseline kafka, ScratchTopics scratch, List<String> deleted,
                                          long scratchBytes, BenchOutput out) throws Exception {
        if (!scratch.room(scratchBytes)) {
            out.note("raw phase not measured again (the disk may not hold it): its figure, on fresh memory, is not comparable");
            return null;
        }
        String topic = scratch.create(cfg, "bench.raw-again", scratchBytes);
        writeBack(out); // (after the creation, as for the others: a topic used right after fails over leadership)
        Duration againWarmup = warmup.dividedBy(4); // as the e2e phase's: everything but the topic is warm
        // The deleted topics' files leave the disk seconds later (log.segment.delete.delay.ms): not in the window, where
        // unlinking gigabytes would slow the producer and free their pages. The warm-up then writes the memory they freed,
        // so the page cache is as full as the pipeline had it.
        scratch.awaitRemoved(deleted, out);
        KafkaBaseline.Result again = kafka.produce("raw-kafka-again", topic, againWarmup, warmup, MachineMemory.freeBytes());
        scratch.delete(cfg, topic);
        return again;
    }

    /**
     * What a run measured: the pipeline phase, the plain producer's figure the ratio compares with ({@code raw}: the one
     * measured again, if it was, {@code onFreshMemory} then the first), and Kafka's produce → consume (null if skipped).
     */
    private record Figures(Pipeline pipeline, long historyEnd, long deadLettered, KafkaBaseline.Result raw,
                           KafkaBaseline.Result onFreshMemory, KafkaBaseline.Result e2e, boolean pipelineOnFreshMemory) {
        /**
         * Whether the raw figure is one to make a ratio of. One taken on fresh memory (the second too, when its warm-up
         * ran out before the page cache was full) says how the VM was, not what Kafka does: no ratio is made of it, lest a
         * script reading only that key take it for one.
         */
        boolean comparable() {
            return raw.pageCacheFull();
        }

        double ratio() {
            return raw.mbPerS() == 0 ? 0 : pipeline.mbPerS / raw.mbPerS();
        }

        /** A failed send in any phase, or a command the writer refused: no measure of the pipeline. */
        boolean failed() {
            return pipeline.failed > 0 || deadLettered > 0 || raw.failed() > 0 || onFreshMemory != null && onFreshMemory.failed() > 0
                    || e2e != null && e2e.failed() > 0;
        }

        void note(BenchOutput out) {
            if (onFreshMemory != null) {
                out.note(String.format("raw phase measured again after the pipeline: %.1f MB/s (%.1f MB/s at first, on fresh memory); %s",
                        raw.mbPerS(), onFreshMemory.mbPerS(), comparable() ? "the ratio compares with the second"
                                : "its page cache was not full either: not comparable"));
            }
            Pipeline p = pipeline;
            out.note(String.format("pipeline %.1f commands/s, %.1f MB/s, apply latency p50 %.1f ms p99 %.1f ms; raw Kafka %.1f MB/s; ratio %s%s",
                    p.tps, p.mbPerS, p.p50Ms, p.p99Ms, raw.mbPerS(), comparable() ? String.format("%.2f", ratio()) : "not comparable",
                    e2e == null ? "" : String.format("; Kafka produce → consume %.1f MB/s (ratio %.2f)", e2e.mbPerS(), p.mbPerS / e2e.mbPerS())));
            if (deadLettered > 0) {
                // a refused command moves the applied offset as an applied one does: its bytes are in the figures above
                out.note("pipeline phase: " + deadLettered + " commands dead-lettered (refused, yet counted as applied)");
            }
            if (p.cpu().measured() && raw.cpu().measured()) {
                out.note(String.format("machine CPU per MB: pipeline %.1f ms (%.0f %% busy; %s), raw Kafka %.1f ms (%.0f %% busy; %s)%s",
                        p.cpu().msPerMb(), 100 * p.cpu().busyFraction(), KafkaBaseline.byProcess(p.cpu()),
                        raw.cpu().msPerMb(), 100 * raw.cpu().busyFraction(), KafkaBaseline.byProcess(raw.cpu()),
                        e2e == null ? "" : String.format(", Kafka produce → consume %.1f ms (%.0f %% busy; %s)", e2e.cpu().msPerMb(),
                                100 * e2e.cpu().busyFraction(), KafkaBaseline.byProcess(e2e.cpu()))));
            }
        }

        /** The figures' JSON keys, after the run's settings that call() puts, in the order the bench has always printed them. */
        void writeTo(ObjectNode summary) {
            Pipeline p = pipeline;
            summary.put("commands", p.commands).put("commands_failed", p.failed).put("tps", round(p.tps)).put("mb_per_s", round(p.mbPerS))
                    .put("acked_tps", round(p.ackedTps))
                    .put("p50_apply_ms", round(p.p50Ms)).put("p99_apply_ms", round(p.p99Ms)).put("max_apply_ms", round(p.maxMs))
                    .put("history_length_max", p.historyMax)
                    .put("history_length_end", historyEnd)
                    .put("commands_dead_lettered", deadLettered)
                    .put("raw_kafka_tps", round(raw.tps())).put("raw_kafka_mb_per_s", round(raw.mbPerS()))
                    .put("raw_kafka_failed", raw.failed()).put("raw_kafka_page_cache_full", raw.pageCacheFull())
                    .put("raw_kafka_measured_again", onFreshMemory != null).put("pipeline_on_fresh_memory", pipelineOnFreshMemory);
            if (onFreshMemory != null) {
                summary.put("raw_kafka_fresh_memory_mb_per_s", round(onFreshMemory.mbPerS()));
            }
            if (e2e != null) {
                summary.put("kafka_e2e_mb_per_s", round(e2e.mbPerS())).put("kafka_e2e_produced_mb_per_s", round(e2e.producedMbPerS()))
                        .put("ratio_vs_kafka_e2e", round(p.mbPerS / e2e.mbPerS()));
            }
            if (comparable()) {
                summary.put("ratio_vs_raw_kafka", round(ratio())); // the figure, after the others: last before the CPU figures
            } else {
                summary.putNull("ratio_vs_raw_kafka");
            }
            if (p.cpu().measured() && raw.cpu().measured()) {
                // what each phase cost the whole machine per MB, and how busy it was: the ratio's context
                cpuFigures(summary, "", p.cpu());
                cpuFigures(summary, "raw_kafka_", raw.cpu());
                if (e2e != null && e2e.cpu().measured()) {
                    cpuFigures(summary, "kafka_e2e_", e2e.cpu());
                }
            }
        }
    }

    /** Each phase's MB/s, second by second, as {@code --chart} draws it. */
    private void chart(BenchOutput out) throws IOException {
        Map<String, List<double[]>> series = BenchOutput.ordered();
        for (List<Object> row : out.rows()) {
            String name = switch ((String) row.get(0)) {
                case "pipeline" -> "LobStream (applied)";
                case "kafka-e2e" -> "Kafka producer → consumer (consumed)";
                case "raw-kafka-again" -> "raw Kafka producer, measured again after (acknowledged)";
                default -> "raw Kafka producer (acknowledged)";
            };
            series.computeIfAbsent(name, k -> new ArrayList<>())
                    .add(new double[]{((Number) row.get(1)).doubleValue(), ((Number) row.get(3)).doubleValue()});
        }
        BenchOutput.lineChart(options.chart, String.format("%s of %s values, %d producers: MB/s each second", workload.name().toLowerCase(Locale.ROOT),
                blobSize, producers), "second", "MB/s", series);
    }

    private record Pipeline(long commands, long failed, double tps, double mbPerS, double ackedTps, double p50Ms, double p99Ms,
                            double maxMs, long historyMax, MachineCpu.Window cpu) {
    }

    private Pipeline pipeline(LobStreamConfig cfg, NodeProcess node, Map<String, Supplier<Duration>> processes, BenchOutput out)
            throws Exception {
        ApplyLatencyTracker tracker = new ApplyLatencyTracker(node, partitions);
        Thread trackerThread = new Thread(tracker, "apply-tracker");
        trackerThread.setDaemon(true);
        trackerThread.start();
        try (LobClient client = new LobClient(cfg)) {
            if (workload == Workload.UPDATE) {
                preload(client, tracker, out);
            }
            LoadGenerator load = new LoadGenerator(client, rows, blobSize.min(), blobSize.max(), 0.0).onAck(tracker::acked)
                    .writeWhile(() -> tracker.pending() < MAX_UNAPPLIED);
            if (workload == Workload.INSERT) {
                load.insertsOnly();
            }
            try (load) { // stopped before the client closes, also when the drain times out
                load.start(producers);
                Thread.sleep(warmup.toMillis());
                out.note(String.format("pipeline phase: warm-up %d s, %.1f GB of memory free now", warmup.toSeconds(), MachineMemory.freeBytes() / 1e9));
                long t0 = System.nanoTime();
                tracker.measureFrom(t0);
                long ackedBefore = load.acked();
                long history = 0;
                long historyMax = 0;
                long lastCount = 0;
                long lastBytes = 0;
                MachineCpu.Window cpu = new MachineCpu.Window(duration.toSeconds(), processes);
                for (int s = 1; System.nanoTime() - t0 < duration.toNanos() || tracker.pending() > 0; s++) {
                    long tick = s * 1_000_000_000L;
                    if (tick > duration.toNanos() && tick - 1_000_000_000L < duration.toNanos()) {
                        tick = duration.toNanos(); // a --duration with a fraction of a second (2.5s): the load stops at its end
                    }
                    sleepUntil(t0 + tick);
                    cpu.endOf(s, tracker.appliedBytes() / 1e6);
                    if (System.nanoTime() - t0 >= duration.toNanos()) {
                        load.close(); // stop sending; what is in flight gets acknowledged
                    }
                    if (System.nanoTime() - t0 > duration.toNanos() + drainTimeout.toNanos()) {
                        throw new IllegalStateException(tracker.pending() + " commands still not applied after --drain-timeout " + drainTimeout);
                    }
                    history = historyLength(node, history);
                    historyMax = Math.max(historyMax, history);
                    long c = tracker.applied();
                    long b = tracker.appliedBytes();
                    out.row("pipeline", s, c - lastCount, round((b - lastBytes) / 1e6), history);
                    lastCount = c;
                    lastBytes = b;
                }
                load.close();
                long acked = load.acked() - ackedBefore;
                // what was acknowledged is applied: the time of the last apply ends the window
                while (tracker.pending() > 0) {
                    Thread.sleep(1);
                }
                if (load.failed() > 0) {
                    out.note("pipeline phase: " + load.failed() + " writes failed");
                }
                if (tracker.applied() == 0) {
                    throw new IllegalStateException("pipeline phase: nothing applied in the measured window (" + load.failed()
                            + " writes failed)");
                }
                double seconds = (tracker.lastAppliedNanos() - t0) / 1e9;
                Histogram h = tracker.latency();
                return new Pipeline(tracker.applied(), load.failed(), tracker.applied() / seconds, tracker.appliedBytes() / 1e6 / seconds,
                        acked / (duration.toNanos() / 1e9), h.getValueAtPercentile(50) / 1000.0, h.getValueAtPercentile(99) / 1000.0,
                        h.getMaxValue() / 1000.0, historyMax, cpu);
            }
        } finally {
            tracker.stop();
            trackerThread.join(5_000);
        }
    }

    /** Writes each of the --rows ids once, so the measured phase only updates. */
    private void preload(LobClient client, ApplyLatencyTracker tracker, BenchOutput out) throws Exception {
        out.note("preloading " + rows + " rows");
        SplittableRandom rnd = new SplittableRandom(7);
        byte[] noise = new byte[blobSize.max()];
        rnd.nextBytes(noise);
        Semaphore inFlight = new Semaphore(KafkaBaseline.IN_FLIGHT);
        AtomicLong failed = new AtomicLong();
        AtomicReference<Throwable> firstError = new AtomicReference<>();
        for (int i = 0; i < rows; i++) {
            inFlight.acquire();
            long t = System.nanoTime();
            int size = blobSize.min() + rnd.nextInt(blobSize.max() - blobSize.min() + 1);
            client.put("lob-" + i, java.util.Arrays.copyOf(noise, size), null).whenComplete((md, err) -> {
                if (md != null) {
                    tracker.acked(md, t, size);
                } else {
                    failed.incrementAndGet();
                    firstError.compareAndSet(null, err);
                }
                inFlight.release(); // last: once all permits are back, every acknowledgement is pending in the tracker
            });
        }
        inFlight.acquire(KafkaBaseline.IN_FLIGHT);
        if (failed.get() > 0) {
            // the measured phase then inserts those ids: not the workload asked for
            throw new IllegalStateException("preload: " + failed.get() + " of " + rows + " writes failed, the first with " + firstError.get(),
                    firstError.get());
        }
        long deadline = System.nanoTime() + drainTimeout.toNanos();
        while (tracker.pending() > 0) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("preload not applied after " + drainTimeout);
            }
            Thread.sleep(10);
        }
    }

    /**
     * The history left once purge has caught up with the window's last updates, waiting up to
     * --drain-timeout: read right after the last apply, it also counted the versions that purge,
     * asynchronous by design, had not reached yet (17 in one CI run of a 2-second window).
     */
    private long historyAfterDrain(NodeProcess node) throws InterruptedException {
        long deadline = System.nanoTime() + drainTimeout.toNanos();
        long history;
        while ((history = historyLength(node, -1)) != 0 && System.nanoTime() < deadline) {
            Thread.sleep(100);
        }
        return history;
    }

    /** The node's history length, or {@code unknown} if it did not answer: a slow answer must not end a run of minutes. */
    private static long historyLength(NodeProcess node, long unknown) throws InterruptedException {
        try {
            return node.status().path("totals").path("history_length").asLong();
        } catch (IOException e) {
            return unknown;
        }
    }

    /**
     * Waits for the kernel to write dirty pages back ({@code sync}) so that each phase starts from
     * the same state: the pipeline phase leaves gigabytes of broker log and tablespace pages dirty,
     * and the raw phase would otherwise be throttled by their writeback.
     */
    private static void writeBack(BenchOutput out) throws InterruptedException {
        long t = System.nanoTime();
        try {
            Process p = new ProcessBuilder("sync").inheritIO().start();
            if (!p.waitFor(120, TimeUnit.SECONDS)) {
                p.destroy();
            }
            out.note(String.format("dirty pages written back in %.1f s", (System.nanoTime() - t) / 1e9));
        } catch (IOException e) {
            out.note("cannot run sync (" + e.getMessage() + "): the phases may see each other's writeback");
        }
    }

    /** What the pipeline phase writes: its preload, then its warm-up and window at half the plain producer's rate (it applied at most 0.48 of it in every run measured). */
    private double pipelineBytes(KafkaBaseline.Result raw) {
        return (double) rows * blobSize.max() + 0.5 * raw.mbPerS() * 1e6 * warmup.plus(duration).toSeconds();
    }

    /** {@code <prefix>cpu_ms_per_mb}, {@code <prefix>cpu_busy} and {@code <prefix>cpu_ms_per_mb_by_process}. */
    private static void cpuFigures(ObjectNode summary, String prefix, MachineCpu.Window cpu) {
        summary.put(prefix + "cpu_ms_per_mb", round(cpu.msPerMb())).put(prefix + "cpu_busy", round(cpu.busyFraction()));
        ObjectNode byProcess = summary.putObject(prefix + "cpu_ms_per_mb_by_process");
        cpu.processMsPerMb().forEach((name, ms) -> byProcess.put(name, round(ms)));
    }

    static void sleepUntil(long nanoTime) throws InterruptedException {
        long wait = nanoTime - System.nanoTime();
        if (wait > 0) {
            TimeUnit.NANOSECONDS.sleep(wait);
        }
    }

    /** The sum of a metric's samples in Prometheus text whose label {@code label} is {@code value}. */
    static double prometheusSum(String text, String name, String label, String value) {
        String pair = label + "=\"" + value + "\"";
        double sum = 0;
        for (String line : text.split("\n")) {
            if (line.startsWith(name + "{")) {
                String labels = line.substring(name.length(), line.lastIndexOf('}') + 1);
                if (labels.contains("{" + pair) || labels.contains("," + pair)) {
                    sum += Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
                }
            }
        }
        return sum;
    }
}
