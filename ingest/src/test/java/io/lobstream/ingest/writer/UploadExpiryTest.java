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
 * that long expires; but only while nothing waits in Kafka for the task. With chunks waiting (the writer behind, its
 * partition's leader away), the upload lives on, as a replay of the partition, going by the commands' times, finds it.
 */
class UploadExpiryTest {
    private static final long TIMEOUT_MS = 5_000;

    @TempDir
    Path dir;

    private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
    private final MockProcessorContext<Object, Object> context = new MockProcessorContext<>();
    private final AtomicReference<OptionalLong> lag = new AtomicReference<>(OptionalLong.empty());

    @Test
    void anIdleUploadExpiresByTheWallClockOnlyWhenNothingWaitsInKafka() throws Exception {
        long t0 = System.currentTimeMillis(); // the store also holds an upload to the clock it was applied by
        LobCommand firstChunk = firstOfTwoChunks(t0);
        CommandProcessor processor = new CommandProcessor(() -> (topic, bytes) -> firstChunk, new WriterMetrics(meters), 1 << 20, 1,
                TIMEOUT_MS, 60_000, Duration.ofHours(1), new UndoResender(UndoResender.Settings.OFF), partition -> lag.get());
        context.setCurrentSystemTimeMs(t0);
        LobStateStore tablespace = new LobStateStore(dir, LobStoreConfig.defaults(), meters, new TablespaceRegistry(), null);
        tablespace.init(context.getStateStoreContext(), tablespace);
        context.addStateStore(tablespace);
        try {
            processor.init(context);
            context.setRecordMetadata("lob.commands", 0, 0);
            processor.process(new Record<>("up".getBytes(), new byte[] {1}, t0));
            context.setCurrentStreamTimeMs(t0); // as Kafka Streams keeps it: the highest record time so far
            MockProcessorContext.CapturedPunctuator housekeeping = context.scheduledPunctuators().get(0);
            long idle = System.currentTimeMillis() + TIMEOUT_MS + 1;

            lag.set(OptionalLong.of(3)); // its next chunks wait in Kafka
            housekeeping.getPunctuator().punctuate(idle);
            lag.set(OptionalLong.empty()); // not known: no fetch of the partition yet
            housekeeping.getPunctuator().punctuate(idle + 1);
            assertThat(expired()).as("expired with chunks waiting, or not known to be none").isZero();
            assertThat(tablespace.store().fsck(false).pagesUploading()).isPositive();

            lag.set(OptionalLong.of(0));
            housekeeping.getPunctuator().punctuate(idle + 2);
            assertThat(expired()).isEqualTo(1);
            assertThat(tablespace.store().fsck(false).pagesUploading()).isZero();
        } finally {
            processor.close();
            tablespace.close();
        }
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
