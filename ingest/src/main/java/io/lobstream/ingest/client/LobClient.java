package io.lobstream.ingest.client;

import io.lobstream.avro.LobCommand;
import io.lobstream.avro.LobOp;
import io.lobstream.schema.LobSerdes;
import io.lobstream.schema.LobStreamConfig;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.StringSerializer;

import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.zip.CRC32C;

/**
 * The producer side of LobStream: turns put, write, append, truncate and delete calls into
 * LobCommands on {@code lob.commands}, keyed by lobId. Idempotent producer, acks=all, so chunks
 * and commands of one LOB arrive once and in order. Each call returns a future completed when
 * Kafka has acknowledged the command (all its chunks). The writer applies a command, or sends it
 * to {@code lob.commands.dlq} with the reason (and the record's headers, see {@link #header}),
 * and commits its offset in one transaction: once the writer group's committed offset of the
 * partition is past the acknowledged offset, the outcome is final (what {@code --wait-applied}
 * waits for; a node's {@code GET /status} shows, per partition it owns, how far it has applied).
 *
 * <p>Every Kafka producer setting in the configuration is used (security, linger, compression);
 * idempotence and {@code acks=all} are always on, as chunked uploads depend on them.
 */
public final class LobClient implements AutoCloseable {
    private final KafkaProducer<String, Object> producer;
    private final String topic;
    private final int chunkSize;
    /** Added to every record. */
    private volatile Header[] headers = new Header[0];

    public LobClient(LobStreamConfig config) {
        Map<String, Object> p = config.clientConfig(ProducerConfig.configNames()); // the user's producer settings
        p.putIfAbsent(ProducerConfig.LINGER_MS_CONFIG, 2);
        p.putIfAbsent(ProducerConfig.MAX_REQUEST_SIZE_CONFIG, 1024 * 1024);
        p.putIfAbsent(ProducerConfig.COMPRESSION_TYPE_CONFIG, "none");
        // what chunked uploads rely on: no chunk lost, duplicated or reordered by a retry
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        this.producer = new KafkaProducer<>(p, new StringSerializer(), LobSerdes.valueSerializer(config));
        this.topic = config.topics().commands();
        this.chunkSize = config.get(LobStreamConfig.CHUNK_SIZE);
    }

    /** Told how many bytes of a value have been handed to the producer so far. */
    @FunctionalInterface
    public interface Progress {
        Progress NONE = sent -> { };

        void sent(long bytes);
    }

