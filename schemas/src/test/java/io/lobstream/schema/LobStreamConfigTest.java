package io.lobstream.schema;

import io.lobstream.store.config.ConfigException;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

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

    /** A misspelt lob.* key is refused; the engine's keys, Streams settings and any other Kafka setting pass. */
    @Test
    void anUnknownLobKeyIsRefusedAndEveryKnownOnePasses() {
        assertThat(new LobStreamConfig(Map.of("lob.page.size", "4096", "lob.streams.num.standby.replicas", "1",
                "ssl.truststore.location", "/t", "apicurio.registry.auto-register", "false")).originals()).hasSize(4);
        assertThatThrownBy(() -> new LobStreamConfig(Map.of("lob.chunk.sise", "1")))
                .isInstanceOf(ConfigException.class)
                .hasMessage("unknown configuration key lob.chunk.sise (./lobstream config lists them)");
    }

    /** A handler that continues would turn the writer's failures (a log cut under it, a disk error) into skipped commands. */
    @Test
    void aProcessingExceptionHandlerForTheWriterIsRefused() {
        assertThatThrownBy(() -> new LobStreamConfig(Map.of("lob.streams.processing.exception.handler",
                "org.apache.kafka.streams.errors.LogAndContinueProcessingExceptionHandler")))
                .isInstanceOf(ConfigException.class).hasMessageContaining("must stop its task, not skip a command");
    }

    /** Values past 2 GiB: the limit is a long, up to 1 TiB (chunk counts stay ints at the smallest chunk size). */
    @Test
    void theValueLimitGoesPastTwoGiB() {
        assertThat(new LobStreamConfig(Map.of("lob.value.max.bytes", "4294967296")).get(LobStreamConfig.VALUE_MAX_BYTES))
                .isEqualTo(4L << 30);
        assertThatThrownBy(() -> new LobStreamConfig(Map.of("lob.value.max.bytes", Long.toString((1L << 40) + 1))))
                .isInstanceOf(ConfigException.class).hasMessageContaining("must be between 0 and 1099511627776");
    }
}
