package io.lobstream.app.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.lobstream.app.embedded.EmbeddedPipeline;
import io.lobstream.app.embedded.PurgeProcess;
import io.lobstream.avro.ReclaimRecord;
import io.lobstream.client.LobClient;
import io.lobstream.ingest.LobNode;
import io.lobstream.purge.PurgeWorker;
import io.lobstream.schema.LobSerdes;
import io.lobstream.schema.LobStreamConfig;
import io.lobstream.schema.TopicSetup;
import io.lobstream.schema.Topics;
import io.lobstream.store.LobStoreConfig;
import io.lobstream.store.StoreStats;
import io.lobstream.store.fsck.FsckReport;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.OutOfOrderSequenceException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serializer;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.Future;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;

import static io.lobstream.app.bench.BenchOutput.round;

/**
 * {@code ./lobstream bench purge}: reclaim throughput of purge worker processes against one
 * backlog of superseded versions, for each (workers, prefetch, skip-load) configuration.
 *
 * <p>How it measures. The backlog is built once through the real pipeline: a node applies
 * PUTs of {@code --value-size} values to ids spread evenly over the partitions; every update
 * supersedes a version and the node writes its UndoRecord to {@code lob.undo-history}. Each
 * configuration then gets its own copy of those undo records (same partitions, same bytes) on
 * topics of its own prefix, consumed by a fresh consumer group of {@code W} worker processes
 * ({@code lobstream purge}, child JVMs): they read the superseded versions' pages from the
 * node's tablespaces and produce ReclaimRecords with their offsets, in transactions, exactly as
 * in production. The copy is produced in one Kafka transaction only after all {@code W}
 * workers have started, initialised their transactions and joined the group with every
 * partition assigned, so JVM start, group join and transaction set-up are outside the timed
 * window; the window runs from that commit to the moment the group's committed offsets reach
 * the end of the copy (every reclaim record committed). Each configuration's reclaim records
 * are read back and checked: one per superseded version, and the same extents in every
 * configuration. Finally one worker purges the real undo-history topic, the node applies the
 * reclaims (history reaches 0) and fsck checks every tablespace.
 */
@Command(name = "purge", mixinStandardHelpOptions = true,
        description = {"Purge throughput: build a backlog of superseded versions through a node, then for each configuration "
                + "(workers x prefetch x skip-load) start that many purge worker processes and time the drain of the backlog.",
                "Timing starts when all workers have joined the group (JVM start, join and transaction set-up excluded) "
                        + "and stops when the group has committed the last reclaim record."})
public final class PurgeBench implements Callable<Integer> {
    @Option(names = "--partitions", description = "Partitions = tablespaces (default: lob.topic.partitions, 8 unless -c sets it).")
    Integer partitions;

    @Option(names = "--workers", split = ",", defaultValue = "1,2,4", description = "Worker process counts to run (default: ${DEFAULT-VALUE}).")
    List<Integer> workers;

    @Option(names = "--read-latency", paramLabel = "DURATION",
            description = "Delay added to every page read purge makes (models remote block storage), e.g. 1ms.")
    Duration readLatency;

    @Option(names = "--prefetch", split = ",", defaultValue = "on,off", description = "lob.purge.prefetch values to run (default: ${DEFAULT-VALUE}).")
    List<String> prefetch;

    @Option(names = "--skip-load", split = ",", defaultValue = "on,off", description = "lob.purge.skip.load values to run (default: ${DEFAULT-VALUE}).")
    List<String> skipLoad;

    @Option(names = "--backlog", defaultValue = "0",
            description = "Superseded versions in the backlog (default: sized so the slowest configuration takes about 50 s).")
    int backlog;

    @Option(names = "--value-size", defaultValue = "64k", description = "Size of each version (default: ${DEFAULT-VALUE}).")
    SizeRange valueSize;

    @Mixin
    BenchOptions options;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    private static final int IDS_PER_PARTITION = 16;

