package io.lobstream.ingest.writer;

import io.lobstream.avro.LobCommand;
import io.lobstream.avro.LobOp;
import io.lobstream.store.DefaultLobStore;
import io.lobstream.store.LobStoreConfig;
import io.lobstream.store.Source;
import org.apache.kafka.common.utils.Utils;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Map;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/** The applier against a real tablespace, commands as a restart delivers them again. */
class CommandApplierTest {
    private static final int PARTITIONS = 4;
    private static final String TOPIC = "lob.commands-";

    @TempDir
    Path dir;

    private static LobCommand command(String id, LobOp op, long offset, byte[] data) {
        return LobCommand.newBuilder().setCommandId(UUID.randomUUID().toString()).setLobId(id).setOp(op).setOffset(offset)
                .setTotalLength(data.length).setData(ByteBuffer.wrap(data)).setMetadata(Map.of()).setProducedAt(Instant.now()).build();
    }

    private static int partitionOf(String id) {
        return Utils.toPositive(Utils.murmur2(id.getBytes(StandardCharsets.UTF_8))) % PARTITIONS;
    }

    private static byte[] key(String id) {
        return id.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void aRejectedCommandDeliveredAgainAfterARestartIsRejectedAgainThoughLaterCommandsWereApplied() throws Exception {
        CommandApplier applier = new CommandApplier(1 << 20, PARTITIONS);
        String id = "doc";
        int p = partitionOf(id);
        String source = TOPIC + p;
        LobCommand tooFar = command(id, LobOp.WRITE, 100, new byte[10]);
        LobCommand put = command(id, LobOp.PUT, 0, new byte[50]);
        try (DefaultLobStore store = DefaultLobStore.open(dir.resolve("p"), LobStoreConfig.defaults())) {
            assertThat(applier.apply(tooFar, key(id), p, 0, store, new Source(source, 10)))
                    .isInstanceOf(CommandApplier.Rejected.class);
            assertThat(applier.apply(put, key(id), p, 0, store, new Source(source, 11))).isInstanceOf(CommandApplier.Applied.class);
            store.flush();
        }
        // the transaction that held offset 10's dead letter aborted: both come again, the store is past them
        try (DefaultLobStore store = DefaultLobStore.open(dir.resolve("p"), LobStoreConfig.defaults())) {
            assertThat(applier.apply(tooFar, key(id), p, 0, store, new Source(source, 10)))
                    .isEqualTo(new CommandApplier.Rejected("out-of-range", "WRITE at offset 100 of doc, which has 0 bytes"));
            assertThat(applier.apply(put, key(id), p, 0, store, new Source(source, 11))).isInstanceOf(CommandApplier.AlreadyApplied.class);
            assertThat(store.current(id).orElseThrow().byteLength()).isEqualTo(50);
            // rejections are forgotten with the command ids, after the de-duplication window
            assertThat(store.forgetCommandsBefore(Long.MAX_VALUE)).isEqualTo(2);
            assertThat(store.rejection(new Source(source, 10))).isEmpty();
        }
    }

    @Test
    void aRefusedChunkDeliveredAgainIsRefusedAgain() throws Exception {
        CommandApplier applier = new CommandApplier(1 << 20, PARTITIONS);
        String id = "doc";
        int p = partitionOf(id);
        LobCommand stray = LobCommand.newBuilder().setCommandId(UUID.randomUUID().toString()).setLobId(id).setOp(LobOp.PUT)
                .setUploadId("never-begun").setChunkIndex(3).setChunkCount(5).setOffset(15).setTotalLength(25)
                .setData(ByteBuffer.wrap(new byte[5])).setMetadata(Map.of()).setProducedAt(Instant.now()).build();
        CommandApplier.Outcome first;
        try (DefaultLobStore store = DefaultLobStore.open(dir.resolve("p"), LobStoreConfig.defaults())) {
            first = applier.apply(stray, key(id), p, 0, store, new Source(TOPIC + p, 20));
            assertThat(first).isInstanceOfSatisfying(CommandApplier.Rejected.class, r -> assertThat(r.kind()).isEqualTo("upload"));
            store.flush();
        }
        try (DefaultLobStore store = DefaultLobStore.open(dir.resolve("p"), LobStoreConfig.defaults())) {
            assertThat(applier.apply(stray, key(id), p, 0, store, new Source(TOPIC + p, 20))).isEqualTo(first);
        }
    }

    @Test
    void aCommandWithoutAKeyOrOffItsKeysPartitionIsInvalid() throws Exception {
        CommandApplier applier = new CommandApplier(1 << 20, PARTITIONS);
        String id = "doc";
        int p = partitionOf(id);
        try (DefaultLobStore store = DefaultLobStore.open(dir.resolve("p"), LobStoreConfig.defaults())) {
            LobCommand put = command(id, LobOp.PUT, 0, new byte[5]);
            assertThat(applier.apply(put, null, p, 0, store, new Source(TOPIC + p, 0)))
                    .isInstanceOfSatisfying(CommandApplier.Rejected.class, r -> assertThat(r.reason()).contains("no key"));
            int other = (p + 1) % PARTITIONS;
            assertThat(applier.apply(put, key(id), other, 0, store, new Source(TOPIC + other, 0)))
                    .isInstanceOfSatisfying(CommandApplier.Rejected.class, r -> assertThat(r.reason()).contains("belongs to partition " + p));
            assertThat(store.current(id)).isEmpty();
        }
    }
}
