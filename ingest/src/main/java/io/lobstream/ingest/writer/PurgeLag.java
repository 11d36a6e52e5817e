package io.lobstream.ingest.writer;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;

import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Purge lag: per partition of {@code lob.undo-history}, the undo records the purge group has not consumed. It runs up
 * to the last stable offset, what a read_committed purge worker can consume (an open transaction's undo records are
 * not lag yet), from the group's committed offset or the log's start, whichever is later: retention may have moved the
 * start past what the group consumed, and the records it deleted are no lag (no worker will read them; the writer
 * re-sends the undo records of versions still pending, {@code UndoResender}). Counted in offsets: a transaction's
 * commit marker takes one too, so at a transaction per undo record it reads up to twice the records. The node's
 * {@code lob_purge_lag_records} and {@code lobstream status} both read it here, so they agree.
 */
public final class PurgeLag {
    private PurgeLag() {
    }

    /**
     * @param committed the purge group's committed offsets (partitions it never committed on absent)
     * @return lag per partition; a partition the broker gave no offset for is absent
     */
    public static Map<Integer, Long> read(Admin admin, String undoTopic, int partitions, Map<TopicPartition, OffsetAndMetadata> committed,
            long timeoutMs) throws InterruptedException, ExecutionException, TimeoutException {
        Map<TopicPartition, OffsetSpec> stable = new HashMap<>();
        Map<TopicPartition, OffsetSpec> earliest = new HashMap<>();
        for (int p = 0; p < partitions; p++) {
            TopicPartition tp = new TopicPartition(undoTopic, p);
            stable.put(tp, OffsetSpec.latest());
            earliest.put(tp, OffsetSpec.earliest());
        }
        Map<TopicPartition, ListOffsetsResultInfo> ends = admin.listOffsets(stable, new ListOffsetsOptions(IsolationLevel.READ_COMMITTED))
                .all().get(timeoutMs, TimeUnit.MILLISECONDS);
        Map<TopicPartition, ListOffsetsResultInfo> starts = admin.listOffsets(earliest).all().get(timeoutMs, TimeUnit.MILLISECONDS);
        Map<Integer, Long> lag = new HashMap<>();
        for (int p = 0; p < partitions; p++) {
            TopicPartition tp = new TopicPartition(undoTopic, p);
            if (ends.get(tp) == null) {
                continue;
            }
            long start = starts.containsKey(tp) ? starts.get(tp).offset() : 0;
            long from = committed.get(tp) != null ? Math.max(committed.get(tp).offset(), start) : start;
            lag.put(p, Math.max(0, ends.get(tp).offset() - Math.max(0, from)));
        }
        return lag;
    }
}
