package io.lobstream.ingest.writer;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.streams.processor.TimestampExtractor;

/**
 * The timestamp of {@code lob.reclaim} records for the writer: 0, so that a task always applies
 * the reclaims it has buffered before the next command.
 *
 * <p>Why: a task reads partition p of {@code lob.commands} and of {@code lob.reclaim}, and Kafka
 * Streams picks the next record of a task by timestamp across its partitions. A reclaim carries
 * its undo record's timestamp, the time the writer applied the command that superseded the
 * version. So when the writer falls behind, every reclaim waited behind the backlog of older
 * commands: history grew with the writer's lag (about the write rate times it), passed
 * {@code lob.history.max}, and the backpressure that then delayed each command lengthened the
 * backlog the reclaims were waiting behind. Seen in {@code bench pipeline}: history at 5,300 and
 * apply latency at 20 s, where runs that kept up held it under 600. Applying reclaims first
 * keeps history to what purge has not yet done, whatever the writer's lag.
 *
 * <p>Why it is safe: a reclaim exists only for an undo record the writer emitted in the
 * transaction that committed the command superseding the version, so every reclaim a task
 * reads is for a version that its tablespace already has pending, or has already freed (then
 * the store ignores it). Nothing in the writer uses stream time (its punctuations run on wall
 * clock time), and dead letters of reclaims are stamped with the wall clock instead.
 */
final class ReclaimsFirst implements TimestampExtractor {
    /** The timestamp every reclaim record gets. */
    static final long TIMESTAMP = 0;

    @Override
    public long extract(ConsumerRecord<Object, Object> record, long partitionTime) {
        return TIMESTAMP;
    }
}
