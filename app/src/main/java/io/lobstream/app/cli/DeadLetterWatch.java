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
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Watches the dead-letter topic from the moment it is opened, for the records the writer sends
 * there in place of applying a command: those of its LOB whose origin (headers) is a record of
 * lob.commands produced since the watch opened. Opened before the command is sent, so no dead
 * letter is missed; read_committed, as the writer sends them in the transaction that moves past
 * the command. A value sent in chunks is several records, and the first one rejected says why.
 */
final class DeadLetterWatch implements AutoCloseable {
    /** Why the writer did not apply a command. */
    record DeadLetter(String kind, String reason) {
    }

    private final KafkaConsumer<byte[], byte[]> consumer;
    private final String commandsTopic;
    /** lob.commands' end offsets when the watch opened: the commands sent after have offsets from here on. */
    private final Map<Integer, Long> commandsEnd = new HashMap<>();

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
        List<TopicPartition> commands = consumer.partitionsFor(commandsTopic, Duration.ofSeconds(30)).stream()
                .map(p -> new TopicPartition(commandsTopic, p.partition())).toList();
        consumer.endOffsets(commands).forEach((tp, end) -> commandsEnd.put(tp.partition(), end));
    }

    /**
     * Polls up to {@code wait} for a dead letter of {@code lobId} whose origin is partition {@code
     * partition} of lob.commands, at most at offset {@code upTo} (the command's last record).
     */
    Optional<DeadLetter> poll(String lobId, int partition, long upTo, Duration wait) {
        byte[] key = lobId.getBytes(StandardCharsets.UTF_8);
        long from = commandsEnd.getOrDefault(partition, 0L);
        for (ConsumerRecord<byte[], byte[]> r : consumer.poll(wait)) {
            String offset = header(r, DeadLetters.ORIGIN_OFFSET);
            if (Arrays.equals(key, r.key()) && commandsTopic.equals(header(r, DeadLetters.ORIGIN_TOPIC))
                    && Integer.toString(partition).equals(header(r, DeadLetters.ORIGIN_PARTITION)) && offset != null
                    && Long.parseLong(offset) >= from && Long.parseLong(offset) <= upTo) {
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
