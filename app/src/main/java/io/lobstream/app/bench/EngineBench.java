package io.lobstream.app.bench;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.lobstream.app.DataDirs;
import io.lobstream.store.LobStore;
import io.lobstream.store.LobStoreConfig;
import io.lobstream.store.StoreStats;
import io.lobstream.store.fsck.FsckReport;
import io.lobstream.store.purge.LocalPurger;
import org.HdrHistogram.Histogram;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import static io.lobstream.app.bench.BenchOutput.round;

/**
 * {@code ./lobstream bench engine}: the sysbench shapes of the TaurusDB LOB documentation and
 * MySQL bug #107473, run on the engine directly (no Kafka), one switch set after another in one
 * process, each on a fresh tablespace. An in-process purger ({@link LocalPurger}) reclaims
 * superseded versions while the writers run, so the space ratio includes purge keeping up.
 */
@Command(name = "engine", mixinStandardHelpOptions = true,
        description = {"Benchmark the lob-store engine directly: update = a random id in 1..rows gets a new random value; "
                + "insert = a new id every time. Reports TPS, p50/p99 latency, MB/s, space ratio (tablespace bytes / live bytes "
                + "after purge drains) and fsck per switch set and thread count.",
                "Switch sets: all-on, all-off, no-prealloc, no-batch (prealloc batch size 1), no-latch-downgrade, "
                        + "no-optimistic-update, no-purge-prefetch, no-purge-skip-load; 'matrix' = all of them."})
public final class EngineBench implements Callable<Integer> {

    enum Workload { UPDATE, INSERT }

    enum Durability {
        /** each write fsynced before it returns, concurrent writers sharing syncs (like innodb_flush_log_at_trx_commit=1) */
        EACH_WRITE,
        /**
         * no fsync per write (like innodb_flush_log_at_trx_commit=2): the purge thread flushes around each batch it
         * reclaims (its reclaims, having no source, free their pages at a flush), as a node flushes at each commit;
         * and one flush at the end
         */
        COMMIT
    }

    private static final List<String> MATRIX = List.of("all-on", "all-off", "no-prealloc", "no-batch", "no-latch-downgrade",
            "no-optimistic-update", "no-purge-prefetch", "no-purge-skip-load");

    @Option(names = "--workload", defaultValue = "update", description = "update or insert (default: ${DEFAULT-VALUE}).")
    Workload workload;

    @Option(names = "--rows", defaultValue = "10000", description = "Ids updated at random (update workload; default: ${DEFAULT-VALUE}).")
    int rows;

    @Option(names = "--blob-size", defaultValue = "16k", converter = SizeRange.Converter.class,
            description = "Value size, e.g. 16k, 256k, or a range 10k-300k (k = 1024; default: ${DEFAULT-VALUE}).")
    SizeRange blobSize;

    @Option(names = "--threads", defaultValue = "16", split = ",", description = "Writer threads; a list runs each (default: ${DEFAULT-VALUE}).")
    List<Integer> threads;

    @Option(names = "--duration", defaultValue = "20s", description = "Measured time per run (default: ${DEFAULT-VALUE}).")
    Duration duration;

    @Option(names = "--warmup", defaultValue = "3s", description = "Unmeasured writes before each measured run (default: ${DEFAULT-VALUE}).")
    Duration warmup;

    @Option(names = "--switches", defaultValue = "all-on,all-off", split = ",",
            description = "Switch sets to run, in order (default: ${DEFAULT-VALUE}).")
    List<String> switches;

    @Option(names = "--page-size", defaultValue = "16k", converter = SizeRange.Converter.class,
            description = "lob.page.size (default: ${DEFAULT-VALUE}).")
    SizeRange pageSize;

    @Option(names = "--durability", defaultValue = "each-write", converter = DurabilityConverter.class,
            description = "each-write (fsync per write, group commit) or commit (no fsync per write; a flush around each purge batch and at the end) (default: ${DEFAULT-VALUE}).")
    Durability durability;

    @CommandLine.Mixin
    BenchOptions options;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    /** Random bytes that values are cut from: generating them per write would measure the generator. */
    private byte[] noise;

