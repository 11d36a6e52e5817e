package io.lobstream.app;

import io.lobstream.client.LobClient;
import io.lobstream.store.LobStore;
import io.lobstream.app.bench.KafkaTools;
import io.lobstream.app.bench.PurgeBench;
import io.lobstream.app.embedded.EmbeddedPipeline;
import io.lobstream.app.embedded.PurgeProcess;
import io.lobstream.avro.ReclaimRecord;
import io.lobstream.avro.UndoRecord;
import io.lobstream.purge.PurgeWorkerPool;
import io.lobstream.schema.LobSerdes;
import io.lobstream.schema.LobStreamConfig;
import io.lobstream.store.fsck.FsckReport;
import io.lobstream.store.tablespace.InUseFile;
import io.lobstream.store.tablespace.TablespaceDirs;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Deserializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Purge workers as real processes ({@code lobstream purge} child JVMs) against one real broker,
 * registry and node: crash, rebalance and a data directory that lacks a partition. Every test
 * builds its backlog while no worker of the group runs, then checks that every superseded
 * version was reclaimed exactly once: one committed ReclaimRecord per version, the node applied
 * each once, history is 0 and fsck is clean.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class PurgeWorkersIT {
    static final int PARTITIONS = 4;

    @TempDir
    static Path dir;

    static EmbeddedPipeline pipeline;
    static LobStreamConfig config;
    static Admin admin;
    static final List<PurgeProcess> started = new ArrayList<>();

    @BeforeAll
    static void start() throws Exception {
        pipeline = EmbeddedPipeline.start(dir, null, PARTITIONS, Map.of());
        config = pipeline.config();
        admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, config.bootstrap()));
    }

    /** A failed test leaves no worker behind to purge the next test's backlog. */
    @AfterEach
    void stopWorkers() throws Exception {
        for (PurgeProcess p : started) {
            p.close();
        }
        started.clear();
    }

    @AfterAll
    static void stop() throws Exception {
        for (PurgeProcess p : started) {
            p.close();
        }
        if (admin != null) {
            admin.close();
        }
        if (pipeline != null) {
            pipeline.close();
        }
    }

    /** A worker process: slow page reads and small transactions, so a backlog lasts seconds; quick failure detection. */
    static PurgeProcess worker(String id, Path dataDir, String group) throws Exception {
        return worker(id, dataDir, group, 20, 4);
    }

    static PurgeProcess worker(String id, Path dataDir, String group, int maxPollRecords, int readLatencyMs) throws Exception {
        Map<String, String> c = new HashMap<>();
        c.put(LobStreamConfig.PURGE_GROUP.name(), group);
        c.put("lob.purge.prefetch", "false");
        c.put("lob.purge.skip.load", "false");
        c.put("max.poll.records", Integer.toString(maxPollRecords));
        c.put("session.timeout.ms", "6000");
        c.put("heartbeat.interval.ms", "1000");
        c.put("transaction.timeout.ms", "8000");
        PurgeProcess p = PurgeProcess.start(id, pipeline.cluster().bootstrap(), pipeline.cluster().registryUrl(), dataDir,
                Duration.ofMillis(readLatencyMs), c, dir.resolve("it-logs"));
        started.add(p);
        return p;
    }

    /** Writes {@code versions} superseded versions over ids balanced across the partitions; waits until the node applied them. */
    static void backlog(String prefix, int ids, int versions) throws Exception {
        long historyBefore = pipeline.node().tablespaces().totals().historyLength();
        supersede(prefix, ids, versions);
        await().atMost(Duration.ofSeconds(60)).until(() -> pipeline.node().tablespaces().totals().historyLength() >= historyBefore + versions);
    }

    /** Writes {@code versions} new versions over {@code ids} LOBs (each one a PUT first), and waits for Kafka's acknowledgements. */
    static void supersede(String prefix, int ids, int versions) throws Exception {
        List<String> names = PurgeBench.balancedIds(prefix + "-", PARTITIONS, ids / PARTITIONS);
        byte[] value = new byte[40_000];
        new Random(prefix.hashCode()).nextBytes(value);
        List<CompletableFuture<?>> acks = new ArrayList<>();
        try (LobClient client = new LobClient(config)) {
            for (int i = 0; i < names.size() + versions; i++) {
                value[0] = (byte) i;
                acks.add(client.put(names.get(i % names.size()), value.clone(), null));
            }
            client.flush();
            CompletableFuture.allOf(acks.toArray(CompletableFuture[]::new)).get();
        }
    }

    static String tail(String log, int lines) {
        List<String> all = log.lines().toList();
        return String.join("\n", all.subList(Math.max(0, all.size() - lines), all.size()));
    }

    static int partition(String lobId) {
        return Nodes.partitionOf(lobId, PARTITIONS);
    }

    static double reclaims(String outcome) {
        var c = pipeline.node().meters().find("lob_reclaims").tag("outcome", outcome).counter();
        return c == null ? 0 : c.count();
    }

    /** Committed (or, read_uncommitted, all) reclaim records of LOBs named {@code prefix-*}. */
    static List<ReclaimRecord> reclaimRecords(String prefix) {
        return reclaimRecords(prefix, IsolationLevel.READ_COMMITTED);
    }

    static List<ReclaimRecord> reclaimRecords(String prefix, IsolationLevel isolation) {
        Deserializer<Object> des = LobSerdes.valueDeserializer(config);
        List<ReclaimRecord> out = new ArrayList<>();
        for (ConsumerRecord<byte[], byte[]> r : KafkaTools.readAll(config.bootstrap(), config.topics().reclaim(), isolation)) {
            ReclaimRecord rec = LobSerdes.decode(des, r.topic(), r.value(), ReclaimRecord.class);
            if (rec.getLobId().startsWith(prefix + "-")) {
                out.add(rec);
            }
        }
        return out;
    }

    /** One committed reclaim record per superseded version, each applied once; history 0; fsck clean. */
    static List<ReclaimRecord> assertReclaimedExactlyOnce(String prefix, int versions, double appliedBefore) throws Exception {
        // history is 0 too while the last commands sent wait to be applied: first their reclaims
        await().atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(200)).until(() -> reclaims("applied") - appliedBefore >= versions);
        await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(200))
                .until(() -> pipeline.node().tablespaces().totals().historyLength() == 0);
        // then no pending version at all: compaction, which the holes purge left start, moves live versions and
        // frees each old copy itself moments later
        await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(200)).until(() -> fsck().pagesHistory() == 0);
        List<ReclaimRecord> committed = reclaimRecords(prefix);
        Map<String, Long> perVersion = new HashMap<>();
        committed.forEach(r -> perVersion.merge(r.getLobId() + "@" + r.getVersion(), 1L, Long::sum));
        assertThat(perVersion).hasSize(versions);
        assertThat(perVersion.values()).as("reclaim records per superseded version").containsOnly(1L);
        assertThat(reclaims("applied") - appliedBefore).as("reclaims the node applied").isEqualTo(versions);
        assertThat(fsck().problems()).isEmpty();
        return committed;
    }

    static FsckReport fsck() throws IOException {
        FsckReport fsck = FsckReport.empty();
        for (LobStore s : pipeline.node().tablespaces().all().values()) {
            fsck = fsck.plus(s.fsck(true));
        }
        return fsck;
    }

    @Test
    @Order(1)
    void killedWorkersPartitionsGoToTheSurvivorAndEveryVersionIsReclaimedOnce() throws Exception {
        String group = config.get(LobStreamConfig.PURGE_GROUP);
        double applied = reclaims("applied");
        int ids = 16;
        int versions = 480;
        backlog("kill", ids, versions);
        // 10 ms per page read, polls of up to 100 records spanning two partitions (120 each): a transaction sends
        // one partition's reclaim records, then reads the next one's pages for a while before it commits
        PurgeProcess b = worker("kill-b", dir, group, 100, 10);
        String killed = null;
        Set<String> abortedByKilled = Set.of();
        StringBuilder attempts = new StringBuilder(); // what a worker that never held an open transaction did, for the failure
        // kill a worker while one of its transactions holds reclaim records it has not committed (the high
        // watermark of a partition it writes is past the last stable offset); if the commit wins the race
        // against the kill, the survivor carries on and a new worker is started and killed
        for (int attempt = 0; attempt < 4 && killed == null; attempt++) {
            String id = "kill-a" + attempt;
            if (attempt > 0) {
                KafkaTools.awaitGroup(admin, group, 1, PARTITIONS, Duration.ofSeconds(60)); // the killed worker's member gone
            }
            PurgeProcess a = worker(id, dir, group, 100, 10);
            KafkaTools.awaitGroup(admin, group, 2, PARTITIONS, Duration.ofSeconds(60));
            await().atMost(Duration.ofSeconds(60)).until(() -> !KafkaTools.owned(admin, group, "purge-" + id).isEmpty());
            Set<Integer> owned = KafkaTools.owned(admin, group, "purge-" + id).stream().map(TopicPartition::partition)
                    .collect(Collectors.toSet());
            if (attempt > 0) {
                // b had purged a's partitions before a got them (a loaded machine starts a's JVM slowly): more backlog,
                // written now that a owns its partitions, so that only a purges their share of it
                supersede("kill", ids, 480);
                versions += ids + 480; // the ids existed: their first PUT supersedes a version too
            }
            try {
                await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(5)).until(() -> {
                    Map<TopicPartition, Long> written = KafkaTools.endOffsets(admin, config.topics().reclaim(), PARTITIONS, IsolationLevel.READ_UNCOMMITTED);
                    Map<TopicPartition, Long> stable = KafkaTools.endOffsets(admin, config.topics().reclaim(), PARTITIONS, IsolationLevel.READ_COMMITTED);
                    return owned.stream().map(p -> new TopicPartition(config.topics().reclaim(), p))
                            .anyMatch(tp -> written.get(tp) > stable.get(tp));
                });
            } catch (org.awaitility.core.ConditionTimeoutException drained) {
                attempts.append("\n").append(id).append(" owned ").append(owned).append(", its log ends:\n").append(tail(a.log(), 15));
                a.kill();
                continue;
            }
            a.kill();
            // the versions whose reclaims it sent and never committed: its open transaction's, and those of any it
            // aborted before (a rebalance) and did not redo itself. Counts alone would take an earlier aborted
            // transaction, redone by the worker itself, for the open one (seen once in CI)
            Set<String> aborted = reclaimRecords("kill", IsolationLevel.READ_UNCOMMITTED).stream()
                    .filter(r -> r.getWorkerId().equals(id)).map(r -> r.getLobId() + "@" + r.getVersion())
                    .collect(Collectors.toCollection(java.util.HashSet::new));
            reclaimRecords("kill").stream().filter(r -> r.getWorkerId().equals(id)).forEach(r -> aborted.remove(r.getLobId() + "@" + r.getVersion()));
            if (!aborted.isEmpty()) {
                killed = id;
                abortedByKilled = aborted;
            }
        }
        assertThat(killed).as("a worker killed with an open transaction holding reclaim records%s\nb's log ends:\n%s", attempts,
                tail(b.log(), 15)).isNotNull();
        // what the killed worker sent in that transaction is aborted, never applied, and redone by the survivor
        List<ReclaimRecord> committed = assertReclaimedExactlyOnce("kill", versions, applied);
        Set<String> aborted = abortedByKilled;
        assertThat(committed.stream().filter(r -> aborted.contains(r.getLobId() + "@" + r.getVersion())))
                .as("the versions %s sent and never committed, redone by the survivor", killed)
                .hasSize(aborted.size()).allSatisfy(r -> assertThat(r.getWorkerId()).isEqualTo("kill-b"));
        assertThat(b.isAlive()).isTrue();
        // what an operator scaling workers scrapes from each of them (lobstream purge --metrics-port)
        long byB = committed.stream().filter(r -> r.getWorkerId().equals("kill-b")).count();
        String metrics = b.metrics();
        assertThat(metricValue(metrics, "lob_purge_versions_total{worker=\"kill-b\"}")).isGreaterThanOrEqualTo(byB);
        assertThat(metricValue(metrics, "lob_purge_pages_read_total{type=\"root\",worker=\"kill-b\"}")).isGreaterThanOrEqualTo(byB);
        b.stop();
    }

    /** The value of one sample line of a Prometheus scrape. */
    static double metricValue(String scrape, String series) {
        return scrape.lines().filter(l -> l.startsWith(series + " ")).mapToDouble(l -> Double.parseDouble(l.substring(series.length() + 1)))
                .findFirst().orElseThrow(() -> new AssertionError(series + " not in\n" + scrape));
    }

    @Test
    @Order(2)
    void aThirdWorkerJoiningDuringABacklogTakesPartitionsWithoutLossOrDuplicates() throws Exception {
        String group = config.get(LobStreamConfig.PURGE_GROUP);
        backlog("join", 16, 480);
        double applied = reclaims("applied");
        // 20 ms per page read (4 reads a version, no prefetch): two workers need about 20 s, the third joins after a few
        // (on a quiet machine 10 ms let two workers drain the backlog before the third had started; the versions written
        // below once it is in the group are its share in any case)
        PurgeProcess a = worker("join-a", dir, group, 20, 20);
        PurgeProcess b = worker("join-b", dir, group, 20, 20);
        KafkaTools.awaitGroup(admin, group, 2, PARTITIONS, Duration.ofSeconds(60));
        await().atMost(Duration.ofSeconds(30)).until(() -> reclaims("applied") - applied >= 20);
        PurgeProcess c = worker("join-c", dir, group, 20, 20);
        KafkaTools.awaitGroup(admin, group, 3, PARTITIONS, Duration.ofSeconds(60));
        // a and b may have drained the backlog while c's JVM started (a loaded machine): versions written now, with c
        // owning partitions, give it records only it purges
        supersede("join", 16, 160);
        int versions = 480 + 16 + 160; // the ids existed: their first PUT supersedes a version too
        List<ReclaimRecord> committed = assertReclaimedExactlyOnce("join", versions, applied);
        assertThat(committed.stream().filter(r -> r.getWorkerId().equals("join-c")).count())
                .as("the third worker reclaimed part of the backlog").isPositive();
        for (PurgeProcess p : List.of(a, b, c)) {
            assertThat(p.stop()).as("clean stop prints a summary").isNotNull();
        }
    }

    @Test
    @Order(3)
    void aPartitionNoWorkerHoldsTheTablespaceOfIsSaidLeftAndTakenUpOnceItAppears() throws Exception {
        String group = "it-missing-partition";
        String undo = config.topics().undoHistory();
        // the group starts at the current end, so it sees only this test's records
        Map<TopicPartition, Long> end = KafkaTools.endOffsets(admin, undo, PARTITIONS);
        Map<TopicPartition, OffsetAndMetadata> start = new HashMap<>();
        end.forEach((tp, o) -> start.put(tp, new OffsetAndMetadata(o)));
        admin.alterConsumerGroupOffsets(group, start).all().get();
        // a data directory with the tablespaces of partitions 0..2 only
        Path partial = dir.resolve("partial");
        for (int p = 0; p < PARTITIONS - 1; p++) {
            Path link = TablespaceDirs.partitionDir(partial, p);
            Files.createDirectories(link.getParent());
            Files.createSymbolicLink(link, TablespaceDirs.partitionDir(dir, p).toAbsolutePath());
        }
        backlog("miss", 8, 40);
        double applied = reclaims("applied");
        PurgeProcess w = worker("miss-a", partial, group);
        // per partition, just past the last of this test's undo records (the writer commits them every lob.writer.commit.interval.ms)
        Map<TopicPartition, Long> target = new HashMap<>();
        await().atMost(Duration.ofSeconds(30)).until(() -> {
            target.clear();
            Deserializer<Object> des = LobSerdes.valueDeserializer(config);
            long n = 0;
            for (ConsumerRecord<byte[], byte[]> r : KafkaTools.readAll(config.bootstrap(), undo)) {
                if (LobSerdes.decode(des, r.topic(), r.value(), UndoRecord.class).getLobId().startsWith("miss-")) {
                    target.merge(new TopicPartition(undo, r.partition()), r.offset() + 1, Math::max);
                    n++;
                }
            }
            return n == 40;
        });
        TopicPartition lacking = new TopicPartition(undo, PARTITIONS - 1);
        await().atMost(Duration.ofSeconds(60)).failFast("worker log", () -> {
            if (!w.isAlive()) {
                throw new AssertionError("worker exited: " + w.log());
            }
        }).alias("the worker commits partitions 0-2; log so far: " + w.logFile()).until(() -> {
            Map<TopicPartition, Long> c = KafkaTools.committed(admin, group);
            for (int p = 0; p < PARTITIONS - 1; p++) {
                TopicPartition tp = new TopicPartition(undo, p);
                if (c.getOrDefault(tp, 0L) < target.get(tp)) {
                    return false;
                }
            }
            return true;
        });
        assertThat(w.log()).as("the group leaves it unassigned, and says why")
                .contains("no member's data directory holds the tablespace of [" + lacking + "]");
        assertThat(KafkaTools.committed(admin, group).get(lacking)).as("nothing committed for the lacking partition")
                .isEqualTo(start.get(lacking).offset());
        assertThat(pipeline.node().tablespaces().get(PARTITIONS - 1).orElseThrow().stats().historyLength())
                .as("its versions are still pending").isEqualTo(10);
        await().atMost(Duration.ofSeconds(30)).until(() -> reclaims("applied") - applied == 30);
        // the tablespace appears (a node created it, a volume was mounted): the worker sees it within 10 s, asks the group
        // to assign again, and purges the partition from where the group left it
        Path link = TablespaceDirs.partitionDir(partial, PARTITIONS - 1);
        Files.createSymbolicLink(link, TablespaceDirs.partitionDir(dir, PARTITIONS - 1).toAbsolutePath());
        assertReclaimedExactlyOnce("miss", 40, applied);
        assertThat(w.stop()).as("clean stop prints a summary").isNotNull();
    }

    /**
     * One worker beside each node, each data directory with its node's tablespaces only: the group gives each worker the
     * partitions whose tablespaces it holds. Kafka's sticky assignor, used before, split them by count, and a worker held
     * the other's partitions paused for good.
     */
    @Test
    @Order(5)
    void workersBesideDifferentTablespacesAreEachGivenTheirOwn() throws Exception {
        String group = "it-beside-their-own";
        Map<TopicPartition, OffsetAndMetadata> start = new HashMap<>();
        KafkaTools.endOffsets(admin, config.topics().undoHistory(), PARTITIONS).forEach((tp, o) -> start.put(tp, new OffsetAndMetadata(o)));
        admin.alterConsumerGroupOffsets(group, start).all().get();
        // as two hosts would see them: partitions 0 and 2 on one, 1 and 3 on the other (not what a split by count gives)
        Map<String, Set<Integer>> hosts = Map.of("even", Set.of(0, 2), "odd", Set.of(1, 3));
        double applied = reclaims("applied");
        for (var host : hosts.entrySet()) {
            worker("beside-" + host.getKey(), host(host.getKey(), host.getValue()), group);
        }
        for (var host : hosts.entrySet()) {
            awaitOwned(group, "beside-" + host.getKey(), host.getValue());
        }
        supersede("own", 8, 40);
        assertReclaimedExactlyOnce("own", 40, applied);
    }

    /**
     * A node keeps its copy of a partition that moved to another node. The worker beside it held that copy, and the
     * group could leave the partition with it: it skipped the new owner's undo records as another copy's. Now it holds the
     * copies its node lists as in use ({@code node.in-use}), and the partitions go to the workers beside their owners.
     */
    @Test
    @Order(6)
    void aCopyANodeNoLongerUsesIsLetGoToTheWorkerBesideTheOwner() throws Exception {
        // the running node says what it uses, as a's node would: every partition, open in its tasks
        await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(200)).until(() -> InUseFile.read(dir)
                .map(InUseFile.Contents::partitions).orElse(Set.of()), Set.of(0, 1, 2, 3)::equals);
        String group = "it-copy-left-behind";
        Map<TopicPartition, OffsetAndMetadata> start = new HashMap<>();
        KafkaTools.endOffsets(admin, config.topics().undoHistory(), PARTITIONS).forEach((tp, o) -> start.put(tp, new OffsetAndMetadata(o)));
        admin.alterConsumerGroupOffsets(group, start).all().get();
        // host a kept copies of every partition but uses partition 0 only; host b owns the rest. Held by copies alone, the
        // group evens out two and two, and one of b's partitions goes to a's worker
        Path a = host("a", Set.of(0, 1, 2, 3));
        Path b = host("b", Set.of(1, 2, 3));
        ScheduledExecutorService nodeA = Executors.newSingleThreadScheduledExecutor();
        AtomicLong seq = new AtomicLong();
        try {
            nodeA.scheduleWithFixedDelay(() -> {
                try {
                    InUseFile.write(a, "it", seq.incrementAndGet(), List.of(0)); // as a running node rewrites it
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }, 0, 2, TimeUnit.SECONDS);
            await().atMost(Duration.ofSeconds(10)).until(() -> seq.get() > 0);
            double applied = reclaims("applied");
            worker("beside-a", a, group);
            worker("beside-b", b, group);
            awaitOwned(group, "beside-a", Set.of(0));
            awaitOwned(group, "beside-b", Set.of(1, 2, 3));
            supersede("left", 8, 40);
            assertReclaimedExactlyOnce("left", 40, applied);
        } finally {
            nodeA.shutdownNow();
        }
    }

    /** A data directory {@code host-NAME} as another host's would be, with copies of {@code partitions} (links to the node's). */
    private static Path host(String name, Set<Integer> partitions) throws Exception {
        Path data = dir.resolve("host-" + name);
        for (int p : partitions) {
            Path link = TablespaceDirs.partitionDir(data, p);
            Files.createDirectories(link.getParent());
            Files.createSymbolicLink(link, TablespaceDirs.partitionDir(dir, p).toAbsolutePath());
        }
        return data;
    }

    private static void awaitOwned(String group, String worker, Set<Integer> partitions) {
        await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(200)).until(() -> KafkaTools.owned(admin, group,
                "purge-" + worker).stream().map(TopicPartition::partition).collect(Collectors.toSet()), partitions::equals);
    }

    /**
     * A node's own workers ({@code node --purge-workers N}, which follow its partitions and are no members of the group)
     * and a standalone one in the same purge group: the group gives the standalone one every partition, and the node's
     * stand down from them while it purges them (each version was reclaimed twice, the group's offsets committed by both);
     * once it has gone, the node's purge again from the group's offsets.
     */
    @Test
    @Order(4)
    void aNodesOwnWorkersStandDownWhileAStandaloneWorkerIsInTheGroup() throws Exception {
        try (PurgeWorkerPool own = PurgeWorkerPool.following(config, pipeline.storeConfig(), "it-own", new SimpleMeterRegistry(),
                () -> pipeline.node().tablespaces().all().keySet(), 1)) {
            PurgeProcess solo = worker("solo", dir, config.get(LobStreamConfig.PURGE_GROUP));
            await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(200))
                    .until(() -> own.standingDownFrom().size() == PARTITIONS && own.workers().get(0).followed().isEmpty());
            double applied = reclaims("applied");
            supersede("beside", 8, 40);
            assertReclaimedExactlyOnce("beside", 40, applied);
            assertThat(solo.stop()).as("clean stop prints a summary").isNotNull();
            await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(200)).until(() -> own.standingDownFrom().isEmpty());
            applied = reclaims("applied");
            supersede("alone", 8, 40);
            assertReclaimedExactlyOnce("alone", 40, applied);
        }
    }
}
