package io.lobstream.ingest.writer;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.lobstream.avro.LobCommand;
import io.lobstream.avro.LobOp;
import io.lobstream.schema.LobStreamConfig;
import io.lobstream.store.LobStoreConfig;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.streams.processor.api.MockProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.zip.CRC32C;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Where no command came for lob.upload.timeout.ms, the wall clock stands in for the commands' time, and an upload idle
 * that long expires; but only where the broker said, at the housekeeping before, that the partition ends right after the
 * last command the task processed. With chunks waiting (the writer behind, its partition's leader away; or fetched, and
 * the task waiting for its reclaims), the upload lives on, as a replay of the partition, going by the commands' times,
 * finds it. The task (MockProcessorContext's) is of partition 0.
 */
class UploadExpiryTest {
    private static final long TIMEOUT_MS = 5_000;
    /** Idle by the commands' time as the wall clock stands in for it: the timeout, and the grace taken off the clock. */
    private static final long IDLE_MS = TIMEOUT_MS + Math.min(UploadExpiry.GRACE.toMillis(), TIMEOUT_MS);
    private static final long WINDOW_MS = 60_000;
    private static final byte PUT_ID = 100;

    @TempDir
    Path dir;

    private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
    private final MockProcessorContext<Object, Object> context = new MockProcessorContext<>();
    /** Where the broker says the partition ends, and how many times it was asked. */
    private final AtomicReference<OptionalLong> end = new AtomicReference<>(OptionalLong.empty());
    private final AtomicInteger asked = new AtomicInteger();
    /** The store also holds an upload to the clock it was applied by. */
    private final long t0 = System.currentTimeMillis();
    /** The processor's monotonic clock, in milliseconds: moved with each housekeeping's wall clock, as a real one would. */
    private final AtomicLong clockMs = new AtomicLong(t0);
    private CommandProcessor processor;
    private LobStateStore tablespace;

    @BeforeEach
    void start() {
        // a byte below PUT_ID: the first chunk of an upload; from it on, a PUT of doc with that commandId
        Deserializer<Object> chunks = (topic, bytes) -> bytes[0] >= PUT_ID ? put("put-" + bytes[0]) : firstOfTwoChunks("upload-" + bytes[0], t0);
        processor = new CommandProcessor(() -> chunks, new WriterMetrics(meters), 1 << 20, 1,
                new UploadExpiry(TIMEOUT_MS, "lob.commands", partition -> {
                    asked.incrementAndGet();
                    return CompletableFuture.completedFuture(end.get());
                }), WINDOW_MS, Duration.ofHours(1), new UndoResender(UndoResender.Settings.OFF),
                () -> TimeUnit.MILLISECONDS.toNanos(clockMs.get()));
        context.setCurrentSystemTimeMs(t0);
        tablespace = new LobStateStore(dir, LobStoreConfig.defaults(), meters, new TablespaceRegistry(), null);
        tablespace.init(context.getStateStoreContext(), tablespace);
        context.addStateStore(tablespace);
        processor.init(context);
    }

    @AfterEach
    void stop() {
        processor.close();
        tablespace.close();
    }

    @Test
    void anIdleUploadExpiresByTheWallClockOnlyWhenNothingWaitsInKafka() throws Exception {
        chunk(0);
        long idle = System.currentTimeMillis() + IDLE_MS + 1;

        housekeeping(t0 + 1); // a chunk came within the timeout: the broker is not asked (by its time, however long setup took)
        assertThat(asked).hasValue(0);
        end.set(OptionalLong.of(3)); // chunks wait in Kafka after the one processed at offset 0
        housekeepingTwice(idle);
        end.set(OptionalLong.empty()); // the broker does not answer
        housekeepingTwice(idle + 10);
        end.set(OptionalLong.of(2)); // a transaction marker after it, or a record: not known to be none
        housekeepingTwice(idle + 20);
        assertThat(expired()).as("expired with chunks waiting, or not known to be none").isZero();
        assertThat(tablespace.store().fsck(false).pagesUploading()).isPositive();

        end.set(OptionalLong.of(1)); // nothing after offset 0
        housekeeping(idle + 30);
        assertThat(expired()).as("the answer of this housekeeping is used at the next").isZero();
        housekeeping(idle + 40);
        assertThat(expired()).isEqualTo(1);
        assertThat(tablespace.store().fsck(false).pagesUploading()).isZero();
        assertThat(tablespace.store().fsck(false).problems()).as("its pages free, none leaked").isEmpty();
    }

    /** The clock stands in less the grace: within it, a chunk the leader took may still be on its way to the replicas. */
    @Test
    void theClockStandsInLessTheGrace() throws Exception {
        chunk(0);
        end.set(OptionalLong.of(1));
        long timedOut = System.currentTimeMillis() + TIMEOUT_MS + 1;
        housekeepingTwice(timedOut);
        assertThat(expired()).as("idle for the timeout by the clock, not for the timeout and the grace").isZero();
        housekeepingTwice(timedOut + IDLE_MS - TIMEOUT_MS);
        assertThat(expired()).isEqualTo(1);
    }

    /** An answer about the last record processed when it was asked says nothing once another came. */
    @Test
    void anAnswerIsUsedOnlyIfNoRecordCameSinceItWasAsked() throws Exception {
        chunk(0);
        long idle = System.currentTimeMillis() + IDLE_MS + 1;
        end.set(OptionalLong.of(2)); // the broker has the chunk at offset 1 already, which the task has not processed yet
        housekeeping(idle); // asked about offset 0, the last processed: the answer says something waits after it
        chunk(1); // another upload's first chunk at offset 1, as old as the first by its record time
        long quietAgain = idle + IDLE_MS + 1; // no command since that one for the timeout
        housekeeping(quietAgain);
        assertThat(expired()).as("the answer was about offset 0").isZero();
        housekeeping(quietAgain + 1);
        assertThat(expired()).as("both uploads, by the answer about offset 1").isEqualTo(2);
    }

    @Test
    void aTaskThatStartedAgainGoesByTheOffsetItsTablespaceRecorded() throws Exception {
        chunk(0);
        processor.close();
        processor.init(context); // the task started again, and processed nothing yet
        long idle = System.currentTimeMillis() + IDLE_MS + 1;
        end.set(OptionalLong.of(1));
        housekeepingTwice(idle);
        assertThat(expired()).isEqualTo(1);
    }

    /**
     * A step of the host's clock (NTP, a VM resumed) is no quiet spell: an upload whose chunk came just before it lives on,
     * as a copy rebuilt from lob.commands keeps it. By the wall clock the partition was quiet for the timeout.
     */
    @Test
    void aClockSteppedForwardIsNoQuietSpell() throws Exception {
        chunk(0);
        end.set(OptionalLong.of(1)); // nothing after offset 0
        long stepped = System.currentTimeMillis() + IDLE_MS + 60_000;
        punctuate(stepped); // the monotonic clock did not move
        punctuate(stepped + 1);
        assertThat(asked).as("the broker is asked only after the timeout without a command").hasValue(0);
        assertThat(expired()).isZero();
        assertThat(tablespace.store().fsck(false).pagesUploading()).isPositive();
    }

    /**
     * Housekeeping forgets commandIds by the latest command time the tablespace recorded, where the de-duplication window
     * ends for the next command and for a replay, not by stream time (here ahead of it, as a partition time restored from
     * a commit can be).
     */
    @Test
    void housekeepingForgetsIdsByTheLatestCommandTimeTheTablespaceRecorded() throws Exception {
        context.setRecordMetadata("lob.commands", 0, 0);
        processor.process(new Record<>("doc".getBytes(), new byte[] {PUT_ID}, t0));
        context.setCurrentStreamTimeMs(t0 + 2 * WINDOW_MS);
        housekeeping(System.currentTimeMillis());
        assertThat(tablespace.store().commandApplied("put-" + PUT_ID, Long.MIN_VALUE)).as("within the window").isPresent();

        context.setRecordMetadata("lob.commands", 0, 1);
        processor.process(new Record<>("doc".getBytes(), new byte[] {PUT_ID + 1}, t0 + WINDOW_MS + 1));
        housekeeping(System.currentTimeMillis());
        assertThat(tablespace.store().commandApplied("put-" + PUT_ID, Long.MIN_VALUE)).as("past it").isEmpty();
        assertThat(tablespace.store().commandApplied("put-" + (PUT_ID + 1), Long.MIN_VALUE)).isPresent();
    }

    /** A tablespace judged by another window than the task's is warned of at the task's first record, once. */
    @Test
    void aTaskWarnsOnceOfATablespaceJudgedByOtherSettings() throws Exception {
        tablespace.store().recordSetting(LobStreamConfig.DEDUPE_WINDOW_MS.name(), 2 * WINDOW_MS);
        ListAppender<ILoggingEvent> said = new ListAppender<>();
        said.start();
        Logger logger = (Logger) LoggerFactory.getLogger(JudgingSettings.class);
        logger.addAppender(said);
        try {
            chunk(0);
            chunk(1);
        } finally {
            logger.detachAppender(said);
        }
        assertThat(said.list).singleElement().extracting(ILoggingEvent::getFormattedMessage).asString()
                .contains("lob.command.dedupe.window.ms is " + WINDOW_MS + " now", "judged by " + 2 * WINDOW_MS, "from offset 0");
        assertThat(tablespace.store().setting(LobStreamConfig.DEDUPE_WINDOW_MS.name())).hasValue(WINDOW_MS);
        assertThat(tablespace.store().setting(LobStreamConfig.UPLOAD_TIMEOUT_MS.name())).hasValue(TIMEOUT_MS);
    }

    /** The first chunk of an upload, of a LOB of its own, at {@code offset}. */
    private void chunk(int offset) {
        context.setRecordMetadata("lob.commands", 0, offset);
        processor.process(new Record<>(("lob-upload-" + offset).getBytes(), new byte[] {(byte) offset}, t0));
        context.setCurrentStreamTimeMs(t0); // as Kafka Streams keeps it: the highest record time so far
    }

    private void housekeepingTwice(long now) {
        housekeeping(now);
        housekeeping(now + 1);
    }

    /** Runs the last housekeeping the processor scheduled (every half timeout) at {@code now}, by both clocks. */
    private void housekeeping(long now) {
        clockMs.set(now);
        punctuate(now);
    }

    /** Runs the housekeeping at {@code now} by the wall clock, the monotonic clock left where it is. */
    private void punctuate(long now) {
        context.scheduledPunctuators().stream().filter(p -> p.getInterval().equals(Duration.ofMillis(TIMEOUT_MS / 2)))
                .reduce((first, second) -> second).orElseThrow().getPunctuator().punctuate(now);
    }

    private double expired() {
        Counter c = meters.find("lob_uploads_expired").counter();
        return c == null ? 0 : c.count();
    }

    private static LobCommand put(String commandId) {
        return LobCommand.newBuilder().setCommandId(commandId).setLobId("doc").setOp(LobOp.PUT).setOffset(0).setTotalLength(3)
                .setData(ByteBuffer.wrap(new byte[3])).setMetadata(Map.of()).setProducedAt(Instant.now()).build();
    }

    private static LobCommand firstOfTwoChunks(String uploadId, long at) {
        byte[] data = new byte[1000];
        CRC32C crc = new CRC32C();
        crc.update(data);
        return LobCommand.newBuilder().setCommandId(uploadId).setLobId("lob-" + uploadId).setOp(LobOp.PUT).setUploadId(uploadId)
                .setChunkIndex(0).setChunkCount(2).setOffset(0).setTotalLength(2000).setCrc32c((int) crc.getValue())
                .setData(ByteBuffer.wrap(data)).setMetadata(Map.of()).setProducedAt(Instant.ofEpochMilli(at)).build();
    }
}
