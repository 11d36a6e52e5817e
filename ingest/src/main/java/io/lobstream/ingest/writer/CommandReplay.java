package io.lobstream.ingest.writer;

import io.lobstream.avro.LobCommand;
import io.lobstream.schema.LobSerdes;
import io.lobstream.schema.LobStreamConfig;
import io.lobstream.store.DefaultLobStore;
import io.lobstream.store.Source;
import io.lobstream.store.ValueChecksumException;
import io.lobstream.store.purge.LocalPurger;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.Deserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;

/**
 * Brings a task's tablespace up to the writer group's committed offset before the task starts
 * consuming, by replaying {@code lob.commands} (the redo log) for that partition.
 *
 * <p>Why: the tablespace is a non-changelogged store, so Kafka Streams restores nothing into it,
 * and a task starts consuming at the group's committed offset. A partition that moves to a node
 * without its tablespace (the owner died, or scaled in) would otherwise start from an empty
 * tablespace and never see the commands before that offset; a node that gets back a partition
 * it owned earlier would miss the commands applied elsewhere meanwhile. Both cases show as the
 * tablespace's applied offset for {@code lob.commands-p} being below the committed offset.
 *
 * <p>How: the commands in {@code (applied, committed)} are applied in order, validated exactly
 * as the writer does (what it dead-lettered is skipped), each recording its offset, so a crash
 * during the replay resumes where it stopped. No undo records are produced: the versions the
 * replay supersedes, and any version this copy still had pending from before, are reclaimed
 * here with a {@link LocalPurger}, since the {@code lob.reclaim} records of the earlier owner
 * name <em>its</em> copy's pages and versions, which match nothing here (the store ignores or
 * rejects them). Replay from the start needs {@code lob.commands} to keep every record
 * ({@code retention.ms=-1}, {@code cleanup.policy=delete}); records already deleted by
 * retention are reported as an error and are lost to the rebuilt copy.
 */
public final class CommandReplay {
    private static final Logger log = LoggerFactory.getLogger(CommandReplay.class);
    private static final int PURGE_EVERY = 200;

    private final LobStreamConfig config;

    public CommandReplay(LobStreamConfig config) {
        this.config = config;
    }

    /**
     * Replays what {@code store} lacks of partition {@code partition}; returns how many commands
     * were applied (0 when the store was current).
     */
    public long catchUp(int partition, DefaultLobStore store) throws IOException {
        TopicPartition tp = new TopicPartition(config.topics().commands(), partition);
        String source = tp.topic() + "-" + tp.partition();
        long committed = committedOffset(tp);
        long applied = store.appliedOffset(source);
        if (committed <= applied + 1) {
            return 0;
        }
        log.info("partition {}: tablespace has applied {} of {} up to offset {}, the writer group committed {}: replaying {} from {}",
                partition, source, tp.topic(), applied, committed, tp.topic(), applied + 1);
        long t0 = System.nanoTime();
        long replayed = 0;
        long skipped = 0;
        int maxValue = config.get(LobStreamConfig.CHUNK_SIZE);
        Deserializer<Object> decoder = LobSerdes.valueDeserializer(config);
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerProps(), new ByteArrayDeserializer(), new ByteArrayDeserializer());
             LocalPurger purger = new LocalPurger(store, 256)) {
            consumer.assign(List.of(tp));
            long start = consumer.beginningOffsets(List.of(tp)).get(tp);
            if (start > applied + 1) {
                log.error("partition {}: {} starts at offset {} (retention deleted the records before it); the commands in [{}, {}) "
                        + "are lost to this copy. Keep lob.commands with retention.ms=-1 to rebuild a partition from its topic.",
                        partition, tp.topic(), start, applied + 1, start);
            }
            consumer.seek(tp, Math.max(start, applied + 1));
            long lastLog = System.nanoTime();
            while (consumer.position(tp) < committed) {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(500))) {
                    if (r.offset() >= committed) {
                        break;
                    }
                    if (apply(r, decoder, maxValue, store, new Source(source, r.offset()))) {
                        replayed++;
                    } else {
                        skipped++;
                    }
                    if ((replayed + skipped) % PURGE_EVERY == 0) {
                        purgeAll(purger); // keeps history (and the engine's backpressure) out of the replay
                    }
                }
                if (System.nanoTime() - lastLog > 5_000_000_000L) {
                    log.info("partition {}: replay at offset {} of {} ({} applied, {} skipped)", partition, consumer.position(tp), committed, replayed, skipped);
                    lastLog = System.nanoTime();
                }
            }
            int purged = purgeAll(purger);
            store.flush();
            log.info("partition {}: replayed {} commands ({} skipped as the writer dead-lettered them) up to offset {} in {} ms; "
                    + "{} superseded versions reclaimed locally; {} LOBs live",
                    partition, replayed, skipped, committed - 1, (System.nanoTime() - t0) / 1_000_000, purged, store.stats().lobs());
        } finally {
            decoder.close();
        }
        return replayed;
    }

    /** Applies one command as the writer would; false if the writer would have dead-lettered it. */
    private static boolean apply(ConsumerRecord<byte[], byte[]> r, Deserializer<Object> decoder, int maxValue, DefaultLobStore store, Source source)
            throws IOException {
        LobCommand cmd;
        try {
            cmd = LobSerdes.decode(decoder, r.topic(), r.value(), LobCommand.class);
        } catch (RuntimeException e) {
            return false;
        }
        if (CommandProcessor.validate(cmd, r.key(), maxValue) != null) {
            return false;
        }
        // TODO(lead): call the Streams-independent CommandApplier here, with an undo sink that drops records.
        switch (cmd.getOp()) {
            case PUT -> {
                ByteBuffer b = cmd.getData().duplicate();
                byte[] data = new byte[b.remaining()];
                b.get(data);
                try {
                    store.put(cmd.getLobId(), new ByteArrayInputStream(data), data.length, cmd.getCrc32c(), source);
                } catch (ValueChecksumException e) {
                    return false;
                }
            }
            case DELETE -> store.delete(cmd.getLobId(), source);
            default -> {
                return false;
            }
        }
        return true;
    }

    private static int purgeAll(LocalPurger purger) throws IOException {
        int total = 0;
        for (int n; (n = purger.purgeOnce()) > 0; ) {
            total += n;
        }
        return total;
    }

    private long committedOffset(TopicPartition tp) throws IOException {
        String group = config.get(LobStreamConfig.APPLICATION_ID);
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, config.bootstrap()))) {
            Map<TopicPartition, OffsetAndMetadata> offsets = admin.listConsumerGroupOffsets(
                    Map.of(group, new ListConsumerGroupOffsetsSpec().topicPartitions(List.of(tp)))).partitionsToOffsetAndMetadata(group).get();
            OffsetAndMetadata o = offsets.get(tp);
            return o == null ? -1 : o.offset();
        } catch (ExecutionException e) {
            throw new IOException("cannot read the committed offsets of group " + group + ": " + e.getCause(), e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while reading committed offsets", e);
        }
    }

    private Map<String, Object> consumerProps() {
        return Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, config.bootstrap(),
                ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed",
                ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false,
                ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 100,
                ConsumerConfig.FETCH_MAX_BYTES_CONFIG, 16 * 1024 * 1024);
    }
}