    private record Config(int workers, boolean prefetch, boolean skipLoad) {
        String label() {
            return "prefetch " + onOff(prefetch) + ", skip-load " + onOff(skipLoad);
        }
    }

    private record Run(Config config, long versions, long timedVersions, double seconds, CpuSample cpu, long pagesReclaimed, long rootRead, long indexRead, long dataRead,
                       long workerVersions, long reclaimRecords, long duplicates, boolean sameExtents, double setupSeconds,
                       boolean workersThrough) {
        double versionsPerSecond() {
            return timedVersions / seconds;
        }

        /** Pages named in the timed reclaim records (every version of a run has the same size). */
        double pagesPerSecond() {
            return (double) pagesReclaimed / versions * timedVersions / seconds;
        }
    }

    @Override
    public Integer call() throws Exception {
        options.checkConfig(spec, Map.of(LobStoreConfig.PURGE_PREFETCH.name(), "--prefetch",
                LobStoreConfig.PURGE_SKIP_LOAD.name(), "--skip-load"));
        partitions = options.partitions(spec, partitions);
        options.checkOutputs(spec);
        options.checkDataDirEmpty(spec);
        List<Config> configs = configs();
        String latencyNote = readLatency == null || readLatency.isZero() ? "no read latency injected"
                : "every page read purge made was delayed by " + human(readLatency) + " (--read-latency)";
        BenchOutput out = new BenchOutput(System.err, List.of("workers", "prefetch", "skip_load", "timed_versions", "seconds",
                "versions_per_s", "pages_per_s", "root_read", "index_read", "data_read", "read_latency"));
        out.note("bench purge: " + partitions + " partitions, " + valueSize + " values, " + latencyNote);
        long t0 = System.nanoTime();
        // No purge runs while the backlog is built, so backpressure (lob.history.max) would slow
        // every write past twice its limit by its longest delay: at 1 partition or with a large
        // --backlog the build would not finish. The backlog is the point here; -c can still set it.
        Map<String, String> nodeConfig = new HashMap<>(options.config);
        nodeConfig.putIfAbsent(LobStoreConfig.HISTORY_MAX.name(), "0");
        try (EmbeddedPipeline pipeline = EmbeddedPipeline.start(options.dataDir, "lobstream-bench-purge-", partitions, nodeConfig);
             Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, pipeline.cluster().bootstrap()))) {
            LobStreamConfig cfg = pipeline.config();
            int versions = backlogSize();
            out.note(String.format(Locale.ROOT, "pipeline up after %.1f s; writing %d ids and %d updates of %s through the node",
                    (System.nanoTime() - t0) / 1e9, partitions * IDS_PER_PARTITION, versions, valueSize));
            buildBacklog(pipeline, versions);
            List<ConsumerRecord<byte[], byte[]>> undo = KafkaTools.readAtLeast(cfg.bootstrap(), cfg.topics().undoHistory(), versions, Duration.ofSeconds(60));
            out.note(String.format(Locale.ROOT, "backlog: %d superseded versions pending, %d undo records (after %.1f s)",
                    pipeline.node().tablespaces().totals().historyLength(), undo.size(), (System.nanoTime() - t0) / 1e9));

            List<Run> runs = new ArrayList<>();
            Map<String, String> reference = null;
            try (KafkaProducer<byte[], byte[]> copier = copier(cfg)) {
                copier.initTransactions();
                for (int k = 0; k < configs.size(); k++) {
                    AtomicReference<Map<String, String>> extents = new AtomicReference<>();
                    Run r = run(pipeline, admin, copier, undo, k, configs.get(k), reference, extents);
                    if (reference == null) {
                        reference = extents.get();
                    }
                    runs.add(r);
                    out.row(r.config.workers, onOff(r.config.prefetch), onOff(r.config.skipLoad), r.timedVersions, r.seconds,
                            r.versionsPerSecond(), r.pagesPerSecond(), r.rootRead, r.indexRead, r.dataRead,
                            readLatency == null ? "0" : human(readLatency));
                }
            }

            out.note("reclaiming for real: one worker on " + cfg.topics().undoHistory() + ", the node applies the reclaims");
            StoreStats end = drainForReal(pipeline);
            FsckReport fsck = pipeline.node().tablespaces().fsckAll(true); // data pages too: fsck_ok means what the demo's does
            fsck.problems().forEach(p -> System.err.println("fsck: " + p));

            ObjectNode j = summary(runs, versions, undo.size(), latencyNote, end, fsck);
            j.put("elapsed_s", round((System.nanoTime() - t0) / 1e9, 1));
            out.writeCsv(options.csv);
            chart(runs);
            if (options.json) {
                BenchOutput.printJson(j);
            } else {
                out.note(j.toPrettyString());
            }
            boolean ok = fsck.ok() && end.historyLength() == 0 && j.path("reclaims_identical").asBoolean()
                    && runs.stream().allMatch(Run::workersThrough);
            return ok ? 0 : 1;
        }
    }

    private List<Config> configs() {
        if (partitions < 1 || workers.isEmpty() || workers.stream().anyMatch(w -> w < 1) || backlog < 0) {
            throw new CommandLine.ParameterException(spec.commandLine(), "need --partitions >= 1, --workers >= 1 and --backlog >= 0");
        }
        List<Config> out = new ArrayList<>();
        for (String s : skipLoad) {
            for (String p : prefetch) {
                for (int w : workers) {
                    out.add(new Config(w, onOrOff("--prefetch", p), onOrOff("--skip-load", s)));
                }
            }
        }
        return out;
    }

    /**
     * Sized so the slowest configuration (1 worker, prefetch off, skip-load off) takes about 50 s,
     * under the minute: as large as that allows, because the fastest ones (4 workers, skip-load)
     * then still run for several seconds, long enough that a worker's last commit and the 25 ms
     * polling of the group's offsets are small against the window.
     */
    private int backlogSize() {
        int ids = partitions * IDS_PER_PARTITION;
        int n = backlog;
        if (n <= 0) {
            int pageSize = new io.lobstream.store.LobStoreConfig(options.config).pageSize();
            long readsPerVersion = 1 + (long) Math.ceil(valueSize.mean() / (pageSize - 32.0));
            double perVersion = readsPerVersion * Math.max(readLatency == null ? 0 : readLatency.toNanos() / 1e9 * 1.05, 0.0002);
            n = (int) Math.min(12_000, 50 / perVersion / 0.9); // the timed 90% of it in about 50 s
        }
        return Math.max(ids, n / ids * ids); // whole rounds over the ids: every partition gets the same share
    }

    /** PUTs {@code ids} values, then {@code versions} updates round-robin over them, through the node; waits until applied. */
    private void buildBacklog(EmbeddedPipeline pipeline, int versions) throws Exception {
        List<String> ids = balancedIds("bench-", partitions, IDS_PER_PARTITION);
        byte[] noise = new byte[valueSize.max() + 4096];
        new Random(7).nextBytes(noise);
        Semaphore inFlight = new Semaphore(64);
        AtomicReference<Throwable> failed = new AtomicReference<>();
        try (LobClient client = new LobClient(pipeline.config())) {
            for (int i = 0; i < ids.size() + versions; i++) {
                inFlight.acquire();
                int size = valueSize.next();
                int from = i % 4096;
                client.put(ids.get(i % ids.size()), java.util.Arrays.copyOfRange(noise, from, from + size), "application/octet-stream")
                        .whenComplete((md, e) -> {
                            if (e != null) {
                                failed.set(e);
                            }
                            inFlight.release();
                        });
            }
            client.flush();
            inFlight.acquire(64);
        }
        if (failed.get() != null) {
            throw new IllegalStateException("backlog write failed: " + failed.get(), failed.get());
        }
        LobNode node = pipeline.node();
        long deadline = System.nanoTime() + Duration.ofMinutes(5).toNanos();
        while (node.tablespaces().totals().historyLength() < versions || node.tablespaces().totals().lobs() < ids.size()) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("the node did not apply the backlog within 5 minutes: " + node.tablespaces().totals());
            }
            Thread.sleep(100);
        }
    }

    /** {@code perPartition} ids for each partition under Kafka's default partitioner, interleaved by partition. */
    public static List<String> balancedIds(String prefix, int partitions, int perPartition) {
        List<List<String>> by = new ArrayList<>();
        for (int p = 0; p < partitions; p++) {
            by.add(new ArrayList<>());
        }
        for (int i = 0, found = 0; found < partitions * perPartition; i++) {
            String id = prefix + i;
            int p = Topics.partitionOf(id.getBytes(StandardCharsets.UTF_8), partitions);
            if (by.get(p).size() < perPartition) {
                by.get(p).add(id);
                found++;
            }
        }
        List<String> out = new ArrayList<>();
        for (int i = 0; i < perPartition; i++) {
            for (int p = 0; p < partitions; p++) {
                out.add(by.get(p).get(i));
            }
        }
        return out;
    }

    private KafkaProducer<byte[], byte[]> copier(LobStreamConfig cfg) {
        Map<String, Object> p = Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, cfg.bootstrap(),
                ProducerConfig.TRANSACTIONAL_ID_CONFIG, "lobstream-bench-copier-" + ProcessHandle.current().pid(),
                ProducerConfig.LINGER_MS_CONFIG, 5, ProducerConfig.MAX_REQUEST_SIZE_CONFIG, Topics.PAGE_LIST_RECORD_MAX_BYTES);
        return new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
    }

    private Run run(EmbeddedPipeline pipeline, Admin admin, KafkaProducer<byte[], byte[]> copier, List<ConsumerRecord<byte[], byte[]>> undo,
                    int k, Config c, Map<String, String> reference, AtomicReference<Map<String, String>> extentsOut) throws Exception {
        String group = "lobstream-bench-purge-" + k;
        LobStreamConfig rc = pipeline.config().with(LobStreamConfig.TOPIC_PREFIX.name(), "bench" + k + ".")
                .with(LobStreamConfig.PURGE_GROUP.name(), group);
        TopicSetup.ensureTopics(admin, rc);
        KafkaTools.awaitLeaders(admin, rc.topics().all(), Duration.ofSeconds(30));
        preRegisterReclaimSchema(rc);
        Map<String, String> workerConfig = new HashMap<>(options.config);
        workerConfig.put(LobStreamConfig.TOPIC_PREFIX.name(), rc.get(LobStreamConfig.TOPIC_PREFIX));
        workerConfig.put(LobStreamConfig.PURGE_GROUP.name(), group);
        workerConfig.put(LobStoreConfig.PURGE_PREFETCH.name(), Boolean.toString(c.prefetch));
        workerConfig.put(LobStoreConfig.PURGE_SKIP_LOAD.name(), Boolean.toString(c.skipLoad));
        long setup = System.nanoTime();
        List<PurgeProcess> procs = new ArrayList<>();
        List<JsonNode> summaries = new ArrayList<>();
        double seconds;
        try {
            for (int w = 0; w < c.workers; w++) {
                procs.add(PurgeProcess.start("bench" + k + "-" + w, pipeline.cluster().bootstrap(), pipeline.cluster().registryUrl(),
                        pipeline.dir(), readLatency, workerConfig, pipeline.dir().resolve("bench-logs")));
            }
            try {
                KafkaTools.awaitGroup(admin, group, c.workers, partitions, Duration.ofSeconds(120));
            } catch (TimeoutException e) {
                throw new TimeoutException(e.getMessage() + "; " + seeLogs(procs));
            }
            // Warm-up: the first tenth of each partition's undo records, so that every worker has decoded, read,
            // produced and committed a few hundred times (registry look-ups, class loading, JIT, tablespace open)
            // before the clock starts; these are reclaimed too, so the reclaim set checked below is the whole backlog.
            List<ConsumerRecord<byte[], byte[]>> warmUp = new ArrayList<>();
            List<ConsumerRecord<byte[], byte[]>> timed = new ArrayList<>();
            Map<Integer, Integer> seen = new HashMap<>();
            int warmPerPartition = Math.max(1, undo.size() / partitions / 10);
            for (ConsumerRecord<byte[], byte[]> r : undo) {
                (seen.merge(r.partition(), 1, Integer::sum) <= warmPerPartition ? warmUp : timed).add(r);
            }
            drain(admin, group, copy(copier, rc, warmUp), procs, Duration.ofMinutes(5));
            double setupSeconds = (System.nanoTime() - setup) / 1e9;
            Map<Integer, String> owners = KafkaTools.owners(admin, group);
            Map<TopicPartition, Long> end = copy(copier, rc, timed);
            long start = System.nanoTime();
            CpuSample cpu0 = CpuSample.take(procs);
            Map<Integer, Double> doneAt = drain(admin, group, end, procs, Duration.ofMinutes(10));
            seconds = (System.nanoTime() - start) / 1e9;
            CpuSample cpu = CpuSample.take(procs).minus(cpu0);
            // drain() fails only when every worker died: a figure from fewer workers than asked is no figure of them
            boolean allAlive = procs.stream().allMatch(PurgeProcess::isAlive);
            long stopping = System.nanoTime();
            procs.forEach(PurgeProcess::signalStop); // all at once: no rebalance onto workers about to stop
            for (PurgeProcess p : procs) {
                JsonNode s = p.stop();
                if (s != null) {
                    summaries.add(s);
                } else {
                    System.err.println("  a worker printed no summary (its pages read are missing from the figures); " + p.seeLogs());
                }
            }
            long verifying = System.nanoTime();
            // the reclaim records this configuration committed: one per superseded version, same extents every time
            Map<String, String> extents = new TreeMap<>();
            long records = 0;
            long duplicates = 0;
            long pages = 0;
            try (Deserializer<Object> des = LobSerdes.valueDeserializer(rc)) { // one registry client per configuration
                for (ConsumerRecord<byte[], byte[]> r : KafkaTools.readAll(rc.bootstrap(), rc.topics().reclaim())) {
                    ReclaimRecord rec = LobSerdes.decode(des, r.topic(), r.value(), ReclaimRecord.class);
                    records++;
                    String key = rec.getLobId() + "@" + rec.getVersion();
                    if (extents.put(key, rec.getExtents().toString()) != null) {
                        duplicates++;
                    } else {
                        pages += rec.getExtents().stream().mapToLong(e -> e.getPageCount()).sum();
                    }
                }
            }
            extentsOut.set(extents);
            System.err.printf(Locale.ROOT, "  (setup %.1f s, timed %.2f s: cpu workers %.2f s, broker+node %.2f s, machine %.0f%% busy; "
                            + "partitions done at %s; stop %.1f s, check %.1f s)%n", setupSeconds, seconds, cpu.workers(), cpu.self(),
                    100 * cpu.machineBusy(), doneTimes(doneAt, owners),
                    (verifying - stopping) / 1e9, (System.nanoTime() - verifying) / 1e9);
            return new Run(c, extents.size(), timed.size(), seconds, cpu, pages, sum(summaries, "root"), sum(summaries, "index"), sum(summaries, "data"),
                    summaries.stream().mapToLong(s -> s.path("versions").asLong()).sum(), records, duplicates,
                    reference == null || reference.equals(extents), setupSeconds, allAlive && summaries.size() == c.workers);
        } finally {
            for (PurgeProcess p : procs) {
                p.close();
            }
        }
    }

    /**
     * Copies undo records to this configuration's undo topic in one transaction. Before the commit
     * (which is when the workers see the records and the clock starts) it waits for this JVM's JIT
     * to go quiet: sending thousands of records makes the broker and producer code in this JVM hot,
     * and their compilation would otherwise run in the first second of the timed window, on the
     * cores the workers need (on 2 cores it took a third of the 4-worker window's first second).
     *
     * @return per partition, the offset the group must commit to have purged them all (the commit
     * markers are written after commitTransaction returns, so the log end is not known yet)
     */
    private static Map<TopicPartition, Long> copy(KafkaProducer<byte[], byte[]> copier, LobStreamConfig rc,
                                                  java.util.Collection<ConsumerRecord<byte[], byte[]>> records) throws Exception {
        List<Future<RecordMetadata>> sent = new ArrayList<>(records.size());
        for (int attempt = 1; ; attempt++) {
            copier.beginTransaction();
            sent.clear();
            try {
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    sent.add(copier.send(new ProducerRecord<>(rc.topics().undoHistory(), r.partition(), r.key(), r.value())));
                }
                copier.flush();
                awaitQuietJit(Duration.ofMillis(300), Duration.ofSeconds(5));
                copier.commitTransaction();
                break;
            } catch (ProducerFencedException | OutOfOrderSequenceException | AuthorizationException e) {
                throw e;
            } catch (KafkaException e) {
                // e.g. a partition of a topic created a moment ago not hosted yet: nothing of it is visible, try again
                copier.abortTransaction();
                if (attempt == 5) {
                    throw e;
                }
                System.err.println("  copy aborted (" + e + "), again");
                Thread.sleep(500);
            }
        }
        Map<TopicPartition, Long> end = new HashMap<>();
        for (Future<RecordMetadata> f : sent) {
            RecordMetadata md = f.get();
            end.merge(new TopicPartition(md.topic(), md.partition()), md.offset() + 1, Math::max);
        }
        return end;
    }

    /** Waits until this JVM's compilers have been idle for {@code quiet}, or at most {@code max}. */
    private static void awaitQuietJit(Duration quiet, Duration max) throws InterruptedException {
        java.lang.management.CompilationMXBean jit = java.lang.management.ManagementFactory.getCompilationMXBean();
        if (jit == null || !jit.isCompilationTimeMonitoringSupported()) {
            return;
        }
        long deadline = System.nanoTime() + max.toNanos();
        long last = jit.getTotalCompilationTime();
        long quietSince = System.nanoTime();
        while (System.nanoTime() < deadline && System.nanoTime() - quietSince < quiet.toNanos()) {
            Thread.sleep(50);
            long now = jit.getTotalCompilationTime();
            if (now != last) {
                last = now;
                quietSince = System.nanoTime();
            }
        }
    }

    /**
     * Waits until the group has committed up to {@code end} (looking every 25 ms).
     *
     * @return per partition, seconds from the call until the group had committed all of it
     */
    private Map<Integer, Double> drain(Admin admin, String group, Map<TopicPartition, Long> end, List<PurgeProcess> procs, Duration timeout)
            throws Exception {
        long start = System.nanoTime();
        long deadline = start + timeout.toNanos();
        Map<Integer, Double> done = new TreeMap<>();
        while (done.size() < end.size()) {
            Map<TopicPartition, Long> committed = KafkaTools.committed(admin, group);
            double now = (System.nanoTime() - start) / 1e9;
            end.forEach((tp, offset) -> {
                if (committed.getOrDefault(tp, 0L) >= offset) {
                    done.putIfAbsent(tp.partition(), now);
                }
            });
            if (done.size() == end.size()) {
                break;
            }
            if (System.nanoTime() > deadline || procs.stream().noneMatch(PurgeProcess::isAlive)) {
                throw new IllegalStateException("group " + group + " did not drain; " + seeLogs(procs));
            }
            Thread.sleep(25); // each look costs the broker two requests: 40 a second, not a CPU drain
        }
        return done;
    }

    private static String seeLogs(List<PurgeProcess> procs) {
        return procs.stream().map(PurgeProcess::seeLogs).collect(Collectors.joining("\n"));
    }

    /** When each worker's partitions were done, e.g. {@code purge-bench3-0 [0:2.91 4:2.95]}: shows a tail where some workers idle. */
    private static String doneTimes(Map<Integer, Double> doneAt, Map<Integer, String> owners) {
        Map<String, List<String>> byOwner = new TreeMap<>();
        doneAt.forEach((p, t) -> byOwner.computeIfAbsent(owners.getOrDefault(p, "?"), o -> new ArrayList<>())
                .add(p + ":" + String.format(Locale.ROOT, "%.2f", t)));
        return byOwner.entrySet().stream().map(e -> e.getKey() + " " + e.getValue()).collect(Collectors.joining(", "));
    }

    /** Registers the ReclaimRecord schema for this configuration's topic, so no worker pays for it in the timed window. */
    private static void preRegisterReclaimSchema(LobStreamConfig rc) {
        try (Serializer<Object> ser = LobSerdes.valueSerializer(rc)) {
            ser.serialize(rc.topics().reclaim(), ReclaimRecord.newBuilder().setLobId("-").setVersion(0).setExtents(List.of())
                    .setWorkerId("bench").setTime(Instant.now()).build());
        }
    }

    /**
     * CPU seconds used by the workers and by this JVM (broker, node, bench), and how busy the whole
     * machine was (all processes, other users' included: /proc/stat), so a reader can tell a
     * latency-bound run from a CPU-starved one.
     */
    record CpuSample(double workers, double self, MachineCpu machine) {
        static CpuSample take(List<PurgeProcess> procs) {
            double w = procs.stream().mapToDouble(p -> p.cpu().toNanos() / 1e9).sum();
            double me = ProcessHandle.current().info().totalCpuDuration().map(d -> d.toNanos() / 1e9).orElse(0.0);
            return new CpuSample(w, me, MachineCpu.now());
        }

        CpuSample minus(CpuSample o) {
            return new CpuSample(workers - o.workers, self - o.self, machine.minus(o.machine));
        }

        double machineBusy() {
            return machine.busyFraction();
        }
    }

    private static long sum(List<JsonNode> summaries, String type) {
        return summaries.stream().mapToLong(s -> s.path("pages_read").path(type).asLong()).sum();
    }

    /** One worker with the default settings purges the node's own undo-history topic; the node applies the reclaims. */
    private static StoreStats drainForReal(EmbeddedPipeline pipeline) throws Exception {
        PurgeWorker w = PurgeWorker.subscribed(pipeline.config(), pipeline.storeConfig(), "bench-final", 0, new SimpleMeterRegistry());
        Thread t = new Thread(w, "purge-bench-final");
        t.start();
        try {
            long deadline = System.nanoTime() + Duration.ofMinutes(5).toNanos();
            while (pipeline.node().tablespaces().totals().historyLength() > 0 && System.nanoTime() < deadline) {
                Thread.sleep(100);
            }
        } finally {
            w.close();
            t.join(15_000);
        }
        return pipeline.node().tablespaces().totals();
    }

    private ObjectNode summary(List<Run> runs, int versions, int undoRecords, String latencyNote, StoreStats end, FsckReport fsck) {
        ObjectNode j = BenchOutput.newJson();
        j.put("bench", "purge");
        j.put("partitions", partitions);
        j.put("value_size", valueSize.toString()); // as given: "64k", or a range "10k-300k"
        j.put("backlog_versions", versions);
        j.put("undo_records", undoRecords);
        j.put("read_latency_ms", readLatency == null ? 0 : readLatency.toNanos() / 1e6);
        j.put("read_latency", latencyNote);
        j.put("timing", "all workers joined with transactions initialised and the first tenth of each partition's backlog purged "
                + "(warm-up); then from the commit of the rest of the backlog copy (made once the bench JVM's JIT is quiet) to the "
                + "group's commit of its last reclaim record");
        ArrayNode arr = j.putArray("runs");
        for (Run r : runs) {
            ObjectNode o = arr.addObject();
            o.put("workers", r.config.workers);
            o.put("prefetch", r.config.prefetch);
            o.put("skip_load", r.config.skipLoad);
            o.put("versions", r.versions);
            o.put("timed_versions", r.timedVersions);
            o.put("seconds", round(r.seconds, 3));
            o.put("versions_per_s", round(r.versionsPerSecond(), 1));
            o.put("pages_per_s", round(r.pagesPerSecond(), 1));
            o.put("pages_reclaimed", r.pagesReclaimed);
            ObjectNode read = o.putObject("pages_read");
            read.put("root", r.rootRead);
            read.put("index", r.indexRead);
            read.put("data", r.dataRead);
            o.put("worker_versions", r.workerVersions);
            o.put("reclaim_records", r.reclaimRecords);
            o.put("duplicates", r.duplicates);
            o.put("same_extents_as_first_run", r.sameExtents);
            o.put("setup_s", round(r.setupSeconds, 1));
            o.put("workers_through", r.workersThrough);
            ObjectNode cpu = o.putObject("cpu_in_timed_window");
            cpu.put("workers_s", round(r.cpu.workers(), 2));
            cpu.put("broker_node_bench_s", round(r.cpu.self(), 2));
            cpu.put("machine_busy", round(r.cpu.machineBusy(), 2));
        }
        putRatio(j, "scaling_2", find(runs, 2, false, true), find(runs, 1, false, true));
        putRatio(j, "scaling_4", find(runs, 4, false, true), find(runs, 1, false, true));
        putRatio(j, "prefetch_gain", find(runs, 1, true, false), find(runs, 1, false, false));
        j.put("data_pages_read_skip_load", runs.stream().filter(r -> r.config.skipLoad).mapToLong(Run::dataRead).sum());
        j.put("reclaims_identical", runs.stream().allMatch(r -> r.sameExtents && r.duplicates == 0 && r.versions == undoRecords));
        j.put("history_length_end", end.historyLength());
        j.put("fsck_ok", fsck.ok());
        return j;
    }

    private static Run find(List<Run> runs, int workers, boolean prefetch, boolean skipLoad) {
        return runs.stream().filter(r -> r.config.workers == workers && r.config.prefetch == prefetch && r.config.skipLoad == skipLoad)
                .findFirst().orElse(null);
    }

    private static void putRatio(ObjectNode j, String key, Run a, Run b) {
        if (a == null || b == null) {
            j.putNull(key);
        } else {
            j.put(key, round(a.versionsPerSecond() / b.versionsPerSecond(), 2));
        }
    }

    private void chart(List<Run> runs) {
        Map<String, Map<String, Number>> series = BenchOutput.ordered();
        for (Run r : runs) {
            series.computeIfAbsent(r.config.label(), x -> BenchOutput.ordered())
                    .put(r.config.workers + (r.config.workers == 1 ? " worker" : " workers"), round(r.versionsPerSecond(), 1));
        }
        String latency = readLatency == null ? "no injected read latency" : human(readLatency) + " injected per page read";
        BenchOutput.barChart(options.chart, "Purge throughput, " + partitions + " partitions, " + valueSize + " versions, " + latency,
                "versions reclaimed / s", series);
    }

    private boolean onOrOff(String option, String s) {
        return switch (s.trim().toLowerCase(Locale.ROOT)) {
            case "on", "true", "yes" -> true;
            case "off", "false", "no" -> false;
            default -> throw new CommandLine.ParameterException(spec.commandLine(), option + ": expected on or off, got '" + s + "'");
        };
    }

    private static String onOff(boolean b) {
        return b ? "on" : "off";
    }

    static String human(Duration d) {
        long us = d.toNanos() / 1000;
        return us % 1000 == 0 ? us / 1000 + "ms" : us + "us";
    }
}
