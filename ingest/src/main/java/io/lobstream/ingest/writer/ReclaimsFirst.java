package io.lobstream.ingest.writer;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.streams.processor.TimestampExtractor;

/**
 * The timestamp of {@code lob.reclaim} records for the writer: 0, so that a task always applies
 * the reclaims it has buffered before the next command. A burst of reclaims (after a purge
 * outage, or the undo records a tablespace re-emits when it opens) holds commands back until it
 * is applied; it is bounded by history, and each reclaim is a small index batch.
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
 * the store ignores it).
 *
 * <p>What else sees the 0: stream time, which upload expiry reads before a tablespace has recorded a command time
 * ({@code CommandProcessor}), is
 * the largest timestamp a task has processed, so reclaims no longer move it (before, their
 * wall-clock stamps could push it ahead of the commands' time by the writer's lag); the
 * punctuations run on wall-clock time; a reclaim's dead letter is stamped with the clock
 * ({@code ReclaimProcessor}); and Kafka Streams' end-to-end latency of the reclaim source would
 * read 56 years, so the node drops that metric ({@code LobNode}).
 */
final class ReclaimsFirst implements TimestampExtractor {
    /** The timestamp every reclaim record gets. */
    static final long TIMESTAMP = 0;

    @Override
    public long extract(ConsumerRecord<Object, Object> record, long partitionTime) {
        return TIMESTAMP;
    }
}
