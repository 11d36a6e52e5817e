package io.lobstream.app;

import io.lobstream.app.cli.LobStreamCli;
import io.lobstream.app.embedded.EmbeddedCluster;
import io.lobstream.client.LobClient;
import io.lobstream.client.LobWrite;
import io.lobstream.ingest.LobNode;
import io.lobstream.schema.LobStreamConfig;
import io.lobstream.schema.Topics;
import io.lobstream.store.LobStore;
import io.lobstream.store.LobStoreConfig;
import io.lobstream.store.Source;
import io.lobstream.store.index.LobIndex;
import io.lobstream.store.tablespace.TablespaceDirs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static io.lobstream.app.Nodes.bytes;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A log that lost records the writer group committed (an unclean leader election; here the group's offset and the
 * tablespace moved past the log's end while the node was down): the partition's task does not start, where it used to
 * start with the tablespace taken for current and take new commands at offsets it had applied for applied ones. Once
 * new commands fill the log past the group's offset (or the operator resets the offset to the log's end, as the node
 * logs), the tablespace, marked when it was held, is moved aside, and the partition rebuilt from what the log has. A tablespace marked as one whose log was cut under its
 * running task (LOG-CUT) is moved aside and rebuilt too, though the log is longer than what it applied; and so is one
 * that ran without lob.sync and lost a page in a power loss, checked off the stream thread.
 */
class LogLostIT {
    @TempDir
    static Path dir;

