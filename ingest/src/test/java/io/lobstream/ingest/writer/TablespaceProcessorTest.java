package io.lobstream.ingest.writer;

import io.lobstream.store.LobStoreConfig;
import io.lobstream.store.tablespace.TablespaceDirs;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.streams.errors.LockException;
import org.apache.kafka.streams.errors.TaskCorruptedException;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.Punctuator;
import org.apache.kafka.streams.processor.api.MockProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A processor's records come in offset order from one init to the next. A record below the last one means the consumer
 * was reset under the running task (its position past a log that was cut, as an unclean leader election cuts it): new
 * commands at offsets the tablespace applied would be skipped as applied, so the task fails, and a commands processor
 * marks the tablespace (LOG-CUT) for its start to move it aside and rebuild it, whatever the log's end is by then.
 */
class TablespaceProcessorTest {
    private static final Deserializer<Object> UNDECODABLE = (topic, bytes) -> {
        throw new IllegalArgumentException("not a record of ours");
    };

    @TempDir
    Path dir;

    private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
    private final TablespaceRegistry registry = new TablespaceRegistry();
    private final MockProcessorContext<Object, Object> context = new MockProcessorContext<>();

    @Test
    void aCommandBelowTheLastOffsetMarksTheTablespaceAndFailsTheTask() throws Exception {
        TablespaceProcessor<?> processor = commandProcessor();
        LobStateStore tablespace = open();
        try {
            processor.init(context);
            process(processor, "lob.commands", 5);
            process(processor, "lob.commands", 5); // the same record again (a timeout): not going back
            process(processor, "lob.commands", 6);
            assertThat(context.forwarded()).as("dead-lettered: the records themselves are bad").hasSize(3);
            assertThatThrownBy(() -> process(processor, "lob.commands", 3)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("went back from offset 6 to 3");
            assertThat(TablespaceDirs.logCut(tablespace.store().directory())).get().asString().contains("went back from offset 6 to 3");
        } finally {
            processor.close();
            tablespace.close();
        }
    }

    @Test
    void aReclaimBelowTheLastOffsetFailsTheTaskOnlyUntilItStartsAgain() throws Exception {
        TablespaceProcessor<?> processor = new ReclaimProcessor(() -> UNDECODABLE, new WriterMetrics(meters));
        LobStateStore tablespace = open();
        try {
            processor.init(context);
            process(processor, "lob.reclaim", 5);
            process(processor, "lob.reclaim", 6);
            assertThatThrownBy(() -> process(processor, "lob.reclaim", 3)).isInstanceOf(IllegalStateException.class);
            assertThat(TablespaceDirs.logCut(tablespace.store().directory())).as("a cut lob.reclaim only delays purge").isEmpty();

            processor.close();
            processor.init(context); // the task started again
            process(processor, "lob.reclaim", 3);
            process(processor, "lob.reclaim", 7);
            assertThat(context.forwarded()).as("3 counts as applied here; 7 is dead-lettered").hasSize(3);
        } finally {
            processor.close();
            tablespace.close();
        }
    }

    /**
     * A punctuator's failure fails the task as a record's does: recorded, so that the task's next init waits instead of
     * failing again at once, round after round (each a rebalance).
     */
    @Test
    void aFailingPunctuatorIsRecordedAsTheTasksFailure() throws Exception {
        CommandProcessor processor = commandProcessor();
        LobStateStore tablespace = open();
        try {
            processor.init(context);
            tablespace.store().close(); // compaction now fails on a closed tablespace
            Punctuator compaction = scheduledEvery(Duration.ofHours(1));
            assertThatThrownBy(() -> compaction.punctuate(1_000L)).isInstanceOf(UncheckedIOException.class)
                    .hasMessageContaining("partition 0 compaction");
            assertThatThrownBy(() -> compaction.punctuate(2_000L)).isInstanceOf(UncheckedIOException.class);
            // at once after a first failure, then a wait
            assertThatThrownBy(() -> registry.retries().awaitRetry(0, System.nanoTime())).isInstanceOf(LockException.class);
        } finally {
            processor.close();
            tablespace.close();
        }
    }

    /** Kafka Streams' own recovery (a send that failed on a broker away for a moment revives the task) is no failure. */
    @Test
    void aTaskRevivedByKafkaStreamsIsNotRecordedAsFailed() throws Exception {
        CommandProcessor processor = commandProcessor();
        LobStateStore tablespace = open();
        try {
            processor.init(context);
            processor.every(Duration.ofMinutes(7), "a send", now -> {
                throw new TaskCorruptedException(java.util.Set.of(new TaskId(0, 0)));
            });
            Punctuator send = scheduledEvery(Duration.ofMinutes(7));
            for (int i = 0; i < 3; i++) {
                assertThatThrownBy(() -> send.punctuate(1_000L)).isInstanceOf(TaskCorruptedException.class);
            }
            registry.retries().awaitRetry(0, System.nanoTime()); // no wait
        } finally {
            processor.close();
            tablespace.close();
        }
    }

    private Punctuator scheduledEvery(Duration interval) {
        return context.scheduledPunctuators().stream().filter(p -> p.getInterval().equals(interval)).findFirst().orElseThrow()
                .getPunctuator();
    }

    /** A commands processor whose records never decode, compacting every hour. */
    private CommandProcessor commandProcessor() {
        return new CommandProcessor(() -> UNDECODABLE, new WriterMetrics(meters), 1 << 20, 1,
                new UploadExpiry(60_000, "lob.commands", CommandsLogEnd.UNKNOWN), 60_000, Duration.ofHours(1),
                new UndoResender(UndoResender.Settings.OFF));
    }

    private LobStateStore open() {
        context.setCurrentSystemTimeMs(1_000L);
        LobStateStore tablespace = new LobStateStore(dir, LobStoreConfig.defaults(), meters, registry, null);
        tablespace.init(context.getStateStoreContext(), tablespace);
        context.addStateStore(tablespace);
        return tablespace;
    }

    private void process(TablespaceProcessor<?> processor, String topic, long offset) {
        context.setRecordMetadata(topic, 0, offset);
        processor.process(new Record<>(new byte[] {1}, new byte[] {2}, 1_000L));
    }
}
