package io.lobstream.ingest;

import io.lobstream.schema.LobStreamConfig;
import io.lobstream.store.config.ConfigException;
import org.apache.kafka.streams.StreamsConfig;
import org.junit.jupiter.api.Test;

import java.util.Map;
import java.util.Properties;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class LobNodeTest {
    /** What a user sets as lob.streams.X is what the writer's clients get, whether the node set X plainly or prefixed. */
    @Test
    void aUsersStreamsSettingWinsOverTheNodesPlainOrPrefixedOne() {
        Properties p = new Properties();
        p.put(StreamsConfig.producerPrefix("linger.ms"), 200);
        p.put(StreamsConfig.producerPrefix("max.request.size"), 16 << 20);
        p.put(StreamsConfig.consumerPrefix("max.poll.records"), 100);
        p.put(StreamsConfig.mainConsumerPrefix("group.instance.id"), "node-1");
        p.put(StreamsConfig.NUM_STANDBY_REPLICAS_CONFIG, 0);

        LobNode.applyStreamsSettings(p, new LobStreamConfig(Map.of("lob.streams.linger.ms", "7",
                "lob.streams.max.request.size", "1048576", "lob.streams.producer.max.request.size", "2097152",
                "lob.streams.consumer.group.instance.id", "mine", "lob.streams.num.standby.replicas", "1")));

        assertThat(p).containsEntry("linger.ms", "7").containsEntry(StreamsConfig.producerPrefix("linger.ms"), "7")
                // both forms set: each as given, Kafka Streams' precedence between them stands
                .containsEntry("max.request.size", "1048576").containsEntry(StreamsConfig.producerPrefix("max.request.size"), "2097152")
                .containsEntry(StreamsConfig.consumerPrefix("max.poll.records"), 100)
                .containsEntry(StreamsConfig.consumerPrefix("group.instance.id"), "mine")
                .containsEntry(StreamsConfig.mainConsumerPrefix("group.instance.id"), "mine")
                .containsEntry(StreamsConfig.NUM_STANDBY_REPLICAS_CONFIG, "1")
                .doesNotContainKey(StreamsConfig.consumerPrefix("linger.ms"));
    }

    /** Kafka Streams would take a misspelt setting with a line in its log at most, and run on its default. */
    @Test
    void aStreamsSettingNoClientKnowsIsRefused() {
        LobNode.checkStreamsSettings(new LobStreamConfig(Map.of("lob.streams.num.standby.replicas", "1",
                "lob.streams.main.consumer.fetch.min.bytes", "1", "lob.streams.producer.linger.ms", "5", "lob.streams.linger.ms", "5",
                "lob.streams.topic.min.insync.replicas", "2", "lob.streams.client.tag.zone", "a", "lob.streams.admin.retries", "3")));
        assertThatThrownBy(() -> LobNode.checkStreamsSettings(new LobStreamConfig(Map.of("lob.streams.num.standby.replica", "1"))))
                .isInstanceOf(ConfigException.class)
                .hasMessageStartingWith("unknown configuration key lob.streams.num.standby.replica: no Kafka Streams setting");
        assertThatThrownBy(() -> LobNode.checkStreamsSettings(new LobStreamConfig(Map.of("lob.streams.producer.lingr.ms", "5"))))
                .isInstanceOf(ConfigException.class);
    }
}
