package io.lobstream.ingest;

import io.lobstream.schema.LobStreamConfig;
import io.lobstream.store.config.ConfigException;
import org.apache.kafka.streams.StreamsConfig;
import org.junit.jupiter.api.Test;

import java.util.Map;
import java.util.Properties;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class WriterStreamsSettingsTest {
    /** What a user sets as lob.streams.X is what the writer's clients get, whether the node set X plainly or prefixed. */
    @Test
    void aUsersStreamsSettingWinsOverTheNodesPlainOrPrefixedOne() {
        Properties p = new Properties();
        p.put(StreamsConfig.producerPrefix("linger.ms"), 200);
        p.put(StreamsConfig.producerPrefix("max.request.size"), 16 << 20);
        p.put(StreamsConfig.consumerPrefix("max.poll.records"), 100);
        p.put(StreamsConfig.mainConsumerPrefix("fetch.min.bytes"), 1);
        p.put(StreamsConfig.POLL_MS_CONFIG, 100);

        WriterStreamsSettings.applyUserSettings(p, new LobStreamConfig(Map.of("lob.streams.linger.ms", "7",
                "lob.streams.max.request.size", "1048576", "lob.streams.producer.max.request.size", "2097152",
                "lob.streams.consumer.fetch.min.bytes", "4096", "lob.streams.poll.ms", "50")));

        assertThat(p).containsEntry("linger.ms", "7").containsEntry(StreamsConfig.producerPrefix("linger.ms"), "7")
                // both forms set: each as given, Kafka Streams' precedence between them stands
                .containsEntry("max.request.size", "1048576").containsEntry(StreamsConfig.producerPrefix("max.request.size"), "2097152")
                .containsEntry(StreamsConfig.consumerPrefix("max.poll.records"), 100)
                .containsEntry(StreamsConfig.consumerPrefix("fetch.min.bytes"), "4096")
                .containsEntry(StreamsConfig.mainConsumerPrefix("fetch.min.bytes"), "4096")
                .containsEntry(StreamsConfig.POLL_MS_CONFIG, "50")
                .doesNotContainKey(StreamsConfig.consumerPrefix("linger.ms"));
    }

    /** Kafka Streams would take a misspelt setting with a line in its log at most, and run on its default: the node names it. */
    @Test
    void aStreamsSettingNoClientKnowsIsNamed() {
        assertThat(WriterStreamsSettings.unknown(new LobStreamConfig(Map.of("lob.streams.poll.ms", "50",
                "lob.streams.main.consumer.fetch.min.bytes", "1", "lob.streams.producer.linger.ms", "5", "lob.streams.linger.ms", "5",
                "lob.streams.topic.min.insync.replicas", "2", "lob.streams.client.tag.zone", "a", "lob.streams.admin.retries", "3"))))
                .isEmpty();
        assertThat(WriterStreamsSettings.unknown(new LobStreamConfig(Map.of("lob.streams.num.standby.replica", "1",
                "lob.streams.producer.lingr.ms", "5", "lob.chunk.size", "65536"))))
                .containsExactly("lob.streams.num.standby.replica", "lob.streams.producer.lingr.ms");
    }

    /** Kafka Streams and its clients check values only as the writer starts, after a node started its embedded broker. */
    @Test
    void aStreamsValueIsCheckedWhenTheConfigurationIsMade() {
        assertThatThrownBy(() -> WriterStreamsSettings.checkValues(new LobStreamConfig(Map.of("lob.streams.processing.guarantee", "bogus"))))
                .isInstanceOf(ConfigException.class).hasMessageStartingWith("lob.streams.processing.guarantee=bogus: ");
        // a plain client setting, which Kafka Streams passes on to its clients, and a prefixed one
        assertThatThrownBy(() -> WriterStreamsSettings.checkValues(new LobStreamConfig(Map.of("lob.streams.linger.ms", "abc"))))
                .isInstanceOf(ConfigException.class).hasMessageStartingWith("lob.streams.linger.ms=abc: ");
        assertThatThrownBy(() -> WriterStreamsSettings.checkValues(new LobStreamConfig(Map.of("lob.streams.main.consumer.max.poll.records", "0"))))
                .isInstanceOf(ConfigException.class).hasMessageStartingWith("lob.streams.main.consumer.max.poll.records=0: ");
        // a config provider's value is the client's to resolve; an internal topic's setting, a tag or a plugin's are no one's to check
        WriterStreamsSettings.checkValues(new LobStreamConfig(Map.of("lob.streams.linger.ms", "${env:LINGER}",
                "lob.streams.topic.min.insync.replicas", "two", "lob.streams.client.tag.zone", "a", "lob.streams.poll.ms", "50",
                "lob.streams.producer.linger.ms", "5")));
    }

    /**
     * Streams counts buffered records, not bytes, and a queue reaches its limit plus a fetch: many partitions of a writer
     * behind would fill a small heap. Each partition's share: its queue and two fetches.
     */
    @Test
    void whatTheWriterReadsAheadFitsAQuarterOfTheHeapAsFarAsItCan() {
        long mib = 1 << 20;
        // the default node: Kafka's and the node's usual settings
        assertReadAhead(512 * mib, 8, 16, 4 << 20, 128 * mib);
        assertReadAhead(2048 * mib, 8, 16, 4 << 20, 128 * mib);
        // 16 MiB a partition would be half the heap: fewer records
        assertReadAhead(512 * mib, 16, 2, 3584 << 10, 128 * mib);
        // the least: 2 records, 1 MiB fetches
        assertReadAhead(512 * mib, 64, 2, 1 << 20, 192 * mib);
        assertReadAhead(2048 * mib, 128, 2, 1536 << 10, 512 * mib);
    }

    private static void assertReadAhead(long heap, int partitions, int records, int fetchBytes, long worstBytes) {
        int chunk = 512 * 1024;
        WriterStreamsSettings.WriterBuffer buffer = WriterStreamsSettings.WriterBuffer.of(heap, partitions, chunk);
        assertThat(buffer).isEqualTo(new WriterStreamsSettings.WriterBuffer(records, fetchBytes));
        assertThat(WriterStreamsSettings.WriterBuffer.worstBytes(partitions, records, fetchBytes, chunk)).isEqualTo(worstBytes);
    }
}
