package io.lobstream.client;

import io.lobstream.avro.LobCommand;
import io.lobstream.avro.LobOp;
import io.lobstream.schema.CommandFingerprint;
import io.lobstream.schema.LobSerdes;
import io.lobstream.schema.LobStreamConfig;
import io.lobstream.schema.LobStreamConfig.ClientKind;
import io.lobstream.store.LobStore;
import io.lobstream.store.config.ConfigException;
import io.lobstream.store.index.Attributes;
import io.lobstream.store.layout.BulkInputStream;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.StringSerializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.ByteArrayInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.math.BigInteger;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.IntFunction;
import java.util.zip.CRC32C;

/**
 * The producer side of LobStream: turns put, write, append, truncate and delete calls into
 * LobCommands on {@code lob.commands}, keyed by lobId. Idempotent producer, acks=all, so chunks
 * and commands of one LOB arrive once and in order.
 *
 * <p>Each call returns a {@link LobWrite}: a future completed when Kafka has acknowledged the
 * write (all its chunks), whose {@link LobWrite#applied()} completes when the writer has applied
 * it or dead-lettered it (read-your-writes; {@link AppliedTracker} says how it knows):
 * <pre>{@code
 * try (LobClient client = new LobClient(config)) {
 *     WriteOutcome outcome = client.put("doc", in, length, "image/png", Map.of(), Progress.NONE)
 *             .applied(Duration.ofSeconds(60)).get(); // stops tracking the write at the timeout, as get(60, SECONDS) would not
 *     outcome.deadLetter().ifPresent(d -> System.err.println("rejected: " + d.reason()));
 * }
 * }</pre>
 *
 * <p>Bad arguments are refused with {@link IllegalArgumentException} before anything is sent: a
 * null or empty lobId, one over {@link LobStore#MAX_ID_BYTES} (65,535 bytes), a negative length or offset, a put over
 * {@code lob.value.max.bytes} (the writer would dead-letter it after every chunk had crossed Kafka),
 * a write or append whose offset and length alone pass it (the writer would apply its pieces up to
 * the limit and dead-letter the rest).
 * Kafka's failures fail the returned {@link LobWrite} (with Kafka's exception, or an IOException
 * caused by it for a write sent in pieces: {@link LobWrite}); an {@link IOException} thrown by a
 * call is the input stream's. A write begun on a closed client throws {@link IllegalStateException},
 * as {@code KafkaProducer.send} does.
 *
 * <p>One client may be shared by many threads, as a {@code KafkaProducer} may: each call has its
 * own buffer of one chunk, and the producer's {@code buffer.memory} bounds the rest. Writes complete
 * on the client's own threads, in no set order, even two writes to one LOB (Kafka's producer runs a
 * partition's callbacks in order): a stage that needs an earlier write done chains on that write.
 *
 * <p>Every Kafka producer setting in the configuration is used (security, linger, compression,
 * {@code lob.producer.interceptor.classes}; the consumer behind {@link LobWrite#applied()} takes
 * the consumer settings, {@code lob.consumer.*} among them);
 * idempotence and {@code acks=all} are always on, as chunked uploads depend on them, and
 * a {@code transactional.id} is refused (each write is its own; a transactional producer would
 * need a transaction around every send). A setting Kafka's producer refuses fails the constructor
 * with Kafka's {@code KafkaException}; one LobStream refuses, with its own
 * {@link io.lobstream.store.config.ConfigException} (an {@link IllegalArgumentException}).
 */
