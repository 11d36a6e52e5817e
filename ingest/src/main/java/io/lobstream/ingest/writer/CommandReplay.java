package io.lobstream.ingest.writer;

import io.lobstream.ingest.replay.PartitionReplayer;
import io.lobstream.schema.LobStreamConfig;
import io.lobstream.store.DefaultLobStore;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsOptions;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

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
 * <p>How: the commands in {@code (applied, committed)} are replayed with a
 * {@link PartitionReplayer}: applied exactly as the writer applies them, versions they supersede
 * reclaimed locally (the {@code lob.reclaim} records of the earlier owner name <em>its</em>
 * copy's pages). Replay from the start needs {@code lob.commands} to keep every record
 * ({@code retention.ms=-1}, {@code cleanup.policy=delete}); records already deleted by
 * retention are reported as an error and are lost to the rebuilt copy.
 *
 * <p>A task's stores are opened in its stream thread, which does not poll meanwhile, and a thread
 * that does not poll within {@code max.poll.interval.ms} (5 min) is dropped from the group: its
 * partitions move, and a rebuild that takes longer than that never ends. So a catch-up replays
 * for at most {@code lob.writer.rebuild.slice.ms} at a time ({@link #catchUp} says whether it is
 * done); the store's init then gives way (see {@link LobStateStore}), and the next attempt goes
 * on from the offset the tablespace recorded.
 */
public final class CommandReplay {
    private static final Logger log = LoggerFactory.getLogger(CommandReplay.class);
    private static final int PURGE_EVERY = 200;

    private final LobStreamConfig config;
    private final WriterMetrics metrics;

    public CommandReplay(LobStreamConfig config, WriterMetrics metrics) {
        this.config = config;
        this.metrics = metrics;
    }

    /**
     * Replays what {@code store} lacks of partition {@code partition}, for at most
     * {@code lob.writer.rebuild.slice.ms}; returns whether the store has caught up.
     */
    public boolean catchUp(int partition, DefaultLobStore store) throws IOException {
        TopicPartition tp = new TopicPartition(config.topics().commands(), partition);
        long committed = committedOffset(tp);
        long applied = store.appliedOffset(tp.topic() + "-" + tp.partition());
        if (committed <= applied + 1) {
            return true;
        }
        log.info("partition {}: the tablespace has applied {} up to offset {}, the writer group committed {}: catching up",
                partition, tp.topic(), applied, committed);
        long slice = TimeUnit.MILLISECONDS.toNanos(config.get(LobStreamConfig.REBUILD_SLICE_MS));
        PartitionReplayer.Result r = new PartitionReplayer(config).replay(partition, store, applied + 1, committed, slice);
        metrics.rebuildSlice(r.records(), r.complete());
        if (!r.complete()) {
            log.info("partition {}: replayed up to offset {} of {} in this slice; going on once the stream thread has polled",
                    partition, r.nextOffset(), committed);
            return false;
        }
        log.info("partition {}: caught up ({} commands applied in the last slice, {} skipped as the writer dead-lettered them); "
                + "{} LOBs live", partition, r.applied(), r.rejected(), store.stats().lobs());
        return true;
    }

    private long committedOffset(TopicPartition tp) throws IOException {
        String group = config.get(LobStreamConfig.APPLICATION_ID);
        try (Admin admin = Admin.create(config.clientConfig(AdminClientConfig.configNames()))) {
            // stable: not the offset before a commit still in flight (the last owner's), which the task's
            // consumer would start past, leaving the commands in between unapplied here
            Map<TopicPartition, OffsetAndMetadata> offsets = admin.listConsumerGroupOffsets(
                    Map.of(group, new ListConsumerGroupOffsetsSpec().topicPartitions(List.of(tp))),
                    new ListConsumerGroupOffsetsOptions().requireStable(true)).partitionsToOffsetAndMetadata(group).get();
            OffsetAndMetadata o = offsets.get(tp);
            return o == null ? -1 : o.offset();
        } catch (ExecutionException e) {
            throw new IOException("cannot read the committed offsets of group " + group + ": " + e.getCause(), e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while reading committed offsets", e);
        }
    }

}
