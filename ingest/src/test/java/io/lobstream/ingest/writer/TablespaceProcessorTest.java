package io.lobstream.ingest.writer;

import io.lobstream.store.LobStoreConfig;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.streams.processor.api.MockProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A processor's records come in offset order from one init to the next. A record below the last one means the consumer
 * was reset under the running task (its position past a log that was cut, as an unclean leader election cuts it): new
 * commands at offsets the tablespace applied would be skipped as applied, so the task fails, to be checked at its start.
 */
class TablespaceProcessorTest {
    @TempDir
    Path dir;

    @Test
    void aRecordBelowTheLastOffsetFailsTheTaskUntilItStartsAgain() throws Exception {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        TablespaceRegistry registry = new TablespaceRegistry();
        LobStateStore tablespace = new LobStateStore(dir, LobStoreConfig.defaults(), meters, registry, null);
        MockProcessorContext<Object, Object> context = new MockProcessorContext<>();
        context.setCurrentSystemTimeMs(1_000L);
        tablespace.init(context.getStateStoreContext(), tablespace);
        context.addStateStore(tablespace);
        Deserializer<Object> undecodable = (topic, bytes) -> {
            throw new IllegalArgumentException("not a reclaim");
        };
        ReclaimProcessor processor = new ReclaimProcessor(() -> undecodable, new WriterMetrics(meters));
        try {
            processor.init(context);
            process(processor, context, 5);
            process(processor, context, 6);
            assertThat(context.forwarded()).as("dead-lettered: the records themselves are bad").hasSize(2);
            assertThatThrownBy(() -> process(processor, context, 3)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("went back from offset 6 to 3");

            processor.close();
            processor.init(context); // the task started again, its tablespace checked against the log (not here)
            process(processor, context, 3);
            process(processor, context, 7);
            assertThat(context.forwarded()).as("3 counts as applied: the start's check is what finds a log cut").hasSize(3);
        } finally {
            processor.close();
            tablespace.close();
        }
    }

    private static void process(ReclaimProcessor processor, MockProcessorContext<Object, Object> context, long offset) {
        context.setRecordMetadata("lob.reclaim", 0, offset);
        processor.process(new Record<>(new byte[] {1}, new byte[] {2}, 1_000L));
    }
}
