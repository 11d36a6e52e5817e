package io.lobstream.schema;

import io.lobstream.app.embedded.EmbeddedKafka;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.errors.PolicyViolationException;
import org.apache.kafka.server.policy.CreateTopicPolicy;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * On a cluster that caps {@code max.message.bytes} (a create-topic policy, as managed services
 * have), the topics whose records list a version's pages are created with the broker's limit, and
 * the check says what is short, rather than a node that cannot start.
 */
class TopicSetupIT {
    @TempDir
    Path dir;

    /** Refuses a topic whose records may pass 8 MiB. */
    public static final class RecordsOver8MiBRefused implements CreateTopicPolicy {
        @Override
        public void validate(RequestMetadata request) {
            String max = request.configs().get("max.message.bytes");
            if (max != null && Long.parseLong(max) > 8 << 20) {
                throw new PolicyViolationException("max.message.bytes over 8388608: " + max);
            }
        }

        @Override
        public void configure(Map<String, ?> configs) {
        }

        @Override
        public void close() {
        }
    }

    @Test
    void aRefusedRecordLimitLeavesTheBrokersAndIsReported() throws Exception {
        int[] ports = EmbeddedKafka.freePorts(2);
        try (EmbeddedKafka kafka = new EmbeddedKafka(dir, ports[0], ports[1],
                Map.of("create.topic.policy.class.name", RecordsOver8MiBRefused.class.getName())).start();
             Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrap()))) {
            LobStreamConfig config = new LobStreamConfig(Map.of("bootstrap.servers", kafka.bootstrap(), "lob.topic.partitions", 2));

            assertThat(TopicSetup.ensureTopics(admin, config)).isEqualTo(2);

            assertThat(admin.listTopics().names().get()).containsAll(config.topics().all());
            assertThat(TopicSetup.topicProblems(admin, config)).hasSize(2)
                    .anySatisfy(p -> assertThat(p).startsWith("lob.undo-history has max.message.bytes=1048588, not 16777216"))
                    .anySatisfy(p -> assertThat(p).startsWith("lob.reclaim has max.message.bytes=1048588, not 16777216"));
        }
    }

    /**
     * A min.insync.replicas above a topic's replicas refuses every acks=all write (NotEnoughReplicas): said at start, with
     * the line that fixes it, where the node used to start without a word and every put then timed out.
     */
    @Test
    void aMinInsyncReplicasAboveTheReplicasIsReported() throws Exception {
        int[] ports = EmbeddedKafka.freePorts(2);
        try (EmbeddedKafka kafka = new EmbeddedKafka(dir, ports[0], ports[1], Map.of("min.insync.replicas", "2")).start();
             Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrap()))) {
            LobStreamConfig config = new LobStreamConfig(Map.of("bootstrap.servers", kafka.bootstrap(), "lob.topic.partitions", 2));
            TopicSetup.ensureTopics(admin, config);

            assertThat(TopicSetup.topicProblems(admin, config)).hasSize(4).allSatisfy(p -> assertThat(p)
                    .contains(" has min.insync.replicas=2, not 1 (above its 1 replicas: every write to it fails with NotEnoughReplicas)")
                    .contains("--add-config min.insync.replicas=1"));
        }
    }
}
