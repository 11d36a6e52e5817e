package io.lobstream.app.cli;

import io.lobstream.ingest.writer.DeadLetters;
import io.lobstream.schema.LobStreamConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Watches the dead-letter topic from the moment it is opened, for the record the writer sends
 * there in place of applying a given command (matched by the origin headers). Opened before the
 * command is sent, so the dead letter cannot be missed; read_committed, as the writer sends it in
 * the transaction that moves past the command.
 */
final class DeadLetterWatch implements AutoCloseable {
    /** Why the writer did not apply a command. */
    record DeadLetter(String kind, String reason) {
    }

    private final KafkaConsumer<byte[], byte[]> consumer;
    private final String commandsTopic;

    DeadLetterWatch(LobStreamConfig config) {
        Map<String, Object> c = config.clientConfig(ConsumerConfig.configNames());
        c.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        c.put(ConsumerConfig.CLIENT_ID_CONFIG, "lobstream-cli-dlq");
        this.consumer = new KafkaConsumer<>(c, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        this.commandsTopic = config.topics().commands();
        String topic = config.topics().deadLetters();
        List<TopicPartition> parts = consumer.partitionsFor(topic, Duration.ofSeconds(30)).stream()
                .map(p -> new TopicPartition(topic, p.partition())).toList();
        consumer.assign(parts);
        consumer.seekToEnd(parts);
        parts.forEach(consumer::position); // resolve "end" now, before the command is sent
    }

    /** Polls up to {@code wait} for the dead letter of the command at {@code partition}/{@code offset} of lob.commands. */
    Optional<DeadLetter> poll(int partition, long offset, Duration wait) {
        for (ConsumerRecord<byte[], byte[]> r : consumer.poll(wait)) {
            if (commandsTopic.equals(header(r, DeadLetters.ORIGIN_TOPIC))
                    && Integer.toString(partition).equals(header(r, DeadLetters.ORIGIN_PARTITION))
                    && Long.toString(offset).equals(header(r, DeadLetters.ORIGIN_OFFSET))) {
                return Optional.of(new DeadLetter(header(r, DeadLetters.KIND), header(r, DeadLetters.REASON)));
            }
        }
        return Optional.empty();
    }

    private static String header(ConsumerRecord<?, ?> r, String name) {
        Header h = r.headers().lastHeader(name);
        return h == null ? null : new String(h.value(), StandardCharsets.UTF_8);
    }

    @Override
    public void close() {
        consumer.close(Duration.ofSeconds(5));
    }
}
