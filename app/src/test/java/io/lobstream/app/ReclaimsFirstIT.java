package io.lobstream.app;

import io.lobstream.app.embedded.EmbeddedCluster;
import io.lobstream.ingest.LobNode;
import io.lobstream.schema.DeadLetterTopic;
import io.lobstream.schema.LobStreamConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A writer task applies the reclaims it has read before the next command, however old that
 * command is ({@code ReclaimsFirst}): the property that keeps history to what purge has not done
 * yet while the writer lags behind its commands.
 *
 * <p>How it is seen: with the node stopped, partition 0 of {@code lob.commands} gets a command
 * (stamped by the broker as it appends it: the topic is {@code LogAppendTime}) and then partition
 * 0 of {@code lob.reclaim} a reclaim stamped a minute later, both malformed, so that the restarted
 * node's one task sends both to the dead-letter topic, in the order it processes them (one
 * partition there, one producer). Kafka Streams waits until it has fetched the data it knows is
 * on the broker for each partition of a task before it picks by timestamp (KIP-695,
 * {@code max.task.idle.ms} 0), so the order does not depend on timing: with the records' own
 * timestamps the older command would go first.
 */
class ReclaimsFirstIT {
    @TempDir
    static Path dir;

    @Test
    void aTaskAppliesItsReclaimsBeforeAnOlderCommand() throws Exception {
        try (EmbeddedCluster cluster = EmbeddedCluster.start(dir.resolve("cluster"), 0, 0, 0)) {
            LobStreamConfig config = Nodes.config(cluster, dir.resolve("node"), 1, "reclaims-first", 1);
            Nodes.start(config).close(true); // creates the topics and the group, then leaves it
            long now = System.currentTimeMillis();
            try (KafkaProducer<byte[], byte[]> raw = new KafkaProducer<>(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap()),
                    new ByteArraySerializer(), new ByteArraySerializer())) {
                raw.send(record(config.topics().commands(), now, "an older command")).get();
                raw.send(record(config.topics().reclaim(), now + 60_000, "a newer reclaim")).get();
            }
            LobNode node = Nodes.start(config);
            try {
                List<ConsumerRecord<byte[], byte[]>> dead = Nodes.committedRecords(cluster, config.topics().deadLetters(),
                        Duration.ofSeconds(60), seen -> seen.size() >= 2);
                assertThat(dead).extracting(r -> Nodes.header(r, DeadLetterTopic.ORIGIN_TOPIC))
                        .containsExactly(config.topics().reclaim(), config.topics().commands());
            } finally {
                node.close(true);
            }
        }
    }

    private static ProducerRecord<byte[], byte[]> record(String topic, long timestamp, String value) {
        return new ProducerRecord<>(topic, 0, timestamp, "order-probe".getBytes(StandardCharsets.UTF_8), value.getBytes(StandardCharsets.UTF_8));
    }
}
