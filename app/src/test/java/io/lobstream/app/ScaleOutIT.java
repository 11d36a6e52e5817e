package io.lobstream.app;

import io.lobstream.app.bench.KafkaTools;
import io.lobstream.app.embedded.EmbeddedCluster;
import io.lobstream.client.LobClient;
import io.lobstream.ingest.LobNode;
import io.lobstream.purge.PurgeWorker;
import io.lobstream.schema.LobStreamConfig;
import io.lobstream.store.LobStore;
import io.lobstream.store.LobStoreConfig;
import io.lobstream.store.fsck.FsckReport;
import io.lobstream.store.impl.DefaultLobStore;
import io.lobstream.store.index.LobIndex;
import io.lobstream.store.index.VersionEntry;
import io.lobstream.store.tablespace.TablespaceDescriptor;
import io.lobstream.store.tablespace.TablespaceDirs;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.assertj.core.api.InstanceOfAssertFactories;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.io.TempDir;

import java.net.http.HttpResponse;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.StandardOpenOption;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArraySet;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;

import static io.lobstream.app.Nodes.bytes;
import static io.lobstream.app.Nodes.get;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Two writer nodes (each its own data directory and HTTP port) on one real broker: they split
 * the partitions; a node restarted under the same node id (static membership) gets its
 * partitions back without the other node ever taking them; a node that leaves hands its
 * partitions to the survivor, which has no tablespace for them and rebuilds them from
 * {@code lob.commands}; a node that comes back with stale tablespaces catches them up.
 * After each step every value is readable from both nodes, byte for byte, and fsck is clean.
 * Each node runs a purge worker that follows its partitions through all of this, and at the end
 * history has drained on both nodes: no version left pending for good by a partition's moves.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ScaleOutIT {
    @TempDir
    static Path dir;

    static EmbeddedCluster cluster;
    static LobStreamConfig configA;
    static LobStreamConfig configB;
    static volatile LobNode a;
    static volatile LobNode b;
    static LobClient client;
    static PurgeWorker purgeA;
    static PurgeWorker purgeB;
    static Thread purgeThreadA;
    static Thread purgeThreadB;
    /** What every id must read as; null = deleted. */
    static final Map<String, byte[]> expected = new LinkedHashMap<>();
    static int round;

    @BeforeAll
    static void start() throws Exception {
        cluster = EmbeddedCluster.start(dir.resolve("cluster"), 0, 0, 0);
        // a restart (close(false), start) must end within the session: a slow machine's took more than the default 45 s
        Map<String, Object> longSession = Map.of(LobStreamConfig.SESSION_TIMEOUT_MS.name(), 180_000);
        configA = Nodes.config(cluster, dir.resolve("a"), 4, "scale-a", 1, longSession);
        configB = Nodes.config(cluster, dir.resolve("b"), 4, "scale-b", 1, longSession);
        a = Nodes.start(configA);
        b = Nodes.start(configB);
        awaitSplit();
        client = new LobClient(configA);
        // as `node --purge-workers 1` runs them: each follows whatever its node owns at the moment
        purgeA = PurgeWorker.following(configA, LobStoreConfig.defaults(), "scale-purge-a", purgeMetersA,
                () -> a == null ? Set.of() : a.tablespaces().all().keySet());
        purgeThreadA = new Thread(purgeA, "purge-a");
        purgeThreadA.start();
        startPurgeB();
    }

    /** a's purge worker's meters: it counts the undo records of b's copies it skips. */
    static final SimpleMeterRegistry purgeMetersA = new SimpleMeterRegistry();

    static void startPurgeB() {
        purgeB = PurgeWorker.following(configB, LobStoreConfig.defaults(), "scale-purge-b", new SimpleMeterRegistry(),
                () -> b == null ? Set.of() : b.tablespaces().all().keySet());
        purgeThreadB = new Thread(purgeB, "purge-b");
        purgeThreadB.start();
    }

    @AfterAll
    static void stop() throws InterruptedException {
        try {
            try {
                stopPurge(purgeA, purgeThreadA);
            } finally {
                stopPurge(purgeB, purgeThreadB);
            }
        } finally {
            Nodes.closeAll(client, cluster, b, a);
        }
    }

    /**
     * Closes a purge worker and waits for its thread to end: {@link PurgeWorker#close} only asks it to stop, and one left
     * running would go on against closed tablespaces and a broker gone, in the JVM later test classes share.
     */
    static void stopPurge(PurgeWorker worker, Thread thread) throws InterruptedException {
        if (worker != null) {
            worker.close();
        }
        if (thread != null) {
            thread.join(60_000);
            assertThat(thread.isAlive()).as(thread.getName() + " ended").isFalse();
        }
    }

    static void awaitSplit() {
        Nodes.awaitSplit(a, b, 4);
    }

    /** Puts, updates and deletes over 40 ids, small values, and waits for them to be acknowledged. */
    static void writeRound() throws Exception {
        round++;
        for (int i = 0; i < 40; i++) {
            String id = "scale-" + i;
            if ((i + round) % 7 == 0) {
                client.delete(id).get();
                expected.put(id, null);
            } else if ((i + round) % 3 != 0 || !expected.containsKey(id)) {
                byte[] v = bytes(1000 + 97 * i + round, 1000L * round + i);
                client.put(id, v, null).get();
                expected.put(id, v);
            }
        }
    }

    static void assertAllReadable(LobNode... nodes) {
        assertReadable(expected, nodes);
    }

    static void assertReadable(Map<String, byte[]> values, LobNode... nodes) {
        await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(200)).untilAsserted(() -> {
            for (LobNode via : nodes) {
                for (Map.Entry<String, byte[]> e : values.entrySet()) {
                    HttpResponse<byte[]> r = get(via, e.getKey(), null);
                    if (e.getValue() == null) {
                        assertThat(r.statusCode()).as(e.getKey() + " (deleted) via :" + via.httpPort()).isEqualTo(404);
                    } else {
                        assertThat(r.statusCode()).as(e.getKey() + " via :" + via.httpPort()).isEqualTo(200);
                        assertThat(Arrays.mismatch(r.body(), e.getValue())).as(e.getKey() + " first differing byte").isEqualTo(-1);
                    }
                }
            }
        });
    }

    /**
     * Ends each partition with a record that does not decode, and waits for the writer group to
     * commit past it: dead-lettered, it records no applied offset, so a tablespace caught up to
     * the committed offset still shows an applied offset below it (a catch-up that asked again
     * would never end).
     */
    static void endWithARecordThatRecordsNoOffset(Set<Integer> partitions) throws Exception {
        String commands = configA.topics().commands();
        Map<TopicPartition, Long> last = new HashMap<>();
        try (KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap()),
                new ByteArraySerializer(), new ByteArraySerializer())) {
            for (int partition : partitions) {
                RecordMetadata md = p.send(new ProducerRecord<>(commands, partition, "garbage".getBytes(), new byte[]{1, 2, 3})).get();
                last.put(new TopicPartition(commands, partition), md.offset());
            }
        }
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap()))) {
            await().atMost(Duration.ofSeconds(60)).until(() -> {
                Map<TopicPartition, Long> committed = KafkaTools.committed(admin, configA.get(LobStreamConfig.APPLICATION_ID));
                return last.entrySet().stream().allMatch(e -> committed.getOrDefault(e.getKey(), 0L) > e.getValue());
            });
        }
    }

    static void assertFsckClean(LobNode node) throws Exception {
        FsckReport r = Nodes.fsck(node);
        assertThat(r.problems()).isEmpty();
        assertThat(r.ok()).isTrue();
    }

    @Test
    @Order(1)
    void twoNodesSplitThePartitionsAndServeEveryKey() throws Exception {
        writeRound();
        assertAllReadable(a, b);
        assertThat(Nodes.partitions(a)).doesNotContainAnyElementsOf(Nodes.partitions(b));
    }

    @Test
    @Order(2)
    void aQuickRestartUnderTheSameNodeIdKeepsThePartitions() throws Exception {
        Set<Integer> mine = Nodes.partitions(a);
        Set<Integer> theirs = Nodes.partitions(b);
        Set<Integer> seenOnB = new CopyOnWriteArraySet<>();
        AtomicBoolean watching = new AtomicBoolean(true);
        AtomicReference<Throwable> watchFailed = new AtomicReference<>();
        Thread watcher = new Thread(() -> {
            try {
                while (watching.get()) {
                    seenOnB.addAll(Nodes.partitions(b));
                    Thread.sleep(20);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (RuntimeException | Error e) { // a watcher that died would have seen nothing b opened: the test passed
                watchFailed.set(e);
            }
        });
        watcher.start();
        try {
            a.close(false); // a static member stays in the group until its session times out
            writeRound();   // commands for a's partitions wait in Kafka meanwhile
            a = Nodes.start(configA);
            awaitSplit();
        } finally {
            watching.set(false);
            watcher.join();
        }
        assertThat(watchFailed.get()).as("the watcher of b's partitions ran to the end").isNull();
        assertThat(Nodes.partitions(a)).isEqualTo(mine);
        assertThat(Nodes.partitions(b)).isEqualTo(theirs);
        assertThat(seenOnB).as("partitions b opened while a restarted").isEqualTo(theirs);
        assertAllReadable(a, b);
    }

    @Test
    @Order(3)
    void partitionsOfANodeThatLeavesAreRebuiltOnTheSurvivor() throws Exception {
        Set<Integer> moved = Nodes.partitions(b);
        Map<String, byte[]> bulkValues = new LinkedHashMap<>(); // checked here only: reading them all is slow via the proxy
        List<CompletableFuture<?>> bulk = new ArrayList<>();
        for (int i = 0; i < 800; i++) { // ~200 commands a partition to catch up on a's lob-rebuild threads
            byte[] v = bytes(64 + i % 50, i);
            bulk.add(client.put("bulk-" + i, v, null));
            bulkValues.put("bulk-" + i, v);
        }
        CompletableFuture.allOf(bulk.toArray(CompletableFuture[]::new)).get();
        endWithARecordThatRecordsNoOffset(moved);
        b.close(true); // leaves the group: its partitions move to a, which has no tablespace for them
        b = null;
        await().atMost(Duration.ofSeconds(120)).until(() -> Nodes.partitions(a).size() == 4
                && a.streams().state() == org.apache.kafka.streams.KafkaStreams.State.RUNNING);
        for (int p : moved) {
            assertThat(a.tablespaces().get(p).orElseThrow().stats().lobs()).as("LOBs rebuilt in partition " + p).isPositive();
        }
        assertReadable(bulkValues, a);
        assertThat(a.meters().find("lob_rebuilds_completed").counters().stream().mapToDouble(c -> c.count()).sum())
                .as("catch-ups run beside the stream thread, whose task init gave way meanwhile (LockException)")
                .isGreaterThanOrEqualTo(moved.size());
        assertAllReadable(a);
        writeRound();
        assertAllReadable(a);
        assertFsckClean(a);
    }

    /**
     * b's old copies miss the commands a applied meanwhile. Each that catches up takes a new copy id first: b cannot
     * tell an old copy from one restored from a backup, whose version numbers, issued again, could go to other values
     * under ETags it gave out before.
     */
    @Test
    @Order(4)
    void aNodeThatComesBackCatchesUpItsStaleTablespaces() throws Exception {
        writeRound();
        Map<Integer, String> before = copyIdsOnDisk(configB);
        b = Nodes.start(configB);
        awaitSplit();
        assertAllReadable(a, b);
        Set<Integer> caughtUp = new HashSet<>(Nodes.partitions(b));
        caughtUp.retainAll(before.keySet());
        assertThat(caughtUp).as("partitions b got back, with an old copy").isNotEmpty();
        for (int p : caughtUp) {
            assertThat(b.tablespaces().get(p).orElseThrow().copyId()).as("p-" + p + "'s copy id after its catch-up")
                    .isNotEqualTo(before.get(p)).isEqualTo(copyIdsOnDisk(configB).get(p));
        }
        await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(200)).untilAsserted(() -> {
            for (Map.Entry<String, byte[]> e : expected.entrySet()) {
                if (e.getValue() != null) {
                    HttpResponse<byte[]> r = get(b, e.getKey(), null);
                    assertThat(r.statusCode()).as(e.getKey() + " via b").isEqualTo(200);
                    assertThat(r.headers().firstValue("ETag")).as(e.getKey() + "'s ETag").get(InstanceOfAssertFactories.STRING)
                            .doesNotContain(before.values().toArray(String[]::new));
                }
            }
        });
        writeRound();
        assertAllReadable(a, b);
        assertFsckClean(a);
        assertFsckClean(b);
    }

    /** The copy id in each tablespace descriptor of a node's data directory, by partition. */
    static Map<Integer, String> copyIdsOnDisk(LobStreamConfig config) throws IOException {
        Map<Integer, String> ids = new HashMap<>();
        for (int p = 0; p < 4; p++) {
            Path d = TablespaceDirs.partitionDir(Path.of(config.get(LobStreamConfig.DATA_DIR)), p);
            if (Files.exists(d.resolve(TablespaceDirs.DESCRIPTOR))) {
                ids.put(p, TablespaceDescriptor.read(d).copyId());
            }
        }
        return ids;
    }

    /**
     * A node leaves with versions pending purge, and its partitions come back to it before any
     * new command arrives, so its copies are current and nothing is caught up. Meanwhile the
     * worker following the partitions on the other node consumed their undo records and could
     * not reclaim them (they name pages of the copy that left). The node produces the undo
     * records of its pending versions again when it reopens the tablespaces, so its history
     * drains (without that, those versions stayed history for good).
     */
    @Test
    @Order(5)
    void versionsLeftPendingByANodeThatLeftAndCameBackAreStillPurged() throws Exception {
        stopPurge(purgeB, purgeThreadB); // b's undo records of the next round stay unpurged
        writeRound();
        assertAllReadable(a, b);
        await().atMost(Duration.ofSeconds(30)).until(() -> b.tablespaces().totals().historyLength() > 0);
        Set<Integer> hadWhenItLeft = Nodes.partitions(b); // b's disk also has older copies, stale ones
        b.close(true);
        b = null;
        await().atMost(Duration.ofSeconds(120)).until(() -> Nodes.partitions(a).size() == 4
                && a.streams().state() == org.apache.kafka.streams.KafkaStreams.State.RUNNING);
        String undo = configA.topics().undoHistory();
        String group = configA.get(LobStreamConfig.PURGE_GROUP);
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap()))) {
            Map<TopicPartition, Long> end = KafkaTools.endOffsets(admin, undo, 4);
            await().atMost(Duration.ofSeconds(60)).alias("a's worker consumed every undo record").until(() -> {
                Map<TopicPartition, Long> committed = KafkaTools.committed(admin, group);
                return end.entrySet().stream().allMatch(e -> committed.getOrDefault(e.getKey(), 0L) >= e.getValue());
            });
        }
        assertThat(purgeMetersA.find("lob_purge_other_copy").counter().count())
                .as("b's undo records, naming pages of b's copies, skipped by a's worker, not read in a's").isPositive();
        Map<Integer, String> copies = copyIdsOnDisk(configB);
        b = Nodes.start(configB); // no command since it left: its copies are current
        startPurgeB();
        awaitSplit();
        for (int p : Nodes.partitions(b)) {
            if (hadWhenItLeft.contains(p)) {
                assertThat(b.tablespaces().get(p).orElseThrow().copyId()).as("p-" + p + ", current, keeps its copy id")
                        .isEqualTo(copies.get(p));
            }
        }
        await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(200)).untilAsserted(() -> {
            assertThat(a.tablespaces().totals().historyLength()).as("history on a").isZero();
            assertThat(b.tablespaces().totals().historyLength()).as("history on b").isZero();
        });
        assertThat(purgeThreadA.isAlive() && purgeThreadB.isAlive()).as("both purge workers still running").isTrue();
        assertAllReadable(a, b);
        assertFsckClean(a);
        assertFsckClean(b);
    }

    /**
     * A tablespace whose fsync failed (here: its marker, as the store writes it) is not opened again,
     * nor one a power loss left with a version whose pages did not reach the disk (here: what the
     * loss leaves, an unclean index whose last flush covered no version, and a root page of zeros):
     * its node moves each aside and rebuilds the partition from lob.commands, commands applied while
     * it was down included.
     */
    @Test
    @Order(6)
    void aTablespaceWhoseSyncFailedOrThatLostPagesIsMovedAsideAndRebuiltFromKafka() throws Exception {
        List<Integer> mine = List.copyOf(Nodes.partitions(a));
        assertThat(mine).hasSizeGreaterThan(1);
        int p = mine.get(0);
        int q = mine.get(1);
        Path failed = TablespaceDirs.partitionDir(configA.dataDir(), p);
        a.close(false);
        Files.writeString(failed.resolve(TablespaceDirs.SYNC_FAILED), "simulated: Input/output error");
        loseARootPageInAPowerLoss(TablespaceDirs.partitionDir(configA.dataDir(), q));
        writeRound();
        a = Nodes.start(configA);
        awaitSplit();
        assertThat(Nodes.partitions(a)).contains(p, q);
        assertAllReadable(a, b);
        assertThat(failed.resolve(TablespaceDirs.SYNC_FAILED)).doesNotExist();
        try (var siblings = Files.list(failed.getParent())) {
            assertThat(siblings.map(f -> f.getFileName().toString()).toList())
                    .anyMatch(n -> n.startsWith("p-" + p + ".sync-failed-")).anyMatch(n -> n.startsWith("p-" + q + ".torn-writes-"));
        }
        assertFsckClean(a);
    }

    /**
     * What a power loss between two flushes can leave: an index without its clean-shutdown flag, whose last flush's
     * frontier (SyncedFrontier: the next version number, no version unsettled) covers no version, and a live version's
     * root page that never reached the disk.
     */
    private static void loseARootPageInAPowerLoss(Path tablespace) throws IOException {
        List<VersionEntry> live = new ArrayList<>();
        try (LobIndex index = LobIndex.open(tablespace.resolve(TablespaceDirs.INDEX))) {
            index.forEachCurrent(live::add);
            index.writeSync(index.newBatch().deleteMeta("clean.shutdown")
                    .putMeta("synced.frontier", ByteBuffer.allocate(12).putLong(0).putInt(0).array()));
        }
        assertThat(live).isNotEmpty();
        int pageSize = TablespaceDescriptor.read(tablespace).pageSize();
        try (FileChannel pages = FileChannel.open(tablespace.resolve(TablespaceDirs.PAGES), StandardOpenOption.WRITE)) {
            pages.write(ByteBuffer.allocate(pageSize), live.get(0).rootPage() * pageSize);
        }
    }

    /**
     * A tablespace that has applied offsets past lob.commands' end (here: marked so while its node was down; in life, the
     * topic or an embedded broker's directory made anew) is not a copy of this log: trusted, it took each new command at
     * an offset it had applied for one applied already and dropped it, silently. Its node moves it aside and rebuilds the
     * partition, so the commands sent while it was down are applied.
     */
    @Test
    @Order(7)
    void aTablespaceAheadOfTheLogOrOfAnotherTopicIsMovedAsideAndRebuiltNotTrustedWithNewCommands() throws Exception {
        List<Integer> mine = List.copyOf(Nodes.partitions(a));
        int p = mine.get(0);
        int q = mine.get(1);
        Path ahead = TablespaceDirs.partitionDir(configA.dataDir(), p);
        a.close(false);
        try (LobStore store = LobStore.open(ahead, LobStoreConfig.defaults())) {
            store.recordSkipped(new io.lobstream.store.Source(configA.topics().commands() + "-" + p, 1_000_000_000L, null));
        }
        // a copy of a topic of the same name deleted since: its offsets, below the end of this one, are another log's
        try (LobStore store = LobStore.open(TablespaceDirs.partitionDir(configA.dataDir(), q), LobStoreConfig.defaults())) {
            String source = configA.topics().commands() + "-" + q;
            assertThat(store.logId(source)).as("recorded at the task's first check").isPresent();
            store.recordLogId(source, org.apache.kafka.common.Uuid.randomUuid().toString());
        }
        writeRound();
        a = Nodes.start(configA);
        awaitSplit();
        assertThat(Nodes.partitions(a)).contains(p, q);
        assertAllReadable(a, b);
        try (var siblings = Files.list(ahead.getParent())) {
            assertThat(siblings.map(f -> f.getFileName().toString()).toList())
                    .anyMatch(n -> n.startsWith("p-" + p + ".ahead-of-log-")).anyMatch(n -> n.startsWith("p-" + q + ".other-topic-"));
        }
        assertFsckClean(a);
    }

    /**
     * A sync that fails in a running node, on a partition it caught up in this process with no
     * command since: the new, empty tablespace must be found behind and rebuilt. The catch-up used
     * to remember how far it had replayed each partition, not each copy, and took the empty copy
     * for current, since the group had committed nothing past that replay: the partition's values
     * were gone.
     */
    @Test
    @Order(8)
    void aSyncFailureInARunningNodeRebuildsAPartitionItCaughtUpBefore() throws Exception {
        int p = Nodes.partitions(a).iterator().next();
        a.close(false);
        Files.writeString(TablespaceDirs.partitionDir(configA.dataDir(), p).resolve(TablespaceDirs.SYNC_FAILED), "simulated");
        a = Nodes.start(configA); // catches p up to the committed offset, and nothing comes after it
        awaitSplit();
        assertAllReadable(a, b);
        LobStore failing = a.tablespaces().get(p).orElseThrow();
        String copy = failing.copyId();
        Method syncFailed = DefaultLobStore.class.getDeclaredMethod("syncFailed", IOException.class);
        syncFailed.setAccessible(true);
        syncFailed.invoke(failing, new IOException("Input/output error (simulated)"));
        writeRound(); // the commit of partition p's commands fails its sync; the task restarts on a new, empty copy
        await().atMost(Duration.ofSeconds(120)).until(() -> a.tablespaces().get(p).map(s -> !s.copyId().equals(copy)).orElse(false)
                && a.streams().state() == org.apache.kafka.streams.KafkaStreams.State.RUNNING);
        assertAllReadable(a, b);
        assertFsckClean(a);
    }

    /**
     * A quick restart after test 8, whose failed thread Kafka Streams replaced with a thread of the
     * next index (2; the node runs one): the restarted node runs thread 1 again, and removes the
     * member of thread 2, whose partitions would otherwise wait for its session to time out. Checked
     * first that test 8 did leave a thread 2: without it there is nothing here to remove.
     */
    @Test
    @Order(9)
    void aRestartAfterAThreadWasReplacedGetsEveryPartitionBack() throws Exception {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap()))) {
            String group = configA.get(LobStreamConfig.APPLICATION_ID);
            assertThat(membersOfA(admin, group)).as("a's members after test 8's thread was replaced").contains("scale-a-2");
            a.close(false);
            a = Nodes.start(configA);
            awaitSplit();
            assertAllReadable(a, b);
            await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> assertThat(membersOfA(admin, group))
                    .as("a's members: none of a thread index it no longer runs").containsExactly("scale-a-1"));
        }
    }

    private static List<String> membersOfA(Admin admin, String group) throws Exception {
        return admin.describeConsumerGroups(List.of(group)).describedGroups().get(group).get().members().stream()
                .map(m -> m.groupInstanceId().orElse("")).filter(id -> id.startsWith("scale-a-")).toList();
    }
    /**
     * A third node joins: it takes its share from the others, and neither of them gets a partition it did not have
     * (which it would have to rebuild from lob.commands). Kafka Streams' default assignor, which takes the writer's tasks
     * for stateless, deals partitions out by load alone and could swap some between a and b.
     */
    @Test
    @Order(10)
    void aNodeThatJoinsTakesItsShareWithoutMovingTheOthersPartitions() throws Exception {
        Set<Integer> onA = Nodes.partitions(a);
        Set<Integer> onB = Nodes.partitions(b);
        LobNode c = Nodes.start(Nodes.config(cluster, dir.resolve("c"), 4, "scale-c", 1));
        try {
            await().atMost(Duration.ofSeconds(120)).until(() -> !Nodes.partitions(c).isEmpty()
                    && Nodes.partitions(a).size() + Nodes.partitions(b).size() + Nodes.partitions(c).size() == 4
                    && Stream.of(a, b, c).allMatch(n -> n.streams().state() == org.apache.kafka.streams.KafkaStreams.State.RUNNING));
            assertThat(onA).containsAll(Nodes.partitions(a));
            assertThat(onB).containsAll(Nodes.partitions(b));
            assertAllReadable(a, b, c);
        } finally {
            c.close(true);
        }
    }
}
