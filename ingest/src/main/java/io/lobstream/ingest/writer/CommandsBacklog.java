package io.lobstream.ingest.writer;

import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.streams.KafkaStreams;

import java.util.Map;
import java.util.OptionalLong;
import java.util.function.Supplier;

/**
 * How many records of a partition of {@code lob.commands} wait in Kafka for the writer.
 *
 * <p>Why: a task expires an idle upload by the wall clock where no command came for {@code lob.upload.timeout.ms}
 * ({@link CommandProcessor}'s housekeeping), standing in for the time of the commands that did not come. That is
 * right only if none came: with chunks of the upload waiting in Kafka (the partition's leader away while the writer
 * was behind), the writer would drop an upload that a replay of the partition, which goes by the commands' own
 * times, completes. So the wall clock stands in only while nothing waits.
 */
@FunctionalInterface
public interface CommandsBacklog {
    /** Nothing is known: the wall clock never stands in. */
    CommandsBacklog UNKNOWN = partition -> OptionalLong.empty();

    /**
     * The records of {@code partition} the writer has still to fetch, as last measured; empty when that is not known (no
     * fetch of the partition yet, or the partition not assigned here).
     */
    OptionalLong records(int partition);

    /**
     * The lag of {@code topic}'s partitions in the consumers of {@code writer} (null until it is made): their
     * {@code records-lag}, measured at each fetch response, against the last stable offset under read_committed.
     */
    static CommandsBacklog consumerLag(String topic, Supplier<KafkaStreams> writer) {
        String underscored = topic.replace('.', '_'); // as older clients tag a topic
        return partition -> {
            KafkaStreams streams = writer.get();
            if (streams == null) {
                return OptionalLong.empty();
            }
            String p = Integer.toString(partition);
            for (Map.Entry<MetricName, ? extends Metric> e : streams.metrics().entrySet()) {
                MetricName n = e.getKey();
                String t = n.tags().get("topic");
                if ("records-lag".equals(n.name()) && "consumer-fetch-manager-metrics".equals(n.group())
                        && p.equals(n.tags().get("partition")) && (topic.equals(t) || underscored.equals(t))
                        && e.getValue().metricValue() instanceof Double lag && !lag.isNaN()) {
                    return OptionalLong.of(lag.longValue());
                }
            }
            return OptionalLong.empty();
        };
    }
}
