package io.lobstream.ingest.writer;

import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.processor.api.RecordMetadata;

import java.nio.charset.StandardCharsets;

/**
 * Sends a record the writer cannot apply to the dead-letter topic: the original key and bytes
 * untouched, the reason and origin in headers. It is part of the task's transaction, so a
 * record is either applied or dead-lettered, once.
 */
public final class DeadLetters {
    static final String SINK = "dead-letters";
    /** Header: why the record was not applied, for people. */
    public static final String REASON = "lob.dlq.reason";
    /** Header: the kind of problem, for programs (see {@link CommandApplier}). */
    public static final String KIND = "lob.dlq.kind";
    /** Headers: where the record was read from. */
    public static final String ORIGIN_TOPIC = "lob.dlq.topic";
    public static final String ORIGIN_PARTITION = "lob.dlq.partition";
    public static final String ORIGIN_OFFSET = "lob.dlq.offset";

    private DeadLetters() {
    }

    static void send(ProcessorContext<Object, Object> context, Record<byte[], byte[]> record, String kind, String reason,
                     WriterMetrics metrics) {
        Headers headers = new RecordHeaders(record.headers().toArray());
        headers.add(KIND, bytes(kind));
        headers.add(REASON, bytes(reason));
        context.recordMetadata().ifPresent((RecordMetadata m) -> {
            headers.add(ORIGIN_TOPIC, bytes(m.topic()));
            headers.add(ORIGIN_PARTITION, bytes(Integer.toString(m.partition())));
            headers.add(ORIGIN_OFFSET, bytes(Long.toString(m.offset())));
        });
        context.forward(new Record<Object, Object>(record.key(), record.value(), record.timestamp(), headers), SINK);
        metrics.deadLettered(kind);
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
