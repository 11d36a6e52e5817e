package io.lobstream.ingest.writer;

import io.lobstream.avro.LobCommand;
import io.lobstream.avro.LobOp;
import io.lobstream.store.LobStoreConfig;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.apache.kafka.streams.processor.api.MockProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.zip.CRC32C;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Where no command came for lob.upload.timeout.ms, the wall clock stands in for the commands' time, and an upload idle
 * that long expires; but only where the log ends right after the last command the task processed. With chunks waiting
 * (the writer behind, its partition's leader away; or fetched, and the task waiting for its reclaims), the upload lives
 * on, as a replay of the partition, going by the commands' times, finds it.
 */
class UploadExpiryTest {
    private static final long TIMEOUT_MS = 5_000;

    @TempDir
    Path dir;

    private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
    private final MockProcessorContext<Object, Object> context = new MockProcessorContext<>();
    /** Where the test's commands partition ends. */
    private final AtomicReference<OptionalLong> end = new AtomicReference<>(OptionalLong.empty());

    @Test
    void anIdleUploadExpiresByTheWallClockOnlyWhenNothingWaitsInKafka() throws Exception {
        long t0 = System.currentTimeMillis(); // the store also holds an upload to the clock it was applied by
        LobCommand firstChunk = firstOfTwoChunks(t0);
        CommandProcessor processor = new CommandProcessor(() -> (topic, bytes) -> firstChunk, new WriterMetrics(meters), 1 << 20, 1,
                new UploadExpiry(TIMEOUT_MS, "lob.commands", partition -> end.get()), 60_000, Duration.ofHours(1),
                new UndoResender(UndoResender.Settings.OFF));
        context.setCurrentSystemTimeMs(t0);
        LobStateStore tablespace = new LobStateStore(dir, LobStoreConfig.defaults(), meters, new TablespaceRegistry(), null);
        tablespace.init(context.getStateStoreContext(), tablespace);
        context.addStateStore(tablespace);
        try {
            processor.init(context);
            context.setRecordMetadata("lob.commands", 0, 0);
            processor.process(new Record<>("up".getBytes(), new byte[] {1}, t0));
            context.setCurrentStreamTimeMs(t0); // as Kafka Streams keeps it: the highest record time so far
            long idle = System.currentTimeMillis() + TIMEOUT_MS + 1;
            MockProcessorContext.CapturedPunctuator housekeeping = housekeeping();

            end.set(OptionalLong.of(3)); // its next chunks wait in Kafka, after the one processed at offset 0
            housekeeping.getPunctuator().punctuate(idle);
            end.set(OptionalLong.empty()); // the broker did not answer
            housekeeping.getPunctuator().punctuate(idle + 1);
            assertThat(expired()).as("expired with chunks waiting, or not known to be none").isZero();
            assertThat(tablespace.store().fsck(false).pagesUploading()).isPositive();

            processor.close();
            processor.init(context); // the task started again: it has processed nothing yet, its tablespace recorded offset 0
            end.set(OptionalLong.of(1)); // nothing after offset 0
            housekeeping().getPunctuator().punctuate(idle + 2);
            assertThat(expired()).isEqualTo(1);
            assertThat(tablespace.store().fsck(false).pagesUploading()).isZero();
        } finally {
            processor.close();
            tablespace.close();
        }
    }

    /** The last housekeeping the processor scheduled (every half timeout). */
    private MockProcessorContext.CapturedPunctuator housekeeping() {
        return context.scheduledPunctuators().stream().filter(p -> p.getInterval().equals(Duration.ofMillis(TIMEOUT_MS / 2)))
                .reduce((first, second) -> second).orElseThrow();
    }

    private double expired() {
        var c = meters.find("lob_uploads_expired").counter();
        return c == null ? 0 : c.count();
    }

    private static LobCommand firstOfTwoChunks(long at) {
        byte[] data = new byte[1000];
        CRC32C crc = new CRC32C();
        crc.update(data);
        return LobCommand.newBuilder().setCommandId("c-1").setLobId("up").setOp(LobOp.PUT).setUploadId("u-1").setChunkIndex(0)
                .setChunkCount(2).setOffset(0).setTotalLength(2000).setCrc32c((int) crc.getValue()).setData(ByteBuffer.wrap(data))
                .setMetadata(Map.of()).setProducedAt(Instant.ofEpochMilli(at)).build();
    }
}