    /**
     * Sends a whole value held in memory. Up to {@code lob.chunk.size} bytes the array itself is
     * serialized (no copy); the producer has encoded it by the time this returns, so the caller
     * may reuse it.
     */
    public CompletableFuture<RecordMetadata> put(String lobId, byte[] value, String contentType) {
        if (value.length <= chunkSize) {
            return putWhole(lobId, value, contentType);
        }
        try {
            return put(lobId, new java.io.ByteArrayInputStream(value), value.length, contentType, Progress.NONE);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e); // not from a byte array
        }
    }

    /**
     * Sends {@code length} bytes from {@code value} as the LOB's new value. Up to
     * {@code lob.chunk.size} bytes go as one PUT; a larger value goes as one upload of chunks of
     * that size (same key, so same partition, in order), the last carrying the whole value's
     * CRC32C. The value is read chunk by chunk, never held whole; the producer's buffer bounds
     * the memory in use.
     *
     * @return completed when Kafka has acknowledged every chunk
     */
    public CompletableFuture<RecordMetadata> put(String lobId, InputStream value, long length, String contentType, Progress progress)
            throws IOException {
        if (length <= chunkSize) {
            CompletableFuture<RecordMetadata> sent = putWhole(lobId, readExactly(value, (int) length, 0, length), contentType);
            progress.sent(length);
            return sent;
        }
        String uploadId = UUID.randomUUID().toString();
        int chunks = (int) ((length + chunkSize - 1) / chunkSize);
        CRC32C whole = new CRC32C();
        List<CompletableFuture<RecordMetadata>> sent = new ArrayList<>(chunks);
        for (int i = 0; i < chunks; i++) {
            long offset = (long) i * chunkSize;
            byte[] data = readExactly(value, (int) Math.min(chunkSize, length - offset), offset, length);
            whole.update(data);
            LobCommand.Builder chunk = base(lobId, LobOp.PUT).setUploadId(uploadId).setChunkIndex(i).setChunkCount(chunks)
                    .setOffset(offset).setTotalLength(length).setData(ByteBuffer.wrap(data)).setContentType(contentType);
            if (i == chunks - 1) {
                chunk.setCrc32c((int) whole.getValue());
            }
            sent.add(send(lobId, chunk.build()));
            progress.sent(offset + data.length);
        }
        return all(sent);
    }

    private CompletableFuture<RecordMetadata> putWhole(String lobId, byte[] data, String contentType) {
        return send(lobId, base(lobId, LobOp.PUT).setTotalLength(data.length).setCrc32c(crc(data)).setData(ByteBuffer.wrap(data))
                .setContentType(contentType).build());
    }

    /**
     * Overwrites {@code length} bytes at {@code offset} (at most the LOB's length) with bytes from
     * {@code data}. More than {@code lob.chunk.size} bytes go as several WRITEs at consecutive
     * offsets: each is applied atomically, the whole is not (a reader may see the first ones
     * applied before the last).
     */
    public CompletableFuture<RecordMetadata> write(String lobId, long offset, InputStream data, long length, Progress progress)
            throws IOException {
        return pieces(lobId, LobOp.WRITE, offset, data, length, progress);
    }

    /** Appends {@code length} bytes from {@code data}; in pieces of {@code lob.chunk.size}, like {@link #write}. */
    public CompletableFuture<RecordMetadata> append(String lobId, InputStream data, long length, Progress progress) throws IOException {
        return pieces(lobId, LobOp.APPEND, 0, data, length, progress);
    }

    /** Cuts the LOB to {@code newLength} bytes. */
    public CompletableFuture<RecordMetadata> truncate(String lobId, long newLength) {
        return send(lobId, base(lobId, LobOp.TRUNCATE).setTotalLength(newLength).build());
    }

    private CompletableFuture<RecordMetadata> pieces(String lobId, LobOp op, long offset, InputStream data, long length,
                                                     Progress progress) throws IOException {
        List<CompletableFuture<RecordMetadata>> sent = new ArrayList<>();
        long done = 0;
        do {
            byte[] piece = readExactly(data, (int) Math.min(chunkSize, length - done), done, length);
            sent.add(send(lobId, base(lobId, op).setOffset(offset + done).setTotalLength(piece.length).setCrc32c(crc(piece))
                    .setData(ByteBuffer.wrap(piece)).build()));
            done += piece.length;
            progress.sent(done);
        } while (done < length);
        return all(sent);
    }

    private static byte[] readExactly(InputStream in, int n, long at, long total) throws IOException {
        byte[] b = new byte[n]; // readNBytes(n) would gather 8 KiB pieces and copy them again
        int read = in.readNBytes(b, 0, n);
        if (read != n) {
            throw new EOFException("input ended after " + (at + read) + " of " + total + " bytes");
        }
        return b;
    }

    private static int crc(byte[] data) {
        CRC32C crc = new CRC32C();
        crc.update(data);
        return (int) crc.getValue();
    }

    /** Completes with the last metadata once all have completed; fails if any failed. */
    private static CompletableFuture<RecordMetadata> all(List<CompletableFuture<RecordMetadata>> sent) {
        return CompletableFuture.allOf(sent.toArray(CompletableFuture[]::new)).thenApply(v -> sent.get(sent.size() - 1).join());
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

    /**
     * Adds a header to every record sent from now on. Dead letters keep their record's headers,
     * so a caller that tags its commands (the CLI, with a per-run id) can tell its own dead
     * letters from another producer's.
     */
    public synchronized LobClient header(String name, String value) {
        Header[] more = java.util.Arrays.copyOf(headers, headers.length + 1);
        more[headers.length] = new RecordHeader(name, value.getBytes(StandardCharsets.UTF_8));
        headers = more;
        return this;
    }

    private CompletableFuture<RecordMetadata> send(String lobId, LobCommand cmd) {
        CompletableFuture<RecordMetadata> f = new CompletableFuture<>();
        // a Headers object per record: the producer makes the one it sends read-only
        producer.send(new ProducerRecord<>(topic, null, lobId, cmd, headers.length == 0 ? null : new RecordHeaders(headers)), (md, err) -> {
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
