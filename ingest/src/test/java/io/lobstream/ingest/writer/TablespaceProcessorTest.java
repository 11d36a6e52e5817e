package io.lobstream.ingest.writer;

import io.lobstream.avro.LobCommand;
import io.lobstream.avro.LobOp;
import io.lobstream.avro.ReclaimRecord;
import io.lobstream.store.LobStore;
import io.lobstream.store.LobStoreConfig;
import io.lobstream.store.Source;
import io.lobstream.store.index.VersionEntry;
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

import java.io.ByteArrayInputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;

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
        initialised(processor, tablespace -> {
            process(processor, "lob.commands", 5);
            process(processor, "lob.commands", 5); // the same record again (a timeout): not going back
            process(processor, "lob.commands", 6);
            assertThat(context.forwarded()).as("dead-lettered: the records themselves are bad").hasSize(3);
            assertThatThrownBy(() -> process(processor, "lob.commands", 3)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("went back from offset 6 to 3");
            assertThat(TablespaceDirs.logCut(tablespace.store().directory())).get().asString().contains("went back from offset 6 to 3");
        });
    }

    @Test
    void aReclaimBelowTheLastOffsetFailsTheTaskOnlyUntilItStartsAgain() throws Exception {
        TablespaceProcessor<?> processor = new ReclaimProcessor(() -> UNDECODABLE, new WriterMetrics(meters));
        initialised(processor, tablespace -> {
            process(processor, "lob.reclaim", 5);
            process(processor, "lob.reclaim", 6);
            assertThatThrownBy(() -> process(processor, "lob.reclaim", 3)).isInstanceOf(IllegalStateException.class);
            assertThat(TablespaceDirs.logCut(tablespace.store().directory())).as("a cut lob.reclaim only delays purge").isEmpty();

            processor.close();
            processor.init(context); // the task started again
            process(processor, "lob.reclaim", 3);
            process(processor, "lob.reclaim", 7);
            assertThat(context.forwarded()).as("3 counts as applied here; 7 is dead-lettered").hasSize(3);
        });
    }

    /**
     * A lob.reclaim deleted and made anew starts its offsets again below the one the tablespace recorded: its reclaims are
     * applied still (they were skipped as applied, and the versions they name never freed). Read again after a restart,
     * a reclaim applied before changes nothing: its version is no longer pending.
     */
    @Test
    void aReclaimBelowTheRecordedOffsetIsAppliedIfItsVersionIsStillPending() throws Exception {
        AtomicReference<ReclaimRecord> next = new AtomicReference<>();
        TablespaceProcessor<?> processor = new ReclaimProcessor(() -> (topic, bytes) -> next.get(), new WriterMetrics(meters));
        initialised(processor, tablespace -> {
            LobStore store = tablespace.store();
            store.put("a", new ByteArrayInputStream(new byte[50_000]), 50_000, null, new Source("lob.commands-0", 0));
            store.put("a", new ByteArrayInputStream(new byte[50_000]), 50_000, null, new Source("lob.commands-0", 1));
            List<VersionEntry> pending = new ArrayList<>();
            store.forEachPending(pending::add);
            VersionEntry old = pending.get(0);
            next.set(reclaimOf("no-such-lob", 1, old)); // the old lob.reclaim: its offsets reached 100
            process(processor, "lob.reclaim", 100);
            assertThat(store.appliedOffset("lob.reclaim-0")).isEqualTo(100);

            processor.close();
            processor.init(context); // the topic made anew; the task started again
            next.set(reclaimOf("a", old.version(), old));
            process(processor, "lob.reclaim", 3);
            List<VersionEntry> left = new ArrayList<>();
            store.forEachPending(left::add);
            assertThat(left).as("reclaimed, not skipped as applied").isEmpty();
            assertThat(store.appliedOffset("lob.reclaim-0")).as("the offset never goes back").isEqualTo(100);

            processor.close();
            processor.init(context); // read again after a crash: the same reclaim at the same offset frees nothing
            process(processor, "lob.reclaim", 3);
            assertThat(meters.get("lob_reclaims").tag("outcome", "applied").counter().count()).isEqualTo(1);
            assertThat(meters.get("lob_reclaims").tag("outcome", "ignored").counter().count()).isEqualTo(2);
            assertThat(store.appliedOffset("lob.reclaim-0")).isEqualTo(100);
            assertThat(context.forwarded()).as("nothing dead-lettered").isEmpty();
            assertThat(store.fsck(false).problems()).isEmpty();
        });
    }

    private static ReclaimRecord reclaimOf(String lobId, long version, VersionEntry pages) {
        List<io.lobstream.avro.Extent> extents = new ArrayList<>();
        pages.extents().forEach(e -> extents.add(new io.lobstream.avro.Extent(e.firstPage(), e.pageCount())));
        return ReclaimRecord.newBuilder().setLobId(lobId).setVersion(version).setExtents(extents).setWorkerId("test")
                .setTime(Instant.now()).build();
    }

    /**
     * A punctuator's failure fails the task as a record's does: recorded, so that the task's next init waits instead of
     * failing again at once, round after round (each a rebalance).
     */
    @Test
    void aFailingPunctuatorIsRecordedAsTheTasksFailure() throws Exception {
        CommandProcessor processor = commandProcessor();
        initialised(processor, tablespace -> {
            tablespace.store().close(); // compaction now fails on a closed tablespace
            Punctuator compaction = scheduledEvery(Duration.ofHours(1));
            assertThatThrownBy(() -> compaction.punctuate(1_000L)).isInstanceOf(UncheckedIOException.class)
                    .hasMessageContaining("partition 0 compaction");
            long beforeTheSecond = System.nanoTime(); // not the clock after it: a pause of 1 s there would end the wait
            assertThatThrownBy(() -> compaction.punctuate(2_000L)).isInstanceOf(UncheckedIOException.class);
            // at once after a first failure, then a wait
            assertThatThrownBy(() -> registry.retries().awaitRetry(0, beforeTheSecond)).isInstanceOf(LockException.class);
        });
    }

    /** Kafka Streams' own recovery (a send that failed on a broker away for a moment revives the task) is no failure. */
    @Test
    void aTaskRevivedByKafkaStreamsIsNotRecordedAsFailed() throws Exception {
        CommandProcessor processor = commandProcessor();
        initialised(processor, tablespace -> {
            processor.every(Duration.ofMinutes(7), "a send", now -> {
                throw new TaskCorruptedException(java.util.Set.of(new TaskId(0, 0)));
            });
            Punctuator send = scheduledEvery(Duration.ofMinutes(7));
            for (int i = 0; i < 3; i++) {
                assertThatThrownBy(() -> send.punctuate(1_000L)).isInstanceOf(TaskCorruptedException.class);
            }
            registry.retries().awaitRetry(0, System.nanoTime()); // no wait
        });
    }

    /**
     * Kafka Streams keeps a task's punctuations across a suspend and a resume, which inits the processor again: the
     * close cancels what the init scheduled, or each resume would add compaction, housekeeping and re-emit beside the last.
     */
    @Test
    void aCloseCancelsWhatTheInitScheduled() throws Exception {
        CommandProcessor processor = commandProcessor();
        initialised(processor, tablespace -> {
            assertThat(context.scheduledPunctuators()).hasSizeGreaterThanOrEqualTo(3).noneMatch(p -> p.cancelled());
        });
        assertThat(context.scheduledPunctuators()).allMatch(p -> p.cancelled());
    }

    /**
     * Kafka Streams commits a task after each punctuation: compaction every second made an idle node run a transaction a
     * second on each stream thread. Runs that find nothing to move, with no record between them, slow it down to every
     * 10 s; a command or a reclaim speeds it up again.
     */
    @Test
    void compactionSlowsDownOnAnIdlePartitionAndACommandOrAReclaimSpeedsItUp() throws Exception {
        LobCommand put = LobCommand.newBuilder().setCommandId("c1").setLobId("a").setOp(LobOp.PUT).setOffset(0).setTotalLength(3)
                .setData(ByteBuffer.wrap(new byte[] {1, 2, 3})).setMetadata(Map.of()).setProducedAt(Instant.now()).build();
        // (an upload timeout of 4 s: housekeeping every 2 s, not every 10 s as compaction once idle)
        CommandProcessor processor = new CommandProcessor(() -> (topic, bytes) -> put, new WriterMetrics(meters), 1 << 20, 1,
                new UploadExpiry(4_000, "lob.commands", CommandsLogEnd.UNKNOWN), 60_000, Duration.ofSeconds(1),
                new UndoResender(UndoResender.Settings.OFF));
        initialised(processor, tablespace -> {
            for (int i = 0; i < CommandProcessor.IDLE_COMPACTIONS; i++) {
                assertThat(compactions(Duration.ofSeconds(1))).as("run %d", i).hasSize(1);
                scheduledEvery(Duration.ofSeconds(1)).punctuate(1_000L + i);
            }
            assertThat(compactions(Duration.ofSeconds(1))).as("idle: not every second").isEmpty();
            assertThat(compactions(CommandProcessor.IDLE_COMPACT_EVERY)).hasSize(1);
            scheduledEvery(CommandProcessor.IDLE_COMPACT_EVERY).punctuate(20_000L);
            assertThat(compactions(CommandProcessor.IDLE_COMPACT_EVERY)).as("a run that moved nothing: slow still").hasSize(1);

            process(processor, "lob.commands", 0); // (applied or dead-lettered: a command either way)
            assertThat(compactions(Duration.ofSeconds(1))).as("a command: every second again").hasSize(1);
            assertThat(compactions(CommandProcessor.IDLE_COMPACT_EVERY)).isEmpty();
            scheduledEvery(Duration.ofSeconds(1)).punctuate(30_000L);
            assertThat(compactions(Duration.ofSeconds(1))).as("the command came since the last run: not a fruitless run").hasSize(1);

            for (int i = 0; i < CommandProcessor.IDLE_COMPACTIONS; i++) {
                scheduledEvery(Duration.ofSeconds(1)).punctuate(31_000L + i);
            }
            assertThat(compactions(Duration.ofSeconds(1))).as("idle again").isEmpty();
            // a reclaim, on the task's other processor: the pages it frees leave holes for compaction to gather
            ReclaimRecord reclaim = ReclaimRecord.newBuilder().setLobId("gone").setVersion(1).setExtents(List.of()).setWorkerId("test")
                    .setTime(Instant.now()).build();
            TablespaceProcessor<?> reclaims = new ReclaimProcessor(() -> (topic, bytes) -> reclaim, new WriterMetrics(meters));
            reclaims.init(context);
            try {
                process(reclaims, "lob.reclaim", 0);
            } finally {
                reclaims.close();
            }
            assertThat(compactions(Duration.ofSeconds(1))).as("a reclaim: every second again").hasSize(1);
        });
    }

    /** The compaction punctuations of {@code interval} not cancelled. */
    private List<MockProcessorContext.CapturedPunctuator> compactions(Duration interval) {
        return context.scheduledPunctuators().stream().filter(p -> p.getInterval().equals(interval) && !p.cancelled()).toList();
    }

    private Punctuator scheduledEvery(Duration interval) {
        return context.scheduledPunctuators().stream().filter(p -> p.getInterval().equals(interval) && !p.cancelled()).findFirst()
                .orElseThrow().getPunctuator();
    }

    /** A commands processor whose records never decode, compacting every hour. */
    private CommandProcessor commandProcessor() {
        return new CommandProcessor(() -> UNDECODABLE, new WriterMetrics(meters), 1 << 20, 1,
                new UploadExpiry(60_000, "lob.commands", CommandsLogEnd.UNKNOWN), 60_000, Duration.ofHours(1),
                new UndoResender(UndoResender.Settings.OFF));
    }

    /** What a test does with {@code processor} initialised on a tablespace of its own. */
    @FunctionalInterface
    private interface WithTablespace {
        void run(LobStateStore tablespace) throws Exception;
    }

    /** Runs {@code test} with {@code processor} initialised on a new tablespace; closes both after it. */
    private void initialised(TablespaceProcessor<?> processor, WithTablespace test) throws Exception {
        LobStateStore tablespace = open();
        try {
            processor.init(context);
            test.run(tablespace);
        } finally {
            processor.close();
            tablespace.close();
        }
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