public final class LobClient implements LobWrites, AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(LobClient.class);
    /** Header on every record of a write, kept by its dead letters: the write's id ({@link LobWrite#writeId()}). */
    public static final String WRITE_HEADER = "lob.write";

    /**
     * The producer settings a LobClient uses unless the configuration sets them. Chunks (up to
     * {@code lob.chunk.size}, 512 KiB) are larger than Kafka's default batch (16 KiB): each then
     * filled a batch by itself, which the producer sends at once, so every chunk was a produce
     * request of its own, and the broker's work per request cost it as much as the bytes (session
     * 13: 394 requests/s for 879 commands/s; 88–115/s with these). A batch of up to 1 MiB (the
     * broker's default {@code message.max.bytes} is a little more) carries a partition's chunks
     * of a few milliseconds, and a request the batches of several partitions.
     */
    public static final Map<String, Object> PRODUCER_DEFAULTS = Map.of(
            ProducerConfig.BATCH_SIZE_CONFIG, 1024 * 1024,
            ProducerConfig.LINGER_MS_CONFIG, 5,
            ProducerConfig.MAX_REQUEST_SIZE_CONFIG, 4 * 1024 * 1024,
            ProducerConfig.COMPRESSION_TYPE_CONFIG, "none");

    /**
     * Room a chunk's command takes besides its data, at most: its LOB id twice (the record's key and the command's field),
     * the last chunk's content type and metadata, and ids, lengths and the record's framing.
     */
    private static final int CHUNK_HEADROOM_BYTES = 2 * LobStore.MAX_ID_BYTES + Attributes.MAX_BYTES + 1024;

    private final LobStreamConfig config;
    private final KafkaProducer<String, Object> producer;
    private final String topic;
    private final int chunkSize;
    /** Opened by the first {@link LobWrite#applied()} (or {@link #watchApplied()}). */
    private AppliedTracker tracker;
    /** Held while the tracker is made ({@link #appliedTracker()}). */
    private final Object trackerMaking = new Object();
    /** Dead letters the tracker keeps between rounds: {@link AppliedTracker#SEEN_MAX}; fewer in tests, before it opens. */
    int trackerSeenMax = AppliedTracker.SEEN_MAX;
    /** How long the tracker's making waits for a broker that does not answer: {@link AppliedTracker#PARTITIONS_WAIT}. */
    Duration trackerPartitionsWait = AppliedTracker.PARTITIONS_WAIT;
    private boolean closed;
    /** Set as {@link #close} begins: a write begun after it is refused before it reads its input. */
    private volatile boolean closing;
    /** Set by the first close, which closes the producer and then completes it: a close at the same time waits for it. */
    private final AtomicReference<CompletableFuture<Void>> producerClosed = new AtomicReference<>();
    /** Writes' ids are this and a sequence number: the tracker keeps only this client's dead letters. */
    private final String clientId = UUID.randomUUID().toString();
    private final AtomicLong writes = new AtomicLong();
    /** Why the writes in progress stop at their next record, once {@link #stopSending} was called; null until then. */
    private volatile Throwable stopSending;
    /**
     * Writes begun on each thread, by any client: an idempotent call refused with IllegalArgumentException leaves its key
     * unspent if it began none (counted by all clients, so a per-client entry is not left behind on a thread for each).
     */
    private static final ThreadLocal<long[]> BEGUN_ON_THIS_THREAD = ThreadLocal.withInitial(() -> new long[1]);
    private final long maxValueBytes;
    /**
     * Where writes complete: not the producer's network thread, where a stage that sends (and waits for buffer space
     * only that thread frees) or joins another write would stall every write of the client. Threads as needed, idle
     * ones end; after close, on the completing thread.
     */
    private final ExecutorService callbacks = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(() -> {
            CALLBACKS_OF.set(this);
            r.run();
        }, "lobstream-client-callbacks");
        t.setDaemon(true);
        return t;
    });
    /** The client this thread is one of the {@link #callbacks} of, if any: its close there cannot wait for them to end. */
    private static final ThreadLocal<LobClient> CALLBACKS_OF = new ThreadLocal<>();

    /**
     * @throws ConfigException if a chunk of {@code lob.chunk.size} would not fit the producer's {@code max.request.size}
     *                         or {@code buffer.memory} (every chunked write would fail at its first send)
     */
    public LobClient(LobStreamConfig config) {
        this.chunkSize = config.get(LobStreamConfig.CHUNK_SIZE);
        Map<String, Object> settings = producerSettings(config);
        requireRoomForAChunk(settings, chunkSize);
        this.producer = LobSerdes.producer(settings, new StringSerializer(), config);
        this.config = config;
        this.topic = config.topics().commands();
        this.maxValueBytes = config.get(LobStreamConfig.VALUE_MAX_BYTES);
    }

    /**
     * Refuses what the constructor would, without a producer: for a command line to say so before it waits for a broker.
     *
     * @throws ConfigException if a chunk of {@code lob.chunk.size} would not fit the producer's {@code max.request.size}
     *                         or {@code buffer.memory}
     */
    public static void checkSettings(LobStreamConfig config) {
        requireRoomForAChunk(producerSettings(config), config.get(LobStreamConfig.CHUNK_SIZE));
    }

    /** Refuses producer settings, given as numbers, too small for a chunk's command: every chunked write would fail. */
    private static void requireRoomForAChunk(Map<String, Object> settings, int chunkSize) {
        for (String key : List.of(ProducerConfig.MAX_REQUEST_SIZE_CONFIG, ProducerConfig.BUFFER_MEMORY_CONFIG)) {
            Object limit = settings.get(key);
            if (limit != null && limit.toString().strip().matches("\\d{1,18}")
                    && chunkSize + CHUNK_HEADROOM_BYTES > Long.parseLong(limit.toString().strip())) {
                throw new ConfigException(LobStreamConfig.CHUNK_SIZE.name() + "=" + chunkSize + " does not fit " + key + "=" + limit
                        + " with a command's other fields (" + CHUNK_HEADROOM_BYTES + " bytes): lower the one or raise the other");
            }
        }
    }

    /**
     * The settings of a producer of {@code lob.commands}: the user's producer settings, {@link #PRODUCER_DEFAULTS} where
     * they say nothing, idempotence and {@code acks=all} always; never a {@code transactional.id}, which the configuration
     * refuses ({@code LobStreamConfig}: no transaction is begun, and every send would fail).
     */
    public static Map<String, Object> producerSettings(LobStreamConfig config) {
        Map<String, Object> p = config.clientConfig(ClientKind.PRODUCER);
        boolean batchGiven = p.containsKey(ProducerConfig.BATCH_SIZE_CONFIG);
        PRODUCER_DEFAULTS.forEach(p::putIfAbsent);
        // the default batch within a buffer.memory the user made smaller, half of it: a batch larger than the buffer fails
        // every send, and one as large leaves no room for a second partition's (a record over batch.size has its own)
        Object buffer = p.get(ProducerConfig.BUFFER_MEMORY_CONFIG);
        if (!batchGiven && buffer != null && buffer.toString().strip().matches("\\d{1,18}")
                && Long.parseLong(buffer.toString().strip()) < 2L * (Integer) PRODUCER_DEFAULTS.get(ProducerConfig.BATCH_SIZE_CONFIG)) {
            p.put(ProducerConfig.BATCH_SIZE_CONFIG, (int) (Long.parseLong(buffer.toString().strip()) / 2));
        }
        // what chunked uploads rely on: no chunk lost, duplicated or reordered by a retry
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        return p;
    }

    /**
     * Told how many bytes of a value have been handed to the producer so far. Told, not asked: a RuntimeException it
     * throws is logged (the first of a write) and it is not told again, and the write goes on, as records already sent
     * may be applied whatever the caller does, and the call must return the write they belong to.
     */
    @FunctionalInterface
    public interface Progress {
        Progress NONE = sent -> { };

        void sent(long bytes);
    }

    /** {@code progress}, told until it throws: once per write, the failure logged (a 1 GiB put tells it 2,048 times). */
    private static Progress toldUntilItThrows(Progress progress) {
        if (progress == null || progress == Progress.NONE) { // null: none, as a KafkaProducer's callback
            return Progress.NONE;
        }
        AtomicBoolean failed = new AtomicBoolean();
        return bytes -> {
            if (failed.get()) {
                return;
            }
            try {
                progress.sent(bytes);
            } catch (RuntimeException e) {
                failed.set(true);
                log.warn("a write's progress callback failed; the write goes on, its progress untold", e);
            }
        };
    }

    /**
     * Writes that may be retried. Each call on the returned object sends the records of its write with ids derived from
     * {@code key}, the LOB and the operation, where a {@code LobClient}'s own calls give each write new ones. The same call
     * made again with the same key (after its {@link LobWrite} failed or timed out, or after the caller restarted) sends
     * the same ids, and the writer applies each record once: a write the first try delivered is not applied again, an
     * append does not append twice, and a chunked put the first try left part-way resumes at the first chunk the writer
     * lacks. The writer remembers applied commands for {@code lob.command.dedupe.window.ms} (an hour), in the commands'
     * time: retry within it. A chunked put whose upload expired ({@code lob.upload.timeout.ms} after its last chunk came)
     * starts again from its first chunk. A multi-record write is split by the client's {@code lob.chunk.size}: retry it
     * with the same, and with a client of this release or a later one (its pieces name the piece before by fingerprint,
     * which a client of a release before session 45 does not: its retry of a newer client's write is refused).
     *
     * <p>A key names one write: the returned object makes one (a second call throws {@link IllegalStateException}; a call
     * refused with {@link IllegalArgumentException} before anything was sent does not count), and
     * the same key with the same LOB and operation but other bytes, offset or length is dead-lettered as
     * {@code id-conflict}. A write that was dead-lettered is judged again when retried.
     *
     * @param key the caller's name for the write, such as the id of the request or job it carries out
     */
    public LobWrites idempotent(String key) {
        if (key == null || key.isEmpty()) {
            throw new IllegalArgumentException("an idempotency key must not be empty");
        }
        return new Idempotent(key);
    }

    /**
     * {@link #idempotent(String)}'s write: LobClient's, with ids derived from the key. One: two appends under one key would
     * send the same ids, and the writer would take the second for the first sent again, and drop it with no word.
     */
    private final class Idempotent implements LobWrites {
        private final String key;
        private final AtomicBoolean used = new AtomicBoolean();

        Idempotent(String key) {
            this.key = key;
        }

        /**
         * One write's call with the key; refused before anything was sent ({@link IllegalArgumentException} before the
         * call began a write, {@link #begin}), it leaves the key unspent.
         */
        private interface Call<E extends Exception> {
            LobWrite send(String key) throws E;
        }

        private <E extends Exception> LobWrite once(Call<E> call) throws E {
            if (!used.compareAndSet(false, true)) {
                throw new IllegalStateException("idempotency key " + key + " names one write, made already with this object: to "
                        + "retry that write, call idempotent(key) again with the same key; another write needs a key of its own");
            }
            long begun = BEGUN_ON_THIS_THREAD.get()[0];
            try {
                return call.send(key);
            } catch (IllegalArgumentException refused) {
                if (BEGUN_ON_THIS_THREAD.get()[0] == begun) { // this call began no write: other threads' writes do not count
                    used.set(false);
                }
                throw refused;
            }
        }

        @Override
        public LobWrite put(String lobId, byte[] value, String contentType, Map<String, String> metadata) {
            return once(k -> putBytes(k, lobId, value, checked(contentType, metadata)));
        }

        @Override
        public LobWrite put(String lobId, InputStream value, long length, String contentType, Map<String, String> metadata,
                            Progress progress) throws IOException {
            return once(k -> putStream(k, lobId, value, length, checked(contentType, metadata), progress));
        }

        @Override
        public LobWrite write(String lobId, long offset, InputStream data, long length, Progress progress) throws IOException {
            return once(k -> pieces(new CommandIds(k, lobId, LobOp.WRITE), offset, data, length, progress));
        }

        @Override
        public LobWrite append(String lobId, InputStream data, long length, Progress progress) throws IOException {
            return once(k -> pieces(new CommandIds(k, lobId, LobOp.APPEND), 0, data, length, progress));
        }

        @Override
        public LobWrite truncate(String lobId, long newLength) {
            return once(k -> LobClient.this.truncate(new CommandIds(k, lobId, LobOp.TRUNCATE), newLength));
        }

        @Override
        public LobWrite delete(String lobId) {
            return once(k -> LobClient.this.delete(new CommandIds(k, lobId, LobOp.DELETE)));
        }
    }

    /**
     * Sends a whole value held in memory, with user metadata, which a node serves back as {@code X-LobStream-Meta-KEY}
     * headers. Up to {@code lob.chunk.size} bytes the array itself is serialized (no copy); the producer has encoded it by
     * the time this returns, so the caller may reuse it.
     *
     * @throws IllegalArgumentException if the content type or metadata cannot travel in HTTP headers ({@link Attributes#problem()})
     */
    @Override
    public LobWrite put(String lobId, byte[] value, String contentType, Map<String, String> metadata) {
        return putBytes(null, lobId, value, checked(contentType, metadata));
    }

    private LobWrite putBytes(String key, String lobId, byte[] value, Attributes attributes) {
        checkValue("put", lobId, value);
        checkLength(lobId, value.length);
        if (value.length <= chunkSize) {
            LobWrite w = begin(lobId);
            return completeWhen(w, List.of(sendWhole(w, new CommandIds(key, lobId, LobOp.PUT), value, attributes)));
        }
        try {
            return putStream(key, lobId, new ByteArrayInputStream(value), value.length, attributes, Progress.NONE);
        } catch (IOException e) {
            throw new UncheckedIOException(e); // not from a byte array
        }
    }

    /**
     * Sends {@code length} bytes from {@code value} as the LOB's new value, with user metadata, which a node serves back
     * as {@code X-LobStream-Meta-KEY} headers. Up to
     * {@code lob.chunk.size} bytes go as one PUT; a larger value goes as one upload of chunks of
     * that size (same key, so same partition, in order), the last carrying the whole value's
     * CRC32C. The value is read chunk by chunk, never held whole; the producer's buffer bounds
     * the memory in use.
     *
     * @return completed when Kafka has acknowledged every chunk
     * @throws IOException if reading {@code value} failed, or it ended before {@code length} bytes (a chunked upload
     *                     begun is then aborted where the producer can still send, else it expires after
     *                     lob.upload.timeout.ms; under an idempotency key it is left for a run again); bytes past
     *                     {@code length} are left unread
     * @throws IllegalArgumentException if the content type or metadata cannot travel in HTTP headers ({@link Attributes#problem()})
     */
    @Override
    public LobWrite put(String lobId, InputStream value, long length, String contentType, Map<String, String> metadata, Progress progress)
            throws IOException {
        return putStream(null, lobId, value, length, checked(contentType, metadata), progress);
    }

    private static Attributes checked(String contentType, Map<String, String> metadata) {
        if (metadata != null && metadata.entrySet().stream().anyMatch(e -> e.getKey() == null || e.getValue() == null)) {
            throw new IllegalArgumentException("metadata must not hold a null key or value: " + metadata);
        }
        Attributes attributes = Attributes.of(contentType, metadata);
        String problem = attributes.problem();
        if (problem != null) {
            throw new IllegalArgumentException(problem);
        }
        return attributes;
    }

    private LobWrite putStream(String key, String lobId, InputStream value, long length, Attributes attributes, Progress caller)
            throws IOException {
        Progress progress = toldUntilItThrows(caller);
        checkValue("put", lobId, value);
        checkLength(lobId, length);
        LobWrite w = begin(lobId);
        CommandIds ids = new CommandIds(key, lobId, LobOp.PUT);
        if (length <= chunkSize) {
            byte[] data = new byte[(int) length];
            if (stopSending == null) { // else send() fails the write: its input is left unread, as a stopped chunked put's
                readExactly(value, data, data.length, 0, length);
            }
            CompletableFuture<RecordMetadata> sent = sendWhole(w, ids, data, attributes);
            progress.sent(length);
            return completeWhen(w, List.of(sent));
        }
        String uploadId = ids.uploadId();
        int chunks = (int) ((length + chunkSize - 1) / chunkSize);
        CRC32C whole = new CRC32C();
        Sent sent = new Sent(w);
        byte[] buffer = new byte[chunkSize]; // one for every chunk: see send()
        for (int i = 0; i < chunks; i++) {
            long offset = (long) i * chunkSize;
            int before = i;
            if (sent.anyFailed()) { // before the first chunk only a stop: nothing to abort
                return sent.stopped("put " + lobId + ": stopped after " + before + " of " + chunks + " chunks, "
                        + sent.why("as one of them failed") + "; " + (before == 0 ? "nothing was sent"
                        : abandoned(w, ids, uploadId, sent.failed.get())) + ": the LOB is unchanged");
            }
            int n;
            try {
                n = readExactly(value, buffer, (int) Math.min(chunkSize, length - offset), offset, length);
            } catch (IOException e) {
                if (i == 0) {
                    throw e;
                }
                String why = "put " + lobId + ": reading the input failed after " + i + " of " + chunks + " chunks were sent; "
                        + abandoned(w, ids, uploadId, sent.failed.get()) + ": the LOB is unchanged: " + e.getMessage();
                throw e instanceof EOFException ? new EOFException(why) : new IOException(why, e);
            }
            whole.update(buffer, 0, n);
            LobCommand.Builder chunk = base(ids, i).setUploadId(uploadId).setChunkIndex(i).setChunkCount(chunks)
                    .setOffset(offset).setTotalLength(length).setData(ByteBuffer.wrap(buffer, 0, n));
            if (i == chunks - 1) { // the upload's version is published with its last chunk, and takes that chunk's attributes
                chunk.setCrc32c((int) whole.getValue()).setContentType(attributes.contentType()).setMetadata(attributes.metadata());
            }
            if (!sent.send(chunk.build())) {
                return sent.stopped("put " + lobId + ": stopped after " + i + " of " + chunks + " chunks, " + sent.why("as chunk "
                        + (i + 1) + " was refused") + "; " + (i == 0 ? "nothing was sent" : abandoned(w, ids, uploadId, sent.failed.get()))
                        + ": the LOB is unchanged");
            }
            progress.sent(offset + n);
        }
        // all queued without waiting: a chunk that fails now (a broker away for delivery.timeout.ms) fails after the rest, and
        // is given up as one seen failing above is (an ABORT where the producer can still send one)
        return completeWhen(w, sent.futures, i -> "put " + lobId + ": chunk " + (i + 1) + " of " + chunks + " failed; "
                + abandoned(w, ids, uploadId, firstFailed(sent.futures).getValue()) + ": the LOB is unchanged, unless that chunk "
                + "reached Kafka all the same before it failed (one that timed out, or that a close cut short, may have): read the "
                + "LOB before you retry");
    }

    /**
     * What becomes of an upload given up after its first chunk, as the caller is told. Without an idempotency key, an ABORT
     * sent after the chunks (same key, so same partition, after them) has the writer free the upload's pages at once,
     * where they would stay taken for lob.upload.timeout.ms, and a put retried in a loop would take them again each time.
     * Not waited for: lost, the upload expires as before. Under a key, a run again goes on from the chunks the writer has,
     * which an abort would drop.
     *
     * @param failure why a chunk failed, if one did (null: only the input failed): a producer closed, or one that waited
     *                out a time limit (a buffer full for max.block.ms, a broker away), would refuse the ABORT too, or make
     *                it wait as long again
     */
    private String abandoned(LobWrite w, CommandIds ids, String uploadId, Throwable failure) {
        String expires = "the upload expires after lob.upload.timeout.ms";
        if (ids.key() != null) {
            return "the upload is incomplete (run the put again under the same key to send the rest; else " + expires + ")";
        }
        if (failure instanceof TimeoutException || failure instanceof IllegalStateException) {
            return expires;
        }
        CompletableFuture<RecordMetadata> abort = send(w, base(CommandIds.fresh(w.lobId(), LobOp.ABORT), 0)
                .setUploadId(uploadId).build());
        if (abort.isCompletedExceptionally()) { // refused within send: said, not claimed done
            return expires + " (its ABORT was refused too: " + unwrapped(abort.handle((md, err) -> err).join()) + ")";
        }
        return "the upload is aborted (the writer frees its pages)";
    }

    private CompletableFuture<RecordMetadata> sendWhole(LobWrite w, CommandIds ids, byte[] data, Attributes attributes) {
        return send(w, base(ids, 0).setTotalLength(data.length).setCrc32c(crc(data)).setData(ByteBuffer.wrap(data))
                .setContentType(attributes.contentType()).setMetadata(attributes.metadata()).build());
    }

    /**
     * Overwrites {@code length} bytes at {@code offset} (at most the LOB's length) with bytes from
     * {@code data}. More than {@code lob.chunk.size} bytes go as several WRITEs at consecutive
     * offsets: each is applied atomically, the whole is not (a reader may see the first ones
     * applied before the last). Each piece names the one before it, and the writer applies it only
     * once that one is applied: if one is lost, none after it is applied, so what may be applied is a prefix.
     */
    @Override
    public LobWrite write(String lobId, long offset, InputStream data, long length, Progress progress)
            throws IOException {
        return pieces(CommandIds.fresh(lobId, LobOp.WRITE), offset, data, length, progress);
    }

    /**
     * Appends {@code length} bytes from {@code data}; in pieces of {@code lob.chunk.size}, applied in order
     * as a prefix, like {@link #write}. Each piece appends at the end the LOB has when it is applied: another
     * producer's append to the same LOB between two pieces lands between them.
     */
    @Override
    public LobWrite append(String lobId, InputStream data, long length, Progress progress) throws IOException {
        return pieces(CommandIds.fresh(lobId, LobOp.APPEND), 0, data, length, progress);
    }

    /** Cuts the LOB to {@code newLength} bytes. */
    @Override
    public LobWrite truncate(String lobId, long newLength) {
        return truncate(CommandIds.fresh(lobId, LobOp.TRUNCATE), newLength);
    }

    private LobWrite truncate(CommandIds ids, long newLength) {
        if (newLength < 0) {
            throw new IllegalArgumentException("truncate " + ids.lobId() + ": negative length " + newLength);
        }
        LobWrite w = begin(ids.lobId());
        return completeWhen(w, List.of(send(w, base(ids, 0).setTotalLength(newLength).build())));
    }

    /** Deletes the LOB; its last version becomes history for purge. Deleting a LOB that does not exist is applied and changes nothing. */
    @Override
    public LobWrite delete(String lobId) {
        return delete(CommandIds.fresh(lobId, LobOp.DELETE));
    }

    private LobWrite delete(CommandIds ids) {
        LobWrite w = begin(ids.lobId());
        return completeWhen(w, List.of(send(w, base(ids, 0).build())));
    }

    private LobWrite pieces(CommandIds ids, long offset, InputStream data, long length, Progress caller) throws IOException {
        Progress progress = toldUntilItThrows(caller);
        String lobId = ids.lobId();
        String name = ids.op().name().toLowerCase(Locale.ROOT);
        if (offset < 0 || length < 0) {
            throw new IllegalArgumentException(name + " " + lobId + ": negative offset " + offset + " or length " + length);
        }
        checkValue(name, lobId, data);
        if (offset > maxValueBytes - length) { // offset + length, which could wrap
            // the value would be at least this long (an append's offset is 0 here): pieces the writer would apply up to
            // the limit and dead-letter past it; refused whole, as a put over the limit is
            throw new IllegalArgumentException(name + " " + lobId + ": the value would reach at least "
                    + BigInteger.valueOf(offset).add(BigInteger.valueOf(length)) + " bytes, over lob.value.max.bytes ("
                    + maxValueBytes + "): the writer would dead-letter it");
        }
        LobWrite w = begin(lobId);
        Sent sent = new Sent(w);
        long done = 0;
        int piece = 0;
        String previous = null;
        Long previousFingerprint = null;
        List<Long> starts = new ArrayList<>(); // each piece's first byte
        byte[] buffer = new byte[(int) Math.min(chunkSize, length)]; // one for every piece: see send()
        do {
            long before = done;
            if (sent.anyFailed()) {
                return sent.stopped(name + " " + lobId + ": stopped at byte " + before + " of " + length + ", "
                        + sent.why("as a piece failed") // before the first piece only a stop
                        + (before == 0 ? "; nothing of it was sent: the LOB is unchanged" : mayBeApplied(before, ids)));
            }
            int n;
            try {
                n = readExactly(data, buffer, (int) Math.min(chunkSize, length - done), done, length);
            } catch (EOFException e) {
                throw before == 0 ? e : new EOFException(e.getMessage() + mayBeApplied(before, ids));
            } catch (IOException e) {
                throw before == 0 ? e : new IOException(name + " " + lobId + ": reading the input failed at byte " + before
                        + mayBeApplied(before, ids) + ": " + e.getMessage(), e);
            }
            // Each piece names the one before (after): sent without waiting for its acknowledgement, a piece could be
            // delivered though the one before expired in the producer's buffer (delivery.timeout.ms, a broker away), and
            // an APPEND be applied where the lost piece belonged. The writer refuses a piece whose piece before was not
            // applied, so what is applied of the write is a prefix. It names the piece as this try sent it too
            // (afterFingerprint): a retry under the same idempotency key with other bytes must not follow the first try's.
            LobCommand cmd = base(ids, piece++).setAfter(previous).setAfterFingerprint(previousFingerprint).setOffset(offset + done)
                    .setTotalLength(n).setCrc32c(crc(buffer, n)).setData(ByteBuffer.wrap(buffer, 0, n)).build();
            previousFingerprint = CommandFingerprint.of(cmd); // before the send, whose serializer may read the buffer through
            if (!sent.send(cmd)) { // refused before it left (no metadata within max.block.ms, the serializer): nothing from before on
                return sent.stopped(name + " " + lobId + ": stopped at byte " + before + " of " + length + ", "
                        + sent.why("as its piece was refused")
                        + (before == 0 ? "; nothing of it was sent: the LOB is unchanged" : mayBeApplied(before, ids)));
            }
            starts.add(done);
            previous = cmd.getCommandId();
            done += n;
            progress.sent(done);
        } while (done < length);
        // all sent without waiting: a piece that fails now (a broker away for delivery.timeout.ms) fails after the rest were
        // queued, and the write says which piece failed first and what that means
        return completeWhen(w, sent.futures, i -> name + " " + lobId + ": the piece at byte " + starts.get(i) + " of " + length
                + " failed; a prefix of the write may be applied (each piece applies on its own, once the one before it is; one "
                + "that timed out may have reached Kafka)" + retry(ids));
    }

    /** Each piece of a write or append is applied on its own, in order: those sent before a failure may be applied (a prefix). */
    private static String mayBeApplied(long sentBefore, CommandIds ids) {
        return "; the pieces before byte " + sentBefore + " were sent and a prefix of them may be applied (each piece applies "
                + "on its own, once the one before it is)" + retry(ids);
    }

    /**
     * How to retry a write that may be partly applied. Under an idempotency key: the same write again. Without one, not
     * at once: the pieces sent may not be applied yet, and a LOB read then would have them sent twice.
     */
    private static String retry(CommandIds ids) {
        return ids.key() != null
                ? "; run it again under the same idempotency key (within lob.command.dedupe.window.ms): it applies only what "
                + "this try did not"
                : "; before you send what is missing, let what was sent be applied (the writer's next commit) and read the "
                + "LOB; a write given an idempotency key from its first try can simply be run again";
    }

    /**
     * The records of one write handed to the producer so far. Once one failed the rest are not
     * sent: with the broker gone, each further send would wait {@code max.block.ms} for buffer space
     * and then fail too, and a 1 GiB put would crawl on for many minutes before saying anything.
     */
    private final class Sent {
        private final LobWrite write;
        private final List<CompletableFuture<RecordMetadata>> futures = new ArrayList<>();
        private final AtomicReference<Throwable> failed = new AtomicReference<>();

        Sent(LobWrite write) {
            this.write = write;
        }

        /**
         * @return false if the producer refused the record at once, or the client was told to stop (it never left; the
         * caller stops the write there)
         */
        boolean send(LobCommand cmd) {
            CompletableFuture<RecordMetadata> f = LobClient.this.send(write, cmd);
            f.whenComplete((md, err) -> {
                if (err != null) {
                    failed.compareAndSet(null, err);
                }
            });
            futures.add(f);
            if (f.isCompletedExceptionally()) {
                // failed within send (its callback ran on this thread); recorded here too, as whenComplete may not have run
                failed.compareAndSet(null, unwrapped(f.handle((md, err) -> err).join()));
                return false;
            }
            return true;
        }

        /** Whether a record failed, or the client was told to stop sending ({@link #stopSending}): the write goes no further. */
        boolean anyFailed() {
            Throwable stop = stopSending;
            if (stop != null) {
                failed.compareAndSet(null, stop);
            }
            return failed.get() != null;
        }

        /** Why the write goes no further, for the caller's message: {@code recordFailed}, or the client's stop. */
        String why(String recordFailed) {
            return failed.get() instanceof WriteStoppedException ? "as the client was told to stop" : recordFailed;
        }

        /**
         * The write, failed with {@code why} and the first failure as its cause once the records sent so far are
         * done (so that it completes after them, as a whole write does).
         */
        LobWrite stopped(String why) {
            Throwable t = failed.get();
            IOException stopped = new IOException(why + ": " + said(t), t);
            CompletableFuture.allOf(futures.toArray(CompletableFuture[]::new))
                    .whenCompleteAsync((v, err) -> write.completeExceptionally(stopped), callbacks());
            return write;
        }
    }

    /**
     * Reads exactly {@code n} bytes into the start of {@code buffer}: with the buffer given, not
     * {@code readNBytes(n)}, which gathers 8 KiB pieces and copies them again.
     */
    private static int readExactly(InputStream in, byte[] buffer, int n, long at, long total) throws IOException {
        int read = 0;
        try {
            // not readNBytes, which spins for ever on a stream that returns 0 at its end
            for (int got; read < n && (got = BulkInputStream.readAtLeastOne(in, buffer, read, n - read)) >= 0; ) {
                read += got;
            }
        } catch (RuntimeException e) { // (an UncheckedIOException, an adapter's own): the input's failure all the same, for
            // the caller to abort the upload or say what was sent, as for an IOException
            throw new IOException("reading the input failed after " + (at + read) + " of " + total + " bytes: " + e, e);
        }
        if (read != n) {
            throw new EOFException("input ended after " + (at + read) + " of " + total + " bytes");
        }
        return n;
    }

    private static int crc(byte[] data) {
        return crc(data, data.length);
    }

    private static int crc(byte[] data, int n) {
        CRC32C crc = new CRC32C();
        crc.update(data, 0, n);
        return (int) crc.getValue();
    }

    /** A null value is the caller's mistake, told as such: not an input that failed (an IOException), nor an empty value. */
    private static void checkValue(String op, String lobId, Object value) {
        if (value == null) {
            throw new IllegalArgumentException(op + " " + lobId + ": the value must not be null");
        }
    }

    private void checkLength(String lobId, long length) {
        if (length < 0) {
            throw new IllegalArgumentException("put " + lobId + ": negative length " + length);
        }
        if (length > maxValueBytes) {
            throw new IllegalArgumentException("put " + lobId + ": " + length + " bytes is over lob.value.max.bytes (" + maxValueBytes
                    + "): the writer would dead-letter it");
        }
    }

    private LobWrite begin(String lobId) {
        if (closing) {
            throw closedClient(); // as KafkaProducer.send after close; before the input is read, not in the write's future
        }
        if (lobId == null) {
            throw new IllegalArgumentException("the lobId must not be null");
        }
        if (lobId.isEmpty()) {
            throw new IllegalArgumentException("the lobId must not be empty"); // the writer would dead-letter it
        }
        LobStore.checkId("lobId", lobId); // the writer would dead-letter it
        BEGUN_ON_THIS_THREAD.get()[0]++;
        return new LobWrite(this, lobId, clientId + "/" + writes.incrementAndGet(), System.currentTimeMillis());
    }

    /** A failure as a user's message says it: its message (Kafka's say what went wrong), its class only without one. */
    private static String said(Throwable t) {
        return t.getMessage() != null ? t.getMessage() : t.getClass().getSimpleName();
    }

    /**
     * Completes {@code write} with the last record's metadata once all are acknowledged, on {@link #callbacks}; fails it
     * if any failed.
     */
    private LobWrite completeWhen(LobWrite write, List<CompletableFuture<RecordMetadata>> sent) {
        return completeWhen(write, sent, null);
    }

    /**
     * As {@link #completeWhen(LobWrite, List)}; a write that failed fails with {@code whyFailed} of the first record, in
     * the order sent, that failed (not of whichever failed first) and that record's failure as its cause.
     */
    private LobWrite completeWhen(LobWrite write, List<CompletableFuture<RecordMetadata>> sent, IntFunction<String> whyFailed) {
        CompletableFuture.allOf(sent.toArray(CompletableFuture[]::new)).whenCompleteAsync((v, err) -> {
            if (err != null && whyFailed != null) {
                Map.Entry<Integer, Throwable> first = firstFailed(sent);
                write.completeExceptionally(new IOException(whyFailed.apply(first.getKey()) + ": " + said(first.getValue()),
                        first.getValue()));
            } else if (err != null) {
                write.completeExceptionally(unwrapped(err));
            } else {
                write.appendedAt(sent.stream().mapToLong(f -> f.join().timestamp()).min().orElse(-1));
                write.complete(sent.get(sent.size() - 1).join());
            }
        }, callbacks());
        return write;
    }

    /** The first of {@code sent}, all done and one at least failed, that failed, in their order: its index and failure. */
    static Map.Entry<Integer, Throwable> firstFailed(List<? extends CompletableFuture<?>> sent) {
        for (int i = 0; i < sent.size(); i++) {
            if (sent.get(i).isCompletedExceptionally()) {
                return Map.entry(i, unwrapped(sent.get(i).handle((r, e) -> e).join()));
            }
        }
        throw new IllegalArgumentException("none of the records failed");
    }

    /** The failure a {@link CompletionException} wraps, as a dependent future reports it; else {@code t} itself. */
    private static Throwable unwrapped(Throwable t) {
        return t instanceof CompletionException && t.getCause() != null ? t.getCause() : t;
    }

    /** {@link #callbacks}, or the completing thread once the client is closed. */
    Executor callbacks() {
        return task -> {
            try {
                callbacks.execute(task);
            } catch (RejectedExecutionException closed) {
                task.run();
            }
        };
    }

    /** The command of the write's {@code record}-th record, with its ids, but no data yet. */
    private static LobCommand.Builder base(CommandIds ids, int record) {
        return LobCommand.newBuilder()
                .setCommandId(ids.commandId(record))
                .setLobId(ids.lobId())
                .setOp(ids.op())
                .setData(ByteBuffer.allocate(0))
                .setMetadata(Map.of())
                .setProducedAt(Instant.now());
    }

    /**
     * Hands {@code cmd} to the producer. Kafka's producer serializes a record inside {@code send},
     * in the caller's thread, before it returns: the bytes {@code cmd}'s data wraps are free again
     * then, so put and the pieces of write and append read every chunk into one buffer. (A fresh
     * 512 KiB array per chunk cost 3.4 ms of CPU per MB in a new JVM on the benchmarks' 2-core VM, as the CLI runs:
     * most of it the kernel zeroing pages touched for the first time.) A producer interceptor
     * ({@code lob.producer.interceptor.classes}) that keeps the record to read it later would see a later
     * chunk's bytes: it must copy what it keeps.
     */
    private CompletableFuture<RecordMetadata> send(LobWrite write, LobCommand cmd) {
        Throwable stop = stopSending;
        if (stop != null && cmd.getOp() != LobOp.ABORT) { // an upload given up still says so to the writer
            return CompletableFuture.failedFuture(stop);
        }
        CompletableFuture<RecordMetadata> f = new CompletableFuture<>();
        Headers headers = new RecordHeaders().add(WRITE_HEADER, write.writeId().getBytes(StandardCharsets.UTF_8));
        try {
            producer.send(new ProducerRecord<>(topic, null, write.lobId(), cmd, headers), (md, err) -> {
                if (err != null) {
                    f.completeExceptionally(err);
                } else {
                    f.complete(md);
                }
            });
        } catch (RuntimeException e) {
            // what send throws rather than hands its callback (the serializer's refusal, a registry away, a closed
            // producer's IllegalStateException): the write's future fails with it, as with the others
            f.completeExceptionally(e);
        }
        return f;
    }

    /**
     * Opens now what {@link LobWrite#applied()} uses (a consumer of the dead-letter topic and an
     * admin client), which the first {@code applied()} opens otherwise: a caller that will wait
     * learns before sending anything that no writer node ever ran against the cluster.
     *
     * @throws IllegalStateException if the dead-letter topic does not exist
     */
    public void watchApplied() {
        appliedTracker();
    }

    AppliedTracker appliedTracker() {
        AppliedTracker t = trackerIfOpen();
        if (t != null) {
            return t;
        }
        // Made outside the client's monitor, which close() takes: the making waits up to trackerPartitionsWait for a broker
        // that does not answer, and a close(timeout) meanwhile would wait as long on top of its timeout. One at a time.
        synchronized (trackerMaking) {
            t = trackerIfOpen();
            if (t != null) {
                return t;
            }
            t = new AppliedTracker(config, clientId + "/", trackerSeenMax, callbacks(), trackerPartitionsWait, () -> closing);
            synchronized (this) {
                if (!closed) {
                    tracker = t;
                    return t;
                }
            }
            t.close(Duration.ZERO); // closed while it was made: close() did not see it
            throw closedClient();
        }
    }

    /** The tracker, null if none is made yet; throws if this client is closed. */
    private synchronized AppliedTracker trackerIfOpen() {
        if (closed) {
            throw closedClient();
        }
        return tracker;
    }

    private static IllegalStateException closedClient() {
        return new IllegalStateException("LobClient closed");
    }

    /** The writer group whose commits {@link LobWrite#applied()} waits for. */
    public String writerGroup() {
        return config.get(LobStreamConfig.APPLICATION_ID);
    }

    /**
     * Sends what the producer holds and waits until Kafka has acknowledged or refused it (the producer's flush). The
     * {@link LobWrite} futures complete on the client's callback thread just after, not all of them by the time this
     * returns: wait on them, not on this, to know a write's outcome.
     */
    public void flush() {
        producer.flush();
    }

    /**
     * Sends no more records, for good: a write in progress stops at its next record, as if one of its records had failed
     * (an upload without an idempotency key is aborted, its ABORT sent so that the writer frees its pages at once, not
     * after lob.upload.timeout.ms; a write or append says up to which byte it was sent), and every write from then on fails
     * at once, sending nothing and reading none of its input: its {@link LobWrite} fails with a {@link WriteStoppedException}
     * (a put over lob.chunk.size, a write or an append: with an IOException caused by one). For a process told to stop
     * mid-upload (Ctrl-C). Records handed to the producer before are still sent: {@link #close} waits for them.
     * (Public for the CLI and the tools; an application closes its client instead.)
     */
    public void stopSending(String why) {
        stopSending = new WriteStoppedException(why); // not an IllegalStateException: abandoned() sends no ABORT for those
    }

    /**
     * Closes the producer (sending what it holds), then fails the {@link LobWrite#applied()} futures still waiting, and
     * waits for the writes' futures to complete: once this returns, every write whose call returned before the close began
     * is done, its stages run, as every callback of a closed {@code KafkaProducer} has (but where it is called from a stage
     * of one of the client's writes, which cannot wait for itself). A write begun after the close began is refused with
     * {@link IllegalStateException}; one still sending on another thread fails with the closed producer's error.
     */
    @Override
    public void close() {
        close(Duration.ofMillis(Long.MAX_VALUE));
    }

    /**
     * {@link #close()}, waiting at most about {@code timeout} for the producer to send what it holds (what it has not
     * sent by then fails its writes), for the tracker to stop and for the writes' stages to run. Safe to call again.
     */
    public void close(Duration timeout) {
        closing = true;
        if (timeout.isNegative()) {
            timeout = Duration.ZERO; // the producer refuses a negative one, and would stay open
        }
        long deadline = System.nanoTime() + (timeout.compareTo(Duration.ofDays(1)) > 0 ? Duration.ofDays(1) : timeout).toNanos();
        try {
            // once: KafkaProducer would close the user's interceptors and serializers again. A close at the same time
            // waits for that one (up to its own deadline), or it would shut the callbacks down while writes still complete
            CompletableFuture<Void> mine = new CompletableFuture<>();
            CompletableFuture<Void> first = producerClosed.compareAndExchange(null, mine);
            if (first == null) {
                try {
                    producer.close(timeout); // throws InterruptException if this thread is interrupted, closed all the same
                } finally {
                    mine.complete(null);
                }
            } else if (!callbacks.isShutdown()) { // (once another close shut them down, the wait protects nothing, and on
                // the producer's network thread, where completions then run, it would hold up the first close's join of it)
                awaitQuietly(first, deadline);
            }
        } finally {
            AppliedTracker t;
            synchronized (this) {
                closed = true;
                t = tracker;
            }
            try {
                if (t != null) {
                    t.close(Duration.ofNanos(Math.max(0, deadline - System.nanoTime())));
                }
            } finally {
                callbacks.shutdown();
                awaitCallbacks(deadline);
            }
        }
    }

    private static void awaitQuietly(CompletableFuture<Void> done, long deadline) {
        try {
            done.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException | java.util.concurrent.TimeoutException e) {
            // closed as far as it goes: the rest of this close goes on
        }
    }

    /** Waits until the writes' stages have run, or the deadline; not on a callback thread, which would wait for itself. */
    private void awaitCallbacks(long deadline) {
        if (CALLBACKS_OF.get() == this) {
            return;
        }
        try {
            if (!callbacks.awaitTermination(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                log.warn("LobClient closed with stages of its writes still running");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