    @Test
    void aLogThatLostCommittedRecordsHoldsThePartitionUntilItsOffsetIsResetThenItIsRebuilt() throws Exception {
        try (EmbeddedCluster cluster = EmbeddedCluster.start(dir.resolve("cluster"), 0, 0, 0);
             Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap()))) {
            LobStreamConfig config = Nodes.config(cluster, dir.resolve("node"), 1, "log-lost", 1);
            byte[] a = bytes(1000, 1);
            byte[] b = bytes(2000, 2);
            LobNode node = Nodes.start(config);
            try (LobClient client = new LobClient(config)) {
                assertThat(client.put("a", a, null).applied(Duration.ofSeconds(60)).get().applied()).isTrue();
                assertThat(client.put("b", b, null).applied(Duration.ofSeconds(60)).get().applied()).isTrue();
            } finally {
                node.close(true);
            }

            String group = config.get(LobStreamConfig.APPLICATION_ID);
            TopicPartition tp = new TopicPartition(config.topics().commands(), 0);
            long end = admin.listOffsets(Map.of(tp, OffsetSpec.latest())).partitionResult(tp).get().offset();
            setGroupOffset(admin, group, tp, end + 100);
            try (LobStore store = LobStore.open(TablespaceDirs.partitionDir(config.dataDir(), 0), LobStoreConfig.defaults())) {
                store.recordSkipped(new Source(tp.topic() + "-0", end + 99, null));
            }
            assertHeld(config, true);
            // a node without the partition's state is held too: the partition often moves because its owner died, with
            // the leader that lost the records (it used to retry, for ever, a catch-up that could not reach the offset)
            assertHeld(Nodes.config(cluster, dir.resolve("fresh-node"), 1, "log-lost", 1), false);

            // Producers go on writing while the partition is held. Their writes sit below the group's offset, yet none is
            // applied: the client asks the log's end too, and does not report them applied. Once they fill the log past
            // the group's offset, the copy (marked LOG-CUT by the check that held it: it applied offsets the log now holds
            // these at) is moved aside and rebuilt with them; it used to be taken for current, and they were lost
            byte[] c;
            try (LobClient client = new LobClient(config)) {
                LobWrite first = client.put("c", bytes(10, 0), null);
                first.get(60, TimeUnit.SECONDS);
                // (15 s: the first wait opens the client's tracker too, a consumer and an admin client)
                assertThat(first.applied(Duration.ofSeconds(15))).as("below the group's offset, in a partition held")
                        .failsWithin(Duration.ofSeconds(60)).withThrowableOfType(ExecutionException.class)
                        .withCauseInstanceOf(java.util.concurrent.TimeoutException.class);
                c = bytes(30, 7);
                for (int i = 1; i < 100; i++) { // c's last at the offset below the group's: taken for applied, it was lost
                    client.put("c", i == 99 ? c : bytes(20, i), null).get(60, TimeUnit.SECONDS);
                }
                client.put("d", bytes(20, 100), null).get(60, TimeUnit.SECONDS); // at the group's offset
                client.put("d", bytes(20, 101), null).get(60, TimeUnit.SECONDS);
            }
            assertThat(admin.listOffsets(Map.of(tp, OffsetSpec.latest())).partitionResult(tp).get().offset()).isGreaterThan(end + 100);
            assertRebuiltAfterMovingAside(config, Map.of("a", a, "b", b, "c", c), "p-0.log-cut-");

            // a log cut under the running task, as its processor marks it (TablespaceProcessorTest): though the log is
            // longer than what the tablespace applied, the next start moves it aside and rebuilds the partition
            TablespaceDirs.markLogCut(TablespaceDirs.partitionDir(config.dataDir(), 0), "simulated: went back from offset 9 to 0");
            assertRebuiltAfterMovingAside(config, Map.of("a", a, "b", b, "c", c), "p-0.log-cut-");

            // a run without lob.sync that ended in a power loss: no flush covered its pages, the machine restarted, and
            // a's root page never reached the disk. The task's init leaves the check of every page to the catch-up thread,
            // which finds the loss, moves the copy aside and rebuilds the partition
            Path p0 = TablespaceDirs.partitionDir(config.dataDir(), 0);
            long root;
            try (LobStore store = LobStore.open(p0, LobStoreConfig.defaults())) {
                root = store.current("a").orElseThrow().rootPage();
            }
            try (LobIndex index = LobIndex.open(p0.resolve(TablespaceDirs.INDEX))) {
                // the engine's meta keys (Recovery, SyncedFrontier, BootId): an unclean end, no frontier, another boot
                index.writeSync(index.newBatch().deleteMeta("clean.shutdown").deleteMeta("synced.frontier")
                        .putMeta("boot.id", "a boot before this one".getBytes(java.nio.charset.StandardCharsets.UTF_8)));
            }
            try (java.nio.channels.FileChannel pages = java.nio.channels.FileChannel.open(p0.resolve(TablespaceDirs.PAGES),
                    java.nio.file.StandardOpenOption.WRITE)) {
                pages.write(java.nio.ByteBuffer.allocate(LobStoreConfig.defaults().pageSize()), root * LobStoreConfig.defaults().pageSize());
            }
            assertRebuiltAfterMovingAside(config, Map.of("a", a, "b", b, "c", c), "p-0.torn-writes-");

            // another deployment (its own topics, writer and purge groups) started on this data directory: it found no
            // offset of its topic, took the tablespace for its own new one, and served (and let its writes replace) the
            // first deployment's LOBs
            LobStreamConfig other = Nodes.config(cluster, dir.resolve("node"), 1, "log-lost-other", 1, Map.of(
                    LobStreamConfig.TOPIC_PREFIX.name(), "other.", LobStreamConfig.APPLICATION_ID.name(), "other-writer",
                    LobStreamConfig.PURGE_GROUP.name(), "other-purge"));
            LobNode otherNode = Nodes.start(other);
            try (LobClient otherClient = new LobClient(other)) {
                assertThat(Nodes.get(otherNode, "a", null).statusCode()).as("the first deployment's LOB").isEqualTo(404);
                try (var siblings = Files.list(p0.getParent())) {
                    assertThat(siblings.map(f -> f.getFileName().toString()).toList()).anyMatch(n -> n.startsWith("p-0.other-topic-"));
                }
                assertThat(otherClient.put("z", bytes(10, 3), null).applied(Duration.ofSeconds(60)).get().applied()).isTrue();
            } finally {
                otherNode.close(true);
            }
            // and the way back: the first deployment's copy that the other wrote into (made here by naming the first one's
            // log in the other's copy, as a copy of the first that held no version when the other came would be) holds
            // another deployment's LOB; taken for the first one's, z was served, and the first one's commands replayed over it
            String firstSource = config.topics().commands() + "-0";
            String firstLog;
            try (var siblings = Files.list(p0.getParent())) {
                Path firstCopy = siblings.filter(f -> f.getFileName().toString().startsWith("p-0.other-topic-")).findFirst().orElseThrow();
                try (LobStore store = LobStore.open(firstCopy, LobStoreConfig.defaults())) {
                    firstLog = store.logId(firstSource).orElseThrow();
                }
            }
            try (LobStore store = LobStore.open(p0, LobStoreConfig.defaults())) {
                store.recordLogId(firstSource, firstLog);
            }
            LobNode back = Nodes.start(config);
            try {
                await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> {
                    assertThat(Nodes.get(back, "a", null).body()).isEqualTo(a);
                    assertThat(Nodes.get(back, "z", null).statusCode()).as("the other deployment's LOB").isEqualTo(404);
                });
            } finally {
                back.close(true);
            }
        }
    }

    /** Starts a node on {@code config}: partition 0 is held; a copy that applied past the log's end is marked LOG-CUT. */
    private static void assertHeld(LobStreamConfig config, boolean appliedPastTheEnd) throws Exception {
        LobNode held = new LobNode(config, LobStoreConfig.defaults()).start();
        Path p0 = TablespaceDirs.partitionDir(config.dataDir(), 0);
        try {
            // the refused task's exception ends its stream thread (replaced), which Awaitility would take for a failure
            await().atMost(Duration.ofSeconds(90)).dontCatchUncaughtExceptions().until(() -> {
                var refused = held.meters().find("lob_log_lost_checks").counter();
                // refused, and again when the task tried again; the check that refused it marked a copy that applied past the end
                return refused != null && refused.count() >= 2 && (!appliedPastTheEnd || TablespaceDirs.logCut(p0).isPresent());
            });
            assertThat(held.tablespaces().all()).as("the partition is not served").doesNotContainKey(0);
        } finally {
            held.close(true);
        }
    }

    /** Starts a node on {@code config}: partition 0 is moved aside ({@code asidePrefix}) and rebuilt, its values identical. */
    private static void assertRebuiltAfterMovingAside(LobStreamConfig config, Map<String, byte[]> values, String asidePrefix)
            throws Exception {
        long asideBefore = asideCount(config, asidePrefix);
        LobNode node = Nodes.start(config);
        try {
            await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> {
                for (Map.Entry<String, byte[]> v : values.entrySet()) {
                    assertThat(Nodes.get(node, v.getKey(), null).body()).isEqualTo(v.getValue());
                }
            });
            assertThat(asideCount(config, asidePrefix)).as("copies moved aside as " + asidePrefix).isEqualTo(asideBefore + 1);
            assertThat(node.meters().get("lob_tablespaces_kept_aside_bytes").gauge().value()).as("the copy's disk, shown").isPositive();
            assertThat(Nodes.fsck(node).problems()).isEmpty(); // the LOG-CUT marker went with the copy
        } finally {
            node.close(true);
        }
    }

    private static long asideCount(LobStreamConfig config, String asidePrefix) throws java.io.IOException {
        try (var siblings = Files.list(TablespaceDirs.partitionDir(config.dataDir(), 0).getParent())) {
            return siblings.filter(f -> f.getFileName().toString().startsWith(asidePrefix)).count();
        }
    }

    /**
     * Partitions added to the topics (all four, as co-partitioning asks) while the node was down: a LOB's partition is its
     * key's hash modulo the count, so LOBs may now be written to other partitions than their history's. The old
     * partitions' tasks do not start, and the node says why, where they used to go on as if nothing had changed; the
     * added partition's does. A replay of an old partition from the grown topics stops at the first command of a LOB that
     * moved, where it would have refused it and lost the LOB.
     */
    @Test
    void partitionsAddedToTheTopicsHoldTheTablespacesMadeBefore() throws Exception {
        try (EmbeddedCluster cluster = EmbeddedCluster.start(dir.resolve("cluster-2"), 0, 0, 0);
             Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap()))) {
            LobStreamConfig config = Nodes.config(cluster, dir.resolve("node-2"), 1, "partitions-added", 1);
            LobNode node = Nodes.start(config);
            String moves = "a";
            for (int i = 0; Topics.partitionOf(moves.getBytes(StandardCharsets.UTF_8), 2) != 1; i++) {
                moves = "moves-" + i; // a LOB in partition 1 of 2
            }
            try (LobClient client = new LobClient(config)) {
                assertThat(client.put("a", bytes(1000, 1), null).applied(Duration.ofSeconds(60)).get().applied()).isTrue();
                assertThat(client.put(moves, bytes(1000, 2), null).applied(Duration.ofSeconds(60)).get().applied()).isTrue();
            } finally {
                node.close(true);
            }

            Map<String, NewPartitions> twoEach = new java.util.HashMap<>();
            config.topics().all().forEach(t -> twoEach.put(t, NewPartitions.increaseTo(2)));
            admin.createPartitions(twoEach).all().get();
            LobNode held = new LobNode(config, LobStoreConfig.defaults()).start();
            try {
                await().atMost(Duration.ofSeconds(90)).dontCatchUncaughtExceptions().until(() -> {
                    var refused = held.meters().find("lob_partition_count_changed_checks").tag("partition", "0").counter();
                    return refused != null && refused.count() >= 1;
                });
                assertThat(held.tablespaces().all()).as("the partition made with one is not served").doesNotContainKey(0);
                // and status says why
                await().atMost(Duration.ofSeconds(30)).dontCatchUncaughtExceptions().untilAsserted(() -> {
                    var status = new com.fasterxml.jackson.databind.ObjectMapper().readTree(Nodes.HTTP.send(
                            java.net.http.HttpRequest.newBuilder(java.net.URI.create("http://127.0.0.1:" + held.httpPort() + "/status"))
                                    .build(), java.net.http.HttpResponse.BodyHandlers.ofString()).body());
                    var waiting = status.path("waiting_after_failure").get(0);
                    assertThat(waiting.path("partition").asInt()).isZero();
                    assertThat(waiting.path("stage").asText()).isEqualTo("task");
                    assertThat(waiting.path("last_error").asText()).contains("another partition count");
                });
                // the added partition's task starts on a new tablespace (nothing records it as added): as README says
                await().atMost(Duration.ofSeconds(60)).dontCatchUncaughtExceptions()
                        .until(() -> held.tablespaces().all().containsKey(1));
            } finally {
                held.close(true);
            }
            StringWriter err = new StringWriter();
            int exit = LobStreamCli.commandLine().setErr(new PrintWriter(err, true)).execute("replay", "--partition", "0",
                    "--data-dir", dir.resolve("replay-2").toString(), "--bootstrap", cluster.bootstrap(), "--registry", cluster.registryUrl());
            assertThat(exit).as(err.toString()).isNotZero();
            assertThat(err.toString()).contains("its key hashes to partition 1 of the 2", "Partitions were added");
        }
    }

    /** Commits {@code offset} for the group, once its last member has left (an empty group's offsets only can be altered). */
    private static void setGroupOffset(Admin admin, String group, TopicPartition tp, long offset) {
        await().atMost(Duration.ofSeconds(60)).ignoreExceptions().until(() -> {
            admin.alterConsumerGroupOffsets(group, Map.of(tp, new OffsetAndMetadata(offset))).all().get();
            return true;
        });
    }
}
