package io.lobstream.ingest.writer;

import io.lobstream.schema.LobSerdes;
import io.lobstream.schema.LobStreamConfig;
import io.lobstream.schema.Topics;
import io.lobstream.store.LobStoreConfig;
import io.micrometer.core.instrument.MeterRegistry;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.AutoOffsetReset;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.processor.StreamPartitioner;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Optional;
import java.util.Set;

/**
 * The writer: one sub-topology, so partition p of {@code lob.commands} and of {@code lob.reclaim}
 * land in the same task, with the tablespace of partition p as its store.
 *
 * <pre>
 * lob.commands ──► apply-commands ──┬──► lob.undo-history
 *                      │            └──► lob.commands.dlq
 *                 [lob-tablespace]
 *                      │
 * lob.reclaim  ──► apply-reclaims ─────► lob.commands.dlq
 * </pre>
 *
 * Inputs are read as bytes and decoded in the processors, so an undecodable record is
 * dead-lettered inside the task's transaction instead of stopping the task. A task applies the
 * reclaims it has read before its next command ({@link ReclaimsFirst}).
 */
public final class WriterTopology {
    /** The source node of lob.reclaim. */
    public static final String RECLAIMS_SOURCE = "reclaims";

    private WriterTopology() {
    }

    /**
     * @param partitions of each of the (co-partitioned) topics
     * @param catchUps   brings the tablespaces of tasks that find them behind the writer group up to date; the caller closes it
     * @param resend     how each task finds the undo records purge consumed without a reclaim, to produce them again
     * @param logEnd     where each partition of lob.commands ends now (upload expiry by the clock asks it)
     * @param undoWriter the undo records' value serializer ({@code LobSerdes.valueSerializer}), shared by every task: Kafka
     *                   Streams closes no sink's serializer, so the caller closes it (its registry client) once the
     *                   stream threads have stopped
     */
    public static Topology build(LobStreamConfig config, LobStoreConfig storeConfig, MeterRegistry meters, TablespaceRegistry registry,
                                 int partitions, TablespaceCatchUp catchUps, UndoResender.Settings resend, CommandsLogEnd logEnd,
                                 Serializer<Object> undoWriter) {
        Topics topics = config.topics();
        WriterMetrics metrics = new WriterMetrics(meters);
        metrics.registerAtZero(topics.commands(), topics.reclaim(), partitions);
        // the tasks make their own on the stream threads; one made here first says a bad lob.value.deserializer at start, as a
        // bad setting (exit 2), where a task's would replace its thread round after round
        LobSerdes.valueDeserializer(config).close();
        long maxValue = config.get(LobStreamConfig.VALUE_MAX_BYTES);
        UploadExpiry uploads = new UploadExpiry(config.get(LobStreamConfig.UPLOAD_TIMEOUT_MS), topics.commands(), logEnd);
        long dedupeWindow = config.get(LobStreamConfig.DEDUPE_WINDOW_MS);
        Duration compactEvery = Duration.ofMillis(config.get(LobStreamConfig.COMPACT_INTERVAL_MS));

        Topology t = new Topology();
        // Both from the beginning (lob.streams.auto.offset.reset is refused): a command skipped is a write lost, a reclaim
        // skipped leaves its version pending until the undo record is re-sent. Commands in their own time (CommandTime),
        // as replay reads them; lob.streams.default.timestamp.extractor is refused too.
        t.addSource(AutoOffsetReset.earliest(), "commands", new CommandTime(), new ByteArrayDeserializer(), new ByteArrayDeserializer(),
                topics.commands());
        t.addSource(AutoOffsetReset.earliest(), RECLAIMS_SOURCE, new ReclaimsFirst(), new ByteArrayDeserializer(), new ByteArrayDeserializer(),
                topics.reclaim());
        t.addProcessor("apply-commands", () -> new CommandProcessor(() -> LobSerdes.valueDeserializer(config), metrics, maxValue,
                partitions, uploads, dedupeWindow, compactEvery, new UndoResender(resend)), "commands");
        t.addProcessor("apply-reclaims", () -> new ReclaimProcessor(() -> LobSerdes.valueDeserializer(config), metrics), RECLAIMS_SOURCE);
        t.addStateStore(new LobStateStoreBuilder(config.dataDir(), storeConfig, meters, registry, catchUps), "apply-commands", "apply-reclaims");
        t.addSink(CommandProcessor.UNDO_SINK, topics.undoHistory(), new StringSerializer(), undoWriter, toTablespace(partitions),
                "apply-commands");
        t.addSink(DeadLetters.SINK, topics.deadLetters(), new ByteArraySerializer(), new ByteArraySerializer(),
                DeadLetters.BY_ORIGIN, "apply-commands", "apply-reclaims");
        return t;
    }

    /**
     * An undo record to the partition numbered as its tablespace's: its LOB's under the partition count the topics had at
     * the start (checked alike then), not the one lob.undo-history has now. Partitions added while the writer runs would
     * take undo records where no purge worker reads their tablespace, and history would grow without a word.
     */
    static StreamPartitioner<String, Object> toTablespace(int partitions) {
        return (topic, lobId, undo, numPartitions) -> partitions > numPartitions ? Optional.empty() // (a topic made anew, smaller)
                : Optional.of(Set.of(Topics.partitionOf(lobId.getBytes(StandardCharsets.UTF_8), partitions)));
    }
}