    @Override
    public Integer call() throws Exception {
        Map<String, String> optionOfKey = new HashMap<>();
        LobStoreConfig.SWITCHES.forEach(key -> optionOfKey.put(key.name(), "--switches"));
        optionOfKey.put(LobStoreConfig.PAGE_SIZE.name(), "--page-size");
        optionOfKey.put(LobStoreConfig.SYNC_EACH_WRITE.name(), "--durability");
        options.checkConfig(spec, optionOfKey);
        options.checkOutputs(spec);
        options.checkDataDirEmpty(spec);
        for (String key : options.config.keySet()) { // the engine alone, without Kafka: a pipeline's or a client's key would change nothing
            if (LobStoreConfig.KEYS.stream().noneMatch(k -> k.name().equals(key))) {
                throw new CommandLine.ParameterException(spec.commandLine(), "-c " + key + " is not taken: bench engine runs the "
                        + "engine alone, without Kafka, and takes the engine's keys alone (LobStoreConfig's, in ./lobstream config)");
            }
        }
        if (pageSize.min() != pageSize.max()) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--page-size takes one size, not a range: " + pageSize);
        }
        if (!LobStoreConfig.isPageSize(pageSize.min())) { // named as the option, with usage: as lob.page.size, it was "failed"
            throw new CommandLine.ParameterException(spec.commandLine(), "--page-size " + pageSize + ": a power of two from "
                    + LobStoreConfig.MIN_PAGE_SIZE / 1024 + " KiB to " + LobStoreConfig.MAX_PAGE_SIZE / 1024 + " KiB");
        }
        if (switches.size() > 1 && switches.contains("matrix")) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--switches matrix runs every set: it is not combined "
                    + "with others (" + String.join(",", switches) + ")");
        }
        List<String> sets = switches.size() == 1 && switches.get(0).equals("matrix") ? MATRIX : switches;
        for (String set : sets) {
            switchConfig(set); // reject unknown names before any run starts
        }
        if (rows < 1 || threads.stream().anyMatch(t -> t < 1) || duration.isNegative() || duration.isZero()) {
            throw new CommandLine.ParameterException(spec.commandLine(), "need --rows >= 1, --threads >= 1, --duration > 0");
        }
        noise = new byte[(int) Math.min(Integer.MAX_VALUE - 8, (8L << 20) + blobSize.max())]; // a value starts anywhere in 8 MiB
        new Random(42).nextBytes(noise);
        Path root = options.dataDir != null ? Files.createDirectories(options.dataDir) : DataDirs.temporary("lobstream-bench-");
        BenchOutput out = new BenchOutput(System.err, List.of("workload", "blob_size", "switches", "threads", "tps", "p50_ms",
                "p99_ms", "mb_per_s", "space_ratio", "syncs_per_write", "fsck_ok"));
        out.note(String.format("bench engine: %s, %s values, %s, %s per run, durability %s, page size %s",
                workload.name().toLowerCase(Locale.ROOT), blobSize, workload == Workload.UPDATE ? rows + " rows" : "new ids",
                duration, durability.name().toLowerCase(Locale.ROOT).replace('_', '-'), pageSize));
        ArrayNode runs = BenchOutput.newJson().arrayNode();
        Map<String, Map<String, Number>> tpsChart = BenchOutput.ordered();
        boolean allClean = true;
        for (int t : threads) {
            for (String set : sets) {
                Run r = run(root.resolve(set + "-t" + t), set, t);
                allClean &= r.fsckOk;
                out.row(workload.name().toLowerCase(Locale.ROOT), blobSize.toString(), set, t, r.tps, r.p50Ms, r.p99Ms, r.mbPerS, r.spaceRatio,
                        r.syncsPerWrite, r.fsckOk);
                ObjectNode j = runs.addObject();
                j.put("switches", set).put("threads", t).put("tps", round(r.tps)).put("p50_ms", round(r.p50Ms))
                        .put("p99_ms", round(r.p99Ms)).put("mb_per_s", round(r.mbPerS)).put("space_ratio", round(r.spaceRatio))
                        .put("syncs_per_write", round(r.syncsPerWrite)).put("fsck_ok", r.fsckOk);
                if (!r.fsckOk) {
                    j.put("fsck_problems", r.fsckSummary);
                }
                tpsChart.computeIfAbsent(t + " threads", k -> BenchOutput.ordered()).put(set, r.tps);
            }
        }
        if (options.dataDir == null) {
            DataDirs.deleteTree(root);
        }
        out.writeCsv(options.csv);
        BenchOutput.barChart(options.chart, String.format("lob-store %s, %s values: TPS by switch set", workload.name().toLowerCase(Locale.ROOT), blobSize),
                "transactions / s", tpsChart);
        ObjectNode summary = BenchOutput.newJson();
        summary.put("workload", workload.name().toLowerCase(Locale.ROOT)).put("blob_size", blobSize.toString())
                .put("rows", workload == Workload.UPDATE ? rows : 0).put("duration_s", duration.toSeconds())
                .put("durability", durability.name().toLowerCase(Locale.ROOT).replace('_', '-')).put("page_size", pageSize.min());
        summary.set("runs", runs);
        for (int t : threads) {
            Double on = tps(runs, "all-on", t);
            Double off = tps(runs, "all-off", t);
            if (on != null && off != null && off > 0) {
                summary.put("all_on_vs_all_off_" + t + "t", round(on / off));
                out.note(String.format("all-on / all-off at %d threads: %.2fx", t, on / off));
            }
        }
        summary.put("fsck_ok", allClean);
        if (options.json) {
            BenchOutput.printJson(summary);
        }
        return allClean ? 0 : 1;
    }

    private record Run(double tps, double p50Ms, double p99Ms, double mbPerS, double spaceRatio, double syncsPerWrite,
                       boolean fsckOk, String fsckSummary) {
    }

    private Run run(Path dir, String set, int threadCount) throws Exception {
        LobStoreConfig config = switchConfig(set);
        if (workload == Workload.UPDATE) {
            // loading is not measured: no fsync per row, one flush at the end (close)
            try (LobStore loader = LobStore.open(dir, config.with(LobStoreConfig.SYNC_EACH_WRITE.name(), false))) {
                load(loader, threadCount);
            }
        }
        try (LobStore store = LobStore.open(dir, config);
             LocalPurger purger = new LocalPurger(store, 256)) {
            AtomicBoolean writing = new AtomicBoolean(true);
            AtomicReference<Throwable> purgeFailure = new AtomicReference<>();
            Thread purge = startPurge(purger, store, writing, purgeFailure);
            AtomicLong nextId = new AtomicLong();
            if (!warmup.isZero()) {
                write(store, threadCount, nextId, warmup); // JIT and page cache: the first switch set is not measured cold
            }
            double syncsBefore = store.metrics().syncs();
            long t0 = System.nanoTime();
            List<Writer> writers = write(store, threadCount, nextId, duration);
            Histogram latency = new Histogram(TimeUnit.MINUTES.toMicros(1), 3);
            long ops = 0;
            long bytes = 0;
            for (Writer w : writers) {
                latency.add(w.latency);
                ops += w.ops;
                bytes += w.bytes;
            }
            double seconds = (System.nanoTime() - t0) / 1e9;
            double syncs = store.metrics().syncs() - syncsBefore;
            writing.set(false);
            purge.join();
            if (purgeFailure.get() != null) {
                // a purger that died leaves history to backpressure: the switch set's figures would be its, not the switches'
                throw new IOException("purge failed: " + purgeFailure.get(), purgeFailure.get());
            }
            store.flush();
            StoreStats stats = store.stats();
            long fileBytes = Files.size(dir.resolve(io.lobstream.store.tablespace.TablespaceDirs.PAGES));
            FsckReport fsck = store.fsck(true);
            return new Run(ops / seconds, latency.getValueAtPercentile(50) / 1e3, latency.getValueAtPercentile(99) / 1e3,
                    bytes / seconds / 1e6, stats.bytesLive() == 0 ? 0 : (double) fileBytes / stats.bytesLive(),
                    ops == 0 ? 0 : syncs / ops, fsck.ok(), fsck.ok() ? "" : fsck.toString());
        } finally {
            DataDirs.deleteTree(dir);
        }
    }

    /** Runs {@code threadCount} writers for {@code time}; returns them, stopped. */
    private List<Writer> write(LobStore store, int threadCount, AtomicLong nextId, Duration time) throws Exception {
        AtomicBoolean stop = new AtomicBoolean();
        List<Writer> writers = new ArrayList<>();
        for (int i = 0; i < threadCount; i++) {
            writers.add(new Writer(store, nextId, stop));
        }
        writers.forEach(w -> w.thread.start());
        long end = System.nanoTime() + time.toNanos();
        while (!stop.get() && System.nanoTime() < end) {
            Thread.sleep(10);
        }
        stop.set(true);
        for (Writer w : writers) {
            w.thread.join();
            if (w.failure != null) {
                throw new IOException("writer failed: " + w.failure, w.failure);
            }
        }
        return writers;
    }

    /** Writes every row once, untimed, with the run's thread count. */
    private void load(LobStore store, int threadCount) throws InterruptedException {
        AtomicLong next = new AtomicLong(1);
        List<Thread> loaders = new ArrayList<>();
        List<Throwable> failures = new java.util.concurrent.CopyOnWriteArrayList<>();
        for (int i = 0; i < threadCount; i++) {
            Thread t = new Thread(() -> {
                for (long id = next.getAndIncrement(); id <= rows; id = next.getAndIncrement()) {
                    try {
                        writeValue(store, "row-" + id);
                    } catch (IOException | RuntimeException e) {
                        failures.add(e);
                        return;
                    }
                }
            }, "load-" + i);
            loaders.add(t);
            t.start();
        }
        for (Thread t : loaders) {
            t.join();
        }
        if (!failures.isEmpty()) {
            throw new UncheckedIOException(new IOException("loading rows failed: " + failures.get(0), failures.get(0)));
        }
    }

    /** Purges while writers run; after they stop, until history is empty. A failure goes to {@code failure}. */
    private static Thread startPurge(LocalPurger purger, LobStore store, AtomicBoolean writing, AtomicReference<Throwable> failure) {
        Thread t = new Thread(() -> {
            try {
                while (writing.get() || store.stats().historyLength() > 0) {
                    if (purger.purgeOnce() == 0) {
                        if (!writing.get()) {
                            break; // what is left it skipped as stale (logged): purging again would find nothing either
                        }
                        Thread.sleep(1);
                    }
                }
            } catch (IOException | RuntimeException e) {
                failure.set(e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "bench-purge");
        t.setDaemon(true);
        t.start();
        return t;
    }

    private final class Writer implements Runnable {
        final Thread thread = new Thread(this, "bench-writer");
        final Histogram latency = new Histogram(TimeUnit.MINUTES.toMicros(1), 3);
        final LobStore store;
        final AtomicLong nextId;
        final AtomicBoolean stop;
        long ops;
        long bytes;
        Throwable failure;

        Writer(LobStore store, AtomicLong nextId, AtomicBoolean stop) {
            this.store = store;
            this.nextId = nextId;
            this.stop = stop;
        }

        @Override
        public void run() {
            try {
                while (!stop.get()) {
                    String id = workload == Workload.UPDATE
                            ? "row-" + (1 + ThreadLocalRandom.current().nextInt(rows))
                            : "new-" + nextId.incrementAndGet();
                    long t0 = System.nanoTime();
                    bytes += writeValue(store, id);
                    latency.recordValue(Math.min(latency.getHighestTrackableValue(), (System.nanoTime() - t0) / 1000));
                    ops++;
                }
            } catch (Throwable e) {
                failure = e;
                stop.set(true);
            }
        }
    }

    private int writeValue(LobStore store, String id) throws IOException {
        int size = blobSize.next();
        int from = ThreadLocalRandom.current().nextInt(noise.length - size + 1);
        store.put(id, new ByteArrayInputStream(noise, from, size), size, null, null);
        return size;
    }

    /** The engine configuration of a switch set name. */
    LobStoreConfig switchConfig(String set) {
        Map<String, Object> base = new HashMap<>(options.config);
        base.put(LobStoreConfig.PAGE_SIZE.name(), pageSize.min());
        base.put(LobStoreConfig.SYNC_EACH_WRITE.name(), durability == Durability.EACH_WRITE);
        LobStoreConfig all = new LobStoreConfig(base);
        return switch (set) {
            case "all-on" -> all.withSwitches(true);
            case "all-off" -> all.withSwitches(false);
            case "no-prealloc" -> all.withSwitches(true).with(LobStoreConfig.PREALLOC.name(), false);
            case "no-batch" -> all.withSwitches(true).with(LobStoreConfig.PREALLOC_BATCH.name(), 1);
            case "no-latch-downgrade" -> all.withSwitches(true).with(LobStoreConfig.LATCH_DOWNGRADE.name(), false);
            case "no-optimistic-update" -> all.withSwitches(true).with(LobStoreConfig.OPTIMISTIC_UPDATE.name(), false);
            case "no-purge-prefetch" -> all.withSwitches(true).with(LobStoreConfig.PURGE_PREFETCH.name(), false);
            case "no-purge-skip-load" -> all.withSwitches(true).with(LobStoreConfig.PURGE_SKIP_LOAD.name(), false);
            default -> throw new CommandLine.ParameterException(spec.commandLine(),
                    "unknown switch set '" + set + "'; use " + String.join(", ", MATRIX) + " or matrix");
        };
    }

    private static Double tps(ArrayNode runs, String set, int threads) {
        for (var r : runs) {
            if (r.get("switches").asText().equals(set) && r.get("threads").asInt() == threads) {
                return r.get("tps").asDouble();
            }
        }
        return null;
    }

    /** Accepts each-write / commit. */
    static final class DurabilityConverter implements CommandLine.ITypeConverter<Durability> {
        @Override
        public Durability convert(String value) {
            return Durability.valueOf(value.trim().toUpperCase(Locale.ROOT).replace('-', '_'));
        }
    }
}
