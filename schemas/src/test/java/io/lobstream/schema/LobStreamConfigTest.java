package io.lobstream.schema;

import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

class LobStreamConfigTest {
    private final LobStreamConfig config = new LobStreamConfig(Map.of(
            "bootstrap.servers", "broker:9092",
            "security.protocol", "SASL_SSL",
            "linger.ms", "20",
            "session.timeout.ms", "10000",
            "partitioner.ignore.keys", "true",
            "lob.chunk.size", "65536"));

    /** A client gets the Kafka settings it knows, security above all; nothing of LobStream's own, nor routing. */
    @Test
    void eachClientGetsTheKafkaSettingsItKnows() {
        assertThat(config.clientConfig(ProducerConfig.configNames()))
                .containsEntry("bootstrap.servers", "broker:9092")
                .containsEntry("security.protocol", "SASL_SSL")
                .containsEntry("linger.ms", "20")
                .doesNotContainKeys("session.timeout.ms", "lob.chunk.size", "partitioner.ignore.keys");
        assertThat(config.clientConfig(ConsumerConfig.configNames()))
                .containsEntry("session.timeout.ms", "10000")
                .containsEntry("security.protocol", "SASL_SSL")
                .doesNotContainKeys("linger.ms", "lob.chunk.size");
        assertThat(config.clientConfig(AdminClientConfig.configNames()))
                .containsOnlyKeys("bootstrap.servers", "security.protocol");
    }

    @Test
    void bootstrapIsAlwaysThere() {
        assertThat(new LobStreamConfig(Map.of()).clientConfig(ProducerConfig.configNames()))
                .containsOnlyKeys("bootstrap.servers")
                .containsEntry("bootstrap.servers", LobStreamConfig.BOOTSTRAP.defaultValue());
    }
}
