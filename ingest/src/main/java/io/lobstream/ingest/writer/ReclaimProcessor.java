package io.lobstream.ingest.writer;

import io.lobstream.avro.ReclaimRecord;
import io.lobstream.schema.LobSerdes;
import io.lobstream.store.DefaultLobStore;
import io.lobstream.store.ReclaimOutcome;
import io.lobstream.store.Source;
import io.lobstream.store.allocator.Extent;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.processor.api.RecordMetadata;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.List;

/**
 * Applies ReclaimRecords from purge workers to the task's tablespace. The store frees a
 * version's pages only if the version is still pending purge and the pages named are exactly
 * its pages; duplicates and stale records change nothing.
 */
final class ReclaimProcessor implements Processor<byte[], byte[], Object, Object> {
    private final Deserializer<Object> deserializer;
    private final WriterMetrics metrics;
    private ProcessorContext<Object, Object> context;
    private LobStateStore tablespace;

    ReclaimProcessor(Deserializer<Object> deserializer, WriterMetrics metrics) {
        this.deserializer = deserializer;
        this.metrics = metrics;
    }

    @Override
    public void init(ProcessorContext<Object, Object> context) {
        this.context = context;
        this.tablespace = context.getStateStore(LobStateStore.NAME);
    }

    @Override
    public void process(Record<byte[], byte[]> record) {
        RecordMetadata meta = context.recordMetadata().orElseThrow();
        Source source = new Source(meta.topic() + "-" + meta.partition(), meta.offset());
        ReclaimRecord reclaim;
        try {
            reclaim = LobSerdes.decode(deserializer, meta.topic(), record.value(), ReclaimRecord.class);
        } catch (RuntimeException e) {
            DeadLetters.send(context, record, "undecodable", "cannot decode a ReclaimRecord: " + e.getMessage(), metrics);
            return;
        }
        DefaultLobStore store = tablespace.store();
        try {
            if (meta.offset() <= store.appliedOffset(source.name())) {
                return;
            }
            List<Extent> extents = reclaim.getExtents().stream()
                    .map(e -> new Extent(e.getFirstPage(), e.getPageCount())).toList();
            ReclaimOutcome outcome = store.reclaim(reclaim.getLobId(), reclaim.getVersion(), extents, source);
            metrics.reclaim(outcome);
        } catch (IllegalArgumentException e) {
            DeadLetters.send(context, record, "invalid", "bad extents in ReclaimRecord: " + e.getMessage(), metrics);
        } catch (IOException e) {
            throw new UncheckedIOException("partition " + meta.partition() + " offset " + meta.offset(), e);
        }
    }
}
