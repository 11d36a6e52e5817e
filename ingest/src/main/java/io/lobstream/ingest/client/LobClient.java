package io.lobstream.ingest.client;

import io.lobstream.avro.LobCommand;
import io.lobstream.avro.LobOp;
import io.lobstream.schema.LobSerdes;
import io.lobstream.schema.LobStreamConfig;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.StringSerializer;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.zip.CRC32C;

/**
 * The producer side of LobStream: turns put and delete calls into LobCommands on
 * {@code lob.commands}, keyed by lobId. Idempotent producer, acks=all. Each call returns a
 * future completed when Kafka has acknowledged the command.
 */
public final class LobClient implements AutoCloseable {
    private final KafkaProducer<String, Object> producer;
    private final String topic;
    private final int chunkSize;

    public LobClient(LobStreamConfig config) {
        Map<String, Object> p = new HashMap<>();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, config.bootstrap());
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.LINGER_MS_CONFIG, 2);
        p.put(ProducerConfig.MAX_REQUEST_SIZE_CONFIG, 1024 * 1024);
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, "none");
        this.producer = new KafkaProducer<>(p, new StringSerializer(), LobSerdes.valueSerializer(config));
        this.topic = config.topics().commands();
        this.chunkSize = config.get(LobStreamConfig.CHUNK_SIZE);
    }

    /** Sends a whole value. Values larger than {@code lob.chunk.size} are refused (chunked uploads come later). */
    public CompletableFuture<RecordMetadata> put(String lobId, byte[] value, String contentType) {
        if (value.length > chunkSize) {
            throw new IllegalArgumentException("value of " + value.length + " bytes is over lob.chunk.size (" + chunkSize + ")");
        }
        CRC32C crc = new CRC32C();
        crc.update(value);
        LobCommand cmd = base(lobId, LobOp.PUT)
                .setTotalLength(value.length)
                .setCrc32c((int) crc.getValue())
                .setData(ByteBuffer.wrap(value))
                .setContentType(contentType)
                .build();
        return send(lobId, cmd);
    }

    public CompletableFuture<RecordMetadata> put(String lobId, InputStream value) throws IOException {
        return put(lobId, value.readNBytes(chunkSize + 1), null);
    }

    public CompletableFuture<RecordMetadata> delete(String lobId) {
        return send(lobId, base(lobId, LobOp.DELETE).build());
    }

    private static LobCommand.Builder base(String lobId, LobOp op) {
        return LobCommand.newBuilder()
                .setCommandId(UUID.randomUUID().toString())
                .setLobId(lobId)
                .setOp(op)
                .setData(ByteBuffer.allocate(0))
                .setMetadata(Map.of())
                .setProducedAt(Instant.now());
    }

    private CompletableFuture<RecordMetadata> send(String lobId, LobCommand cmd) {
        CompletableFuture<RecordMetadata> f = new CompletableFuture<>();
        producer.send(new ProducerRecord<>(topic, lobId, cmd), (md, err) -> {
            if (err != null) {
                f.completeExceptionally(err);
            } else {
                f.complete(md);
            }
        });
        return f;
    }

    public void flush() {
        producer.flush();
    }

    @Override
    public void close() {
        producer.close();
    }
}
