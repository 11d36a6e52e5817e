package io.lobstream.app;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.lobstream.app.bench.KafkaTools;
import io.lobstream.purge.PurgeWorker;
import io.lobstream.schema.LobStreamConfig;
import io.lobstream.store.LobStoreConfig;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Undo records purge consumed without a reclaim are produced again: a purge worker that kept
 * following a partition its node had lost skips the new owner's undo records as another copy's
 * and commits past them. Here the purge group's offsets are moved past undo records no worker
 * read, as such a worker's commit would; the versions they named must still be reclaimed.
 */
class UndoResendIT {
    static final int PARTITIONS = 2;
    static final int RESEND_INTERVAL_MS = 500;

    @TempDir
    static Path dir;

    static TestPipeline pipeline;

    @BeforeAll
    static void start() throws Exception {
        pipeline = TestPipeline.start(dir, Map.of(LobStreamConfig.PARTITIONS.name(), PARTITIONS,
                LobStreamConfig.UNDO_RESEND_INTERVAL_MS.name(), RESEND_INTERVAL_MS));
    }

    @AfterAll
    static void stop() throws Exception {
        if (pipeline != null) {
            pipeline.close();
        }
    }

    @Test
    void versionsWhoseUndoRecordsPurgeSkippedAreStillReclaimedAndNoOthers() throws Exception {
        LobStreamConfig config = pipeline.config;
        // purge as usual (it also leaves reclaim records and transaction markers on lob.reclaim, which the check must pass)
        putThreeVersionsOf("e", "f", "g", "h");
        await().atMost(Duration.ofSeconds(60)).until(() -> pipeline.node.tablespaces().totals().historyLength() == 0);
        assertThat(resent()).as("undo records re-sent while purge reclaims everything").isZero();
        await().atMost(Duration.ofSeconds(30)).until(() -> !Double.isNaN(behindSeconds()));
        double keepingUp = behindSeconds();
        // the node's /status says the cluster answers its checks (every RESEND_INTERVAL_MS here)
        JsonNode kafka = new ObjectMapper().readTree(URI.create("http://127.0.0.1:" + pipeline.node.httpPort() + "/status").toURL())
                .path("kafka");
        assertThat(kafka.path("answered_s_ago").isNumber()).as("%s", kafka).isTrue();
        assertThat(kafka.path("answered_s_ago").asLong()).isLessThan(30);
        assertThat(kafka.has("error")).as("%s", kafka).isFalse();

        pipeline.purge.close(); // no worker reads the undo records below
        pipeline.purgeThread.join(60_000);
        assertThat(pipeline.purgeThread.isAlive()).isFalse();
        putThreeVersionsOf("a", "b", "c", "d");
        await().atMost(Duration.ofSeconds(30)).until(() -> pipeline.node.tablespaces().totals().historyLength() == 8);
        await("with purge away, how far behind it is grows with the clock").atMost(Duration.ofSeconds(30))
                .until(() -> behindSeconds() > keepingUp + 2);
        // (that records not yet consumed are not re-sent is PurgeProgressTest's and UndoResenderTest's, without waiting)

        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, config.bootstrap()))) {
            // what a worker that skipped them would have committed: the end of every undo-history partition
            Map<TopicPartition, Long> end = KafkaTools.endOffsets(admin, config.topics().undoHistory(), PARTITIONS,
                    IsolationLevel.READ_COMMITTED);
            Map<TopicPartition, OffsetAndMetadata> skipped = new HashMap<>();
            end.forEach((tp, offset) -> skipped.put(tp, new OffsetAndMetadata(offset)));
            admin.alterConsumerGroupOffsets(config.get(LobStreamConfig.PURGE_GROUP), skipped).all().get();
        }
        PurgeWorker worker = PurgeWorker.following(config, LobStoreConfig.defaults(), "it-resend", pipeline.node.meters(),
                () -> pipeline.node.tablespaces().all().keySet());
        Thread thread = new Thread(worker, "purge-it-resend");
        thread.start();
        try {
            await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(200))
                    .until(() -> pipeline.node.tablespaces().totals().historyLength() == 0);
            assertThat(resent()).as("undo records re-sent").isGreaterThanOrEqualTo(8);
            assertThat(pipeline.fsck().problems()).isEmpty();
            // compaction's moved versions are history for a moment too: it frees them itself
            await().atMost(Duration.ofSeconds(30)).until(() -> pipeline.fsck().pagesHistory() == 0);
        } finally {
            worker.close();
            thread.join(10_000);
        }
    }

    /** Three versions of each id, each applied before the next is sent: two superseded versions per id. */
    private static void putThreeVersionsOf(String... ids) throws Exception {
        for (int i = 0; i < 3; i++) {
            for (String id : ids) {
                pipeline.client.put(id, TestPipeline.bytes(30_000 + i, id.hashCode() + i), null).applied(Duration.ofSeconds(60)).get();
            }
        }
    }

    private static double resent() {
        var c = pipeline.node.meters().find("lob_undo_records_resent").counter();
        return c == null ? 0 : c.count();
    }

    /** lob_purge_behind_seconds, the most of the partitions' (NaN while none has a figure). */
    static double behindSeconds() {
        return pipeline.node.meters().find("lob_purge_behind_seconds").gauges().stream().mapToDouble(g -> g.value())
                .filter(v -> !Double.isNaN(v)).max().orElse(Double.NaN);
    }
}
