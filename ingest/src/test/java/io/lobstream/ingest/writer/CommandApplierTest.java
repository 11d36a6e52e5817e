package io.lobstream.ingest.writer;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.lobstream.avro.LobCommand;
import io.lobstream.avro.LobOp;
import io.lobstream.schema.CommandFingerprint;
import io.lobstream.schema.DeadLetterTopic;
import io.lobstream.store.LobReadHandle;
import io.lobstream.store.LobStore;
import io.lobstream.store.LobStoreConfig;
import io.lobstream.store.Source;
import io.lobstream.store.index.Attributes;
import io.lobstream.store.index.Rejection;
import io.lobstream.store.index.VersionEntry;
import org.apache.kafka.common.utils.Utils;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The applier against a real tablespace, commands as a restart delivers them again. */
class CommandApplierTest {
    private static final int PARTITIONS = 4;
    private static final String TOPIC = "lob.commands-";
    private static final long WINDOW_MS = 3_600_000;
    /** The uploads' tests: a LOB, their timeout, and a time of the commands to start from. */
    private static final String UPLOADED = "doc";
    private static final long UPLOAD_TIMEOUT_MS = 60_000;
    private static final long EPOCH = 1_700_000_000_000L;

    @TempDir
    Path dir;

    /** Keeps nothing between commands: the store is the state. */
    private final CommandApplier applier = new CommandApplier(1 << 20, PARTITIONS, WINDOW_MS);

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
        String id = "doc";
        int p = partitionOf(id);
        String source = TOPIC + p;
        LobCommand tooFar = command(id, LobOp.WRITE, 100, new byte[10]);
        LobCommand put = command(id, LobOp.PUT, 0, new byte[50]);
        try (LobStore store = LobStore.open(dir.resolve("p"), LobStoreConfig.defaults())) {
            assertThat(applier.apply(tooFar, key(id), p, 0, store, new Source(source, 10)))
                    .isInstanceOf(CommandApplier.Rejected.class);
            assertThat(applier.apply(put, key(id), p, 0, store, new Source(source, 11))).isInstanceOf(CommandApplier.Applied.class);
            store.flush();
        }
        // the transaction that held offset 10's dead letter aborted: both come again, the store is past them
        try (LobStore store = LobStore.open(dir.resolve("p"), LobStoreConfig.defaults())) {
            assertThat(applier.apply(tooFar, key(id), p, 0, store, new Source(source, 10)))
                    .isEqualTo(new CommandApplier.Rejected("out-of-range", "WRITE at offset 100 of doc, which has 0 bytes"));
            assertThat(applier.apply(put, key(id), p, 0, store, new Source(source, 11))).isInstanceOf(CommandApplier.AlreadyApplied.class);
            assertThat(store.current(id).orElseThrow().byteLength()).isEqualTo(50);
            // rejections are forgotten with the command ids, after the de-duplication window
            assertThat(store.forgetCommandsBefore(Long.MAX_VALUE)).isEqualTo(2);
            assertThat(store.rejection(new Source(source, 10))).isEmpty();
        }
    }

    /**
     * A command refused by the checks that need no store, then read again after a crash (its dead letter aborted) by a
     * writer that would take it (here a raised lob.value.max.bytes; as well a registry restored or a writer that knows a
     * new op): refused again, not skipped as applied with no dead letter. And the rejection recorded again does not
     * take the applied offset back below a later command's.
     */
    @Test
    void aCommandRefusedBeforeACrashIsRefusedAgainByAWriterThatWouldTakeIt() throws Exception {
        String id = "doc";
        int p = partitionOf(id);
        String source = TOPIC + p;
        LobCommand tooLarge = command(id, LobOp.PUT, 0, new byte[100]);
        LobCommand small = command(id, LobOp.PUT, 0, new byte[10]);
        CommandApplier strict = new CommandApplier(50, PARTITIONS, WINDOW_MS);
        CommandApplier.Outcome refused;
        try (LobStore store = LobStore.open(dir.resolve("p"), LobStoreConfig.defaults())) {
            refused = strict.apply(tooLarge, key(id), p, 0, store, new Source(source, 5));
            assertThat(refused).isInstanceOf(CommandApplier.Rejected.class);
            assertThat(strict.apply(small, key(id), p, 0, store, new Source(source, 6))).isInstanceOf(CommandApplier.Applied.class);
            store.flush();
            // read again with the limit the writer had: refused again, and the offset stays at 6
            assertThat(strict.apply(tooLarge, key(id), p, 0, store, new Source(source, 5))).isEqualTo(refused);
            assertThat(store.appliedOffset(source)).isEqualTo(6);
        }
        try (LobStore store = LobStore.open(dir.resolve("p"), LobStoreConfig.defaults())) {
            assertThat(applier.apply(tooLarge, key(id), p, 0, store, new Source(source, 5))).isEqualTo(refused);
            assertThat(applier.apply(small, key(id), p, 0, store, new Source(source, 6))).isInstanceOf(CommandApplier.AlreadyApplied.class);
            assertThat(store.current(id).orElseThrow().byteLength()).isEqualTo(10);
            assertThat(store.appliedOffset(source)).isEqualTo(6);
        }
    }

    /**
     * The other way round: a command applied before a crash, read again by a writer that would refuse it (a lower limit):
     * applied it stays, not a dead letter (which a redrive would apply a second time).
     */
    @Test
    void aCommandAppliedBeforeACrashStaysAppliedForAWriterThatWouldRefuseIt() throws Exception {
        String id = "doc";
        int p = partitionOf(id);
        String source = TOPIC + p;
        LobCommand put = command(id, LobOp.PUT, 0, new byte[100]);
        try (LobStore store = LobStore.open(dir.resolve("p"), LobStoreConfig.defaults())) {
            assertThat(applier.apply(put, key(id), p, 0, store, new Source(source, 5))).isInstanceOf(CommandApplier.Applied.class);
            store.flush();
            CommandApplier strict = new CommandApplier(50, PARTITIONS, WINDOW_MS);
            assertThat(strict.apply(put, key(id), p, 0, store, new Source(source, 5))).isInstanceOf(CommandApplier.AlreadyApplied.class);
            assertThat(store.rejection(new Source(source, 5))).isEmpty();
        }
    }

    /**
     * A command read again after a restart gives the undo record of the version it superseded to be sent again, if
     * purge has not reclaimed it: its own, not another command's of the same LOB or of another.
     */
    @Test
    void aCommandAppliedBeforeARestartGivesTheVersionItSuperseded() throws Exception {
        String id = "doc";
        int p = partitionOf(id);
        String other = "doc-1";
        for (int n = 2; partitionOf(other) != p; n++) {
            other = "doc-" + n; // another LOB of the same partition
        }
        String source = TOPIC + p;
        try (LobStore store = LobStore.open(dir.resolve("p"), LobStoreConfig.defaults())) {
            LobCommand first = command(id, LobOp.PUT, 0, new byte[100]);
            LobCommand second = command(id, LobOp.PUT, 0, new byte[200]);
            LobCommand third = command(other, LobOp.PUT, 0, new byte[300]);
            assertThat(applier.apply(first, key(id), p, 0, store, new Source(source, 1))).isInstanceOf(CommandApplier.Applied.class);
            assertThat(applier.apply(second, key(id), p, 0, store, new Source(source, 2))).isInstanceOf(CommandApplier.Applied.class);
            assertThat(applier.apply(third, key(other), p, 0, store, new Source(source, 3))).isInstanceOf(CommandApplier.Applied.class);
            store.flush();
            CommandApplier.Outcome again = applier.apply(second, key(id), p, 0, store, new Source(source, 2));
            assertThat(again).isInstanceOf(CommandApplier.AlreadyApplied.class);
            assertThat(((CommandApplier.AlreadyApplied) again).undoToReemit()).singleElement()
                    .satisfies(e -> assertThat(e.lobId()).isEqualTo(id))
                    .satisfies(e -> assertThat(e.byteLength()).isEqualTo(100));
            for (long offset : new long[]{1, 3}) {
                LobCommand cmd = offset == 1 ? first : third;
                again = applier.apply(cmd, key(cmd.getLobId()), p, 0, store, new Source(source, offset));
                assertThat(((CommandApplier.AlreadyApplied) again).undoToReemit()).as("offset %d superseded nothing", offset).isEmpty();
            }
        }
    }

    /** A command sent twice is applied once, and its second record still moves the applied offset (no catch-up at a restart). */
    @Test
    void aDuplicateIsSkippedAndItsOffsetRecorded() throws Exception {
        String id = "doc";
        int p = partitionOf(id);
        LobCommand put = command(id, LobOp.PUT, 0, new byte[50]);
        try (LobStore store = LobStore.open(dir.resolve("p"), LobStoreConfig.defaults())) {
            assertThat(applier.apply(put, key(id), p, 0, store, new Source(TOPIC + p, 7))).isInstanceOf(CommandApplier.Applied.class);
            assertThat(applier.apply(put, key(id), p, 0, store, new Source(TOPIC + p, 9))).isInstanceOf(CommandApplier.Duplicate.class);
            assertThat(store.appliedOffset(TOPIC + p)).isEqualTo(9);
            // a skipped record read again after a crash (one that did not decode, at 8) does not take the offset back
            store.recordSkipped(new Source(TOPIC + p, 8));
            assertThat(store.appliedOffset(TOPIC + p)).isEqualTo(9);
            // nor does one that fails the checks, and its own offset counts when it is the latest
            assertThat(applier.apply(put, null, p, 0, store, new Source(TOPIC + p, 10))).isInstanceOf(CommandApplier.Rejected.class);
            assertThat(store.appliedOffset(TOPIC + p)).isEqualTo(10);
            assertThat(store.stats().historyLength()).isZero();
        }
    }

    /**
     * The de-duplication window is measured in the commands' time (record timestamps), not by when the
     * writer forgot ids: a copy rebuilt by replay, which forgets nothing, takes or skips each re-sent
     * command as the writer did.
     */
    @Test
    void aCommandIdComesBackAsADuplicateWithinTheWindowInTheCommandsTimeAndAppliesAfterIt() throws Exception {
        String id = "doc";
        int p = partitionOf(id);
        LobCommand put = command(id, LobOp.PUT, 0, new byte[50]);
        long t = 1_700_000_000_000L;
        try (LobStore store = LobStore.open(dir.resolve("p"), LobStoreConfig.defaults())) {
            assertThat(applier.apply(put, key(id), p, t, store, new Source(TOPIC + p, 1, t))).isInstanceOf(CommandApplier.Applied.class);
            long within = t + WINDOW_MS;
            assertThat(applier.apply(put, key(id), p, within, store, new Source(TOPIC + p, 2, within)))
                    .isInstanceOf(CommandApplier.Duplicate.class);
            long after = t + WINDOW_MS + 1;
            assertThat(applier.apply(put, key(id), p, after, store, new Source(TOPIC + p, 3, after)))
                    .isInstanceOf(CommandApplier.Applied.class);
            assertThat(store.stats().historyLength()).isEqualTo(1);
        }
    }

    /**
     * Times that go back (a leader change to a broker whose clock is behind, producers' clocks on a CreateTime topic): the
     * window ends at the latest command time of the partition, not at each command's own, so the writer, which forgets ids
     * by that time, and a replay, which forgets none, judge a command sent again alike. Before, a replay found an id the
     * writer had forgotten: one skipped the command as a duplicate and the other applied it again.
     */
    @Test
    void theWindowEndsAtThePartitionsLatestCommandTimeSoAWriterThatForgetsAndAReplayJudgeAlike() throws Exception {
        String id = "doc";
        int p = partitionOf(id);
        String other = IntStream.range(0, 100).mapToObj(i -> "other-" + i).filter(o -> partitionOf(o) == p).findFirst().orElseThrow();
        LobCommand doc = command(id, LobOp.PUT, 0, new byte[50]);
        LobCommand later = command(other, LobOp.PUT, 0, new byte[50]);
        long t = 1_700_000_000_000L;
        // doc; a command two windows later; doc again, and the other again, sent back in time by half a window; doc once
        // more: its last id was stamped with the commands' time then (two windows on), not its own, so it is still remembered
        List<LobCommand> commands = List.of(doc, later, doc, later, doc);
        long[] times = {t, t + 2 * WINDOW_MS, t + WINDOW_MS / 2, t + WINDOW_MS / 2, t + WINDOW_MS / 2 + 1};
        List<Class<?>> writer = new ArrayList<>();
        List<Class<?>> replay = new ArrayList<>();
        try (LobStore writing = LobStore.open(dir.resolve("writer"), LobStoreConfig.defaults());
             LobStore replaying = LobStore.open(dir.resolve("replay"), LobStoreConfig.defaults())) {
            for (int i = 0; i < commands.size(); i++) {
                LobCommand cmd = commands.get(i);
                Source source = new Source(TOPIC + p, i, times[i]);
                writer.add(applier.apply(cmd, key(cmd.getLobId()), p, times[i], writing, source).getClass());
                writing.forgetCommandsBefore(writing.latestTime(TOPIC + p) - WINDOW_MS); // its housekeeping, after each
                replay.add(applier.apply(cmd, key(cmd.getLobId()), p, times[i], replaying, source).getClass());
            }
            assertThat(writing.latestTime(TOPIC + p)).isEqualTo(t + 2 * WINDOW_MS);
        }
        assertThat(writer).isEqualTo(replay).containsExactly(CommandApplier.Applied.class, CommandApplier.Applied.class,
                CommandApplier.Applied.class, CommandApplier.Duplicate.class, CommandApplier.Duplicate.class);
    }

    /**
     * An upload's next chunk whose time went back behind a later command: the writer, whose housekeeping expired the
     * upload by the partition's latest time, and a replay, which expires uploads only before a chunk, both judge the chunk
     * by that latest time ({@link CommandTime#latest}). By the chunk's own, the replay found the upload and published it.
     */
    @Test
    void aChunkWhoseTimeWentBackFindsItsUploadExpiredByTheWriterAndByAReplayAlike() throws Exception {
        String id = UPLOADED;
        int p = partitionOf(id);
        String source = TOPIC + p;
        long timeout = UPLOAD_TIMEOUT_MS;
        byte[] value = new byte[20];
        long t = EPOCH;
        LobCommand later = command(id, LobOp.PUT, 0, new byte[5]); // the same LOB: applied whether the upload is there or not
        try (LobStore writing = LobStore.open(dir.resolve("writer"), LobStoreConfig.defaults());
             LobStore replaying = LobStore.open(dir.resolve("replay"), LobStoreConfig.defaults())) {
            for (LobStore store : List.of(writing, replaying)) {
                applier.apply(chunk(id, "u", 0, value, null), key(id), p, t, store, new Source(source, 0, t));
                applier.apply(later, key(id), p, t + timeout + 1, store, new Source(source, 1, t + timeout + 1));
            }
            assertThat(writing.expireUploads(writing.latestTime(source), Long.MAX_VALUE, timeout)).as("housekeeping").containsExactly("u");
            for (LobStore store : List.of(writing, replaying)) { // before a chunk, as CommandProcessor and PartitionReplayer do
                UploadExpiry.expireBeforeUploadCommand(store, source, t + 1, timeout);
                assertThat(applier.apply(chunk(id, "u", 1, value, (int) crc(value)), key(id), p, t + 1, store, new Source(source, 2, t + 1)))
                        .isInstanceOf(CommandApplier.Rejected.class);
                assertThat(store.current(id).orElseThrow().byteLength()).isEqualTo(5);
            }
        }
    }

    /**
     * A chunk whose time went back behind the partition's latest is idle from that latest time, by which uploads expire,
     * not from its own: else its upload would lose the difference from its timeout, and expire however soon the next chunk
     * came.
     */
    @Test
    void aChunkWhoseTimeWentBackKeepsItsUploadForTheWholeTimeout() throws Exception {
        String source = TOPIC + partitionOf(UPLOADED);
        long t = EPOCH;
        long timeout = UPLOAD_TIMEOUT_MS;
        byte[] value = new byte[20];
        String id = UPLOADED;
        int p = partitionOf(id);
        try (LobStore store = LobStore.open(dir.resolve("p"), LobStoreConfig.defaults())) {
            String other = IntStream.range(0, 100).mapToObj(i -> "other-" + i).filter(o -> partitionOf(o) == p).findFirst().orElseThrow();
            applier.apply(command(other, LobOp.PUT, 0, new byte[5]), key(other), p, t + timeout, store, new Source(source, 0, t + timeout));
            applier.apply(chunk(id, "u", 0, value, null), key(id), p, t, store, new Source(source, 1, t)); // went back
            long next = t + timeout + timeout / 2; // half the timeout after the latest time, one and a half after its own
            assertThat(UploadExpiry.expireBeforeUploadCommand(store, source, next, timeout)).isEmpty();
            assertThat(applier.apply(chunk(id, "u", 1, value, (int) crc(value)), key(id), p, next, store, new Source(source, 2, next)))
                    .isInstanceOf(CommandApplier.Applied.class);
        }
    }

    /**
     * An upload sent again with the same ids (an idempotent retry): a chunk of the published upload is a duplicate; an
     * upload whose checksum failed starts again from its first chunk. Each chunk's commandId used to be remembered, so
     * the retry's chunks were duplicates up to where the first try got and the rest dead-lettered as an unknown upload's,
     * for the whole de-duplication window.
     */
    @Test
    void anUploadSentAgainWithItsIdsIsADuplicateOncePublishedAndStartsAgainAfterItFailed() throws Exception {
        String id = "doc";
        int p = partitionOf(id);
        byte[] value = new byte[20];
        java.util.Arrays.fill(value, (byte) 7);
        java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
        crc.update(value);
        long offset = 0;
        try (LobStore store = LobStore.open(dir.resolve("p"), LobStoreConfig.defaults())) {
            for (int i = 0; i < 2; i++) { // the first try: its checksum does not match
                applier.apply(chunk(id, "u1", i, value, i == 1 ? 12345 : null), key(id), p, 0, store, new Source(TOPIC + p, offset++));
            }
            assertThat(store.current(id)).isEmpty();
            for (int i = 0; i < 2; i++) { // the retry, same ids, the right checksum
                assertThat(applier.apply(chunk(id, "u1", i, value, i == 1 ? (int) crc.getValue() : null), key(id), p, 0, store,
                        new Source(TOPIC + p, offset++))).isNotInstanceOf(CommandApplier.Rejected.class);
            }
            assertThat(store.current(id).orElseThrow().byteLength()).isEqualTo(20);
            long version = store.current(id).orElseThrow().version();
            for (int i = 0; i < 2; i++) { // and once more, after it was published
                assertThat(applier.apply(chunk(id, "u1", i, value, i == 1 ? (int) crc.getValue() : null), key(id), p, 0, store,
                        new Source(TOPIC + p, offset++))).isInstanceOf(CommandApplier.Duplicate.class);
            }
            assertThat(store.current(id).orElseThrow().version()).isEqualTo(version);
            // the same value sent again in one chunk (another lob.chunk.size): the same write, not a conflict
            LobCommand whole = LobCommand.newBuilder().setCommandId("u1/0").setLobId(id).setOp(LobOp.PUT).setUploadId("u1")
                    .setChunkIndex(0).setChunkCount(1).setOffset(0).setTotalLength(value.length).setCrc32c((int) crc.getValue())
                    .setData(ByteBuffer.wrap(value)).setMetadata(Map.of()).setProducedAt(Instant.now()).build();
            assertThat(applier.apply(whole, key(id), p, 0, store, new Source(TOPIC + p, offset++)))
                    .isInstanceOf(CommandApplier.Duplicate.class);
            // a chunk the release before applied, remembered by its commandId alone: still a duplicate after an upgrade
            store.recordSkipped(new Source(TOPIC + p, offset++, "u9/0"));
            assertThat(applier.apply(chunk(id, "u9", 0, value, null), key(id), p, 0, store, new Source(TOPIC + p, offset++)))
                    .isInstanceOf(CommandApplier.Duplicate.class);
            // a commandId that reads like an upload's mark is not taken for it
            LobCommand named = command(id, LobOp.PUT, 0, new byte[3]);
            named.setCommandId(CommandApplier.UPLOAD_FINISHED + "u2");
            assertThat(applier.apply(named, key(id), p, 0, store, new Source(TOPIC + p, offset++))).isInstanceOf(CommandApplier.Applied.class);
            assertThat(applier.apply(chunk(id, "u2", 0, new byte[3], (int) crc(new byte[3])), key(id), p, 0, store,
                    new Source(TOPIC + p, offset))).isInstanceOf(CommandApplier.Applied.class);
        }
    }

    /**
     * An id applied before, sent again as another write (an idempotency key reused): dead-lettered as such, where it was
     * taken for the first sent again, and dropped with no word. The same command sent again is still a duplicate.
     */
    @Test
    void anIdSentAgainWithOtherContentIsAConflictNotADuplicate() throws Exception {
        String id = "doc";
        int p = partitionOf(id);
        LobCommand first = command(id, LobOp.APPEND, 0, new byte[5]);
        first.setCrc32c((int) crc(new byte[5]));
        LobCommand reused = command(id, LobOp.APPEND, 0, new byte[]{1, 2, 3, 4, 5});
        reused.setCommandId(first.getCommandId());
        reused.setCrc32c((int) crc(new byte[]{1, 2, 3, 4, 5}));
        try (LobStore store = LobStore.open(dir.resolve("p"), LobStoreConfig.defaults())) {
            assertThat(applier.apply(first, key(id), p, 0, store, new Source(TOPIC + p, 0))).isInstanceOf(CommandApplier.Applied.class);
            assertThat(applier.apply(first, key(id), p, 0, store, new Source(TOPIC + p, 1))).isInstanceOf(CommandApplier.Duplicate.class);
            assertThat(applier.apply(reused, key(id), p, 0, store, new Source(TOPIC + p, 2)))
                    .isInstanceOfSatisfying(CommandApplier.Rejected.class, r -> assertThat(r.kind()).isEqualTo("id-conflict"));
            assertThat(store.current(id).orElseThrow().byteLength()).isEqualTo(5);
            assertThat(store.rejection(new Source(TOPIC + p, 2))).isPresent(); // refused again if read again after a crash
        }
    }

    /**
     * The four pieces of an append, each naming the one before: the first applied, the second lost (expired in its
     * producer's buffer), the next two delivered. Neither is applied where the lost one belonged. After a restart, the
     * write sent again with its ids (its idempotency key): the first is a duplicate, the other three apply in order.
     */
    @Test
    void aPieceWhosePieceBeforeWasNotAppliedIsRefusedUntilThatOneIs() throws Exception {
        String id = "doc";
        int p = partitionOf(id);
        LobCommand[] pieces = new LobCommand[4];
        for (int i = 0; i < pieces.length; i++) {
            pieces[i] = command(id, LobOp.APPEND, 0, new byte[]{(byte) (i + 1)});
            pieces[i].setAfter(i == 0 ? null : pieces[i - 1].getCommandId());
        }
        long offset = 0;
        try (LobStore store = LobStore.open(dir.resolve("p"), LobStoreConfig.defaults())) {
            assertThat(applier.apply(command(id, LobOp.PUT, 0, new byte[]{0}), key(id), p, 0, store, new Source(TOPIC + p, offset++)))
                    .isInstanceOf(CommandApplier.Applied.class);
            assertThat(applier.apply(pieces[0], key(id), p, 0, store, new Source(TOPIC + p, offset++)))
                    .isInstanceOf(CommandApplier.Applied.class);
            for (LobCommand after : new LobCommand[]{pieces[2], pieces[3]}) {
                assertThat(applier.apply(after, key(id), p, 0, store, new Source(TOPIC + p, offset++)))
                        .isInstanceOfSatisfying(CommandApplier.Rejected.class, r -> assertThat(r.kind()).isEqualTo("out-of-order"));
            }
        }
        try (LobStore store = LobStore.open(dir.resolve("p"), LobStoreConfig.defaults())) {
            assertThat(applier.apply(pieces[0], key(id), p, 0, store, new Source(TOPIC + p, offset++)))
                    .isInstanceOf(CommandApplier.Duplicate.class);
            for (int i = 1; i < pieces.length; i++) {
                assertThat(applier.apply(pieces[i], key(id), p, 0, store, new Source(TOPIC + p, offset++)))
                        .isInstanceOf(CommandApplier.Applied.class);
            }
            try (LobReadHandle h = store.open(id).orElseThrow(); InputStream in = h.stream(0, h.length())) {
                assertThat(in.readAllBytes()).containsExactly(0, 1, 2, 3, 4);
            }
            LobCommand put = command(id, LobOp.PUT, 0, new byte[]{5});
            put.setAfter(pieces[3].getCommandId());
            assertThat(applier.apply(put, key(id), p, 0, store, new Source(TOPIC + p, offset)))
                    .isInstanceOfSatisfying(CommandApplier.Rejected.class, r -> assertThat(r.reason()).contains("only a WRITE or APPEND"));
        }
    }

    /**
     * An append of three pieces under an idempotency key: the first applied, the rest lost. Run again under the same
     * key with other bytes, its first piece is an id-conflict, and the second, whose id was never applied, must not
     * follow the first try's piece: what is applied stays a prefix of one write, never the first try's bytes spliced
     * with the second's. The first write run again as it was then goes on where it stopped.
     */
    @Test
    void aRetryWithOtherBytesUnderTheSameKeyDoesNotGoOnAfterTheFirstTrysPieces() throws Exception {
        LobCommand[] first = pieces(DOC, PIECE_IDS, new byte[]{1, 2, 3});
        LobCommand[] other = pieces(DOC, PIECE_IDS, new byte[]{7, 8, 9});
        try (LobStore store = LobStore.open(dir.resolve("p"), LobStoreConfig.defaults())) {
            DocLog log = new DocLog(store);
            assertThat(log.apply(command(DOC, LobOp.PUT, 0, new byte[]{0}))).isInstanceOf(CommandApplier.Applied.class);
            assertThat(log.apply(first[0])).isInstanceOf(CommandApplier.Applied.class);
            for (int i = 0; i < other.length; i++) {
                String kind = i < 2 ? "id-conflict" : "out-of-order"; // the third follows the second, never applied
                assertThat(log.apply(other[i])).isInstanceOfSatisfying(CommandApplier.Rejected.class, r -> assertThat(r.kind()).isEqualTo(kind));
            }
            assertThat(log.apply(first[0])).isInstanceOf(CommandApplier.Duplicate.class);
            for (int i = 1; i < first.length; i++) {
                assertThat(log.apply(first[i])).isInstanceOf(CommandApplier.Applied.class);
            }
            assertThat(log.value()).containsExactly(0, 1, 2, 3);
        }
    }

    /**
     * A retry across the upgrade that brought afterFingerprint: the first run, by an older client, applied two pieces
     * without it; the newer client's retry finds them duplicates (their marks taken to the fingerprints it names) and
     * goes on with the third.
     */
    @Test
    void aRetryByANewerClientGoesOnAfterPiecesAnOlderOneApplied() throws Exception {
        LobCommand[] newer = pieces(DOC, PIECE_IDS, new byte[]{1, 2, 3});
        LobCommand[] older = pieces(DOC, PIECE_IDS, new byte[]{1, 2, 3});
        for (LobCommand piece : older) {
            piece.setAfterFingerprint(null);
        }
        try (LobStore store = LobStore.open(dir.resolve("p"), LobStoreConfig.defaults())) {
            DocLog log = new DocLog(store);
            assertThat(log.apply(command(DOC, LobOp.PUT, 0, new byte[]{0}))).isInstanceOf(CommandApplier.Applied.class);
            for (int i = 0; i < 2; i++) {
                assertThat(log.apply(older[i])).isInstanceOf(CommandApplier.Applied.class);
            }
            for (int i = 0; i < 2; i++) {
                assertThat(log.apply(newer[i])).isInstanceOf(CommandApplier.Duplicate.class);
            }
            assertThat(log.apply(newer[2])).isInstanceOf(CommandApplier.Applied.class);
            assertThat(log.value()).containsExactly(0, 1, 2, 3);
        }
    }

    private static final String DOC = "doc";
    private static final String[] PIECE_IDS = {"key/0", "key/1", "key/2"};

    /** Commands of {@link #DOC} read from its partition at offsets one after another, applied to {@code store}. */
    private final class DocLog {
        private final LobStore store;
        private final int partition = partitionOf(DOC);
        private long offset;

        DocLog(LobStore store) {
            this.store = store;
        }

        CommandApplier.Outcome apply(LobCommand cmd) throws java.io.IOException {
            return applier.apply(cmd, key(DOC), partition, 0, store, new Source(TOPIC + partition, offset++));
        }

        byte[] value() throws java.io.IOException {
            try (LobReadHandle h = store.open(DOC).orElseThrow(); InputStream in = h.stream(0, h.length())) {
                return in.readAllBytes();
            }
        }
    }

    /** One-byte APPEND pieces with the given ids, chained as {@code LobClient} chains them (after, afterFingerprint). */
    private static LobCommand[] pieces(String id, String[] ids, byte[] bytes) {
        LobCommand[] pieces = new LobCommand[ids.length];
        for (int i = 0; i < ids.length; i++) {
            pieces[i] = command(id, LobOp.APPEND, 0, new byte[]{bytes[i]});
            pieces[i].setCommandId(ids[i]);
            pieces[i].setCrc32c((int) crc(new byte[]{bytes[i]}));
            if (i > 0) {
                pieces[i].setAfter(ids[i - 1]);
                pieces[i].setAfterFingerprint(CommandFingerprint.of(pieces[i - 1]));
            }
        }
        return pieces;
    }

    /**
     * The piece before is looked up as a duplicate is: within the window, which ends at the partition's latest command
     * time, whatever the piece's own time (it may have gone back).
     */
    @Test
    void aPieceWhosePieceBeforeWasAppliedLongerThanTheWindowBeforeIsRefused() throws Exception {
        String id = "doc";
        int p = partitionOf(id);
        LobCommand first = command(id, LobOp.APPEND, 0, new byte[]{1});
        LobCommand inTime = command(id, LobOp.APPEND, 0, new byte[]{2});
        inTime.setAfter(first.getCommandId());
        LobCommand late = command(id, LobOp.APPEND, 0, new byte[]{3});
        late.setAfter(first.getCommandId());
        LobCommand wentBack = command(id, LobOp.APPEND, 0, new byte[]{4});
        wentBack.setAfter(first.getCommandId());
        try (LobStore store = LobStore.open(dir.resolve("p"), LobStoreConfig.defaults())) {
            long t = 1_000_000;
            assertThat(applier.apply(first, key(id), p, t, store, new Source(TOPIC + p, 0, t))).isInstanceOf(CommandApplier.Applied.class);
            assertThat(applier.apply(inTime, key(id), p, t + WINDOW_MS, store, new Source(TOPIC + p, 1, t + WINDOW_MS)))
                    .isInstanceOf(CommandApplier.Applied.class);
            assertThat(applier.apply(late, key(id), p, t + WINDOW_MS + 1, store, new Source(TOPIC + p, 2, t + WINDOW_MS + 1)))
                    .isInstanceOfSatisfying(CommandApplier.Rejected.class, r -> assertThat(r.kind()).isEqualTo("out-of-order"));
            assertThat(applier.apply(wentBack, key(id), p, t + 1, store, new Source(TOPIC + p, 3, t + 1)))
                    .isInstanceOfSatisfying(CommandApplier.Rejected.class, r -> assertThat(r.kind()).isEqualTo("out-of-order"));
        }
    }

    /** Chunk {@code index} of two of upload {@code upload}, each 10 bytes of {@code value} (all of it, in an upload of one). */
    private static LobCommand chunk(String id, String upload, int index, byte[] value, Integer crc32c) {
        int count = value.length > 10 ? 2 : 1;
        int length = count == 1 ? value.length : 10;
        return LobCommand.newBuilder().setCommandId(upload + "/" + index).setLobId(id).setOp(LobOp.PUT).setUploadId(upload)
                .setChunkIndex(index).setChunkCount(count).setOffset(index * 10L).setTotalLength(value.length).setCrc32c(crc32c)
                .setData(ByteBuffer.wrap(value, index * 10, length)).setMetadata(Map.of()).setProducedAt(Instant.now()).build();
    }

    private static long crc(byte[] data) {
        java.util.zip.CRC32C c = new java.util.zip.CRC32C();
        c.update(data);
        return c.getValue();
    }

    @Test
    void aRefusedChunkDeliveredAgainIsRefusedAgain() throws Exception {
        String id = "doc";
        int p = partitionOf(id);
        LobCommand stray = LobCommand.newBuilder().setCommandId(UUID.randomUUID().toString()).setLobId(id).setOp(LobOp.PUT)
                .setUploadId("never-begun").setChunkIndex(3).setChunkCount(5).setOffset(15).setTotalLength(25)
                .setData(ByteBuffer.wrap(new byte[5])).setMetadata(Map.of()).setProducedAt(Instant.now()).build();
        CommandApplier.Outcome first;
        try (LobStore store = LobStore.open(dir.resolve("p"), LobStoreConfig.defaults())) {
            first = applier.apply(stray, key(id), p, 0, store, new Source(TOPIC + p, 20));
            assertThat(first).isInstanceOfSatisfying(CommandApplier.Rejected.class, r -> assertThat(r.kind()).isEqualTo("upload"));
            store.flush();
        }
        try (LobStore store = LobStore.open(dir.resolve("p"), LobStoreConfig.defaults())) {
            assertThat(applier.apply(stray, key(id), p, 0, store, new Source(TOPIC + p, 20))).isEqualTo(first);
        }
    }

    /** An upload given up by its producer (its input failed) frees its pages at once, not after lob.upload.timeout.ms. */
    @Test
    void anAbortDropsItsUploadAndFreesItsPages() throws Exception {
        String id = "doc";
        int p = partitionOf(id);
        try (LobStore store = LobStore.open(dir.resolve("p"), LobStoreConfig.defaults())) {
            assertThat(applier.apply(chunk(id, "u", 0, new byte[20], null), key(id), p, 0, store, new Source(TOPIC + p, 0)))
                    .isInstanceOf(CommandApplier.ChunkAccepted.class);
            assertThat(store.stats().pagesUploading()).isPositive();
            LobCommand abort = command(id, LobOp.ABORT, 0, new byte[0]);
            abort.setUploadId("u");
            LobCommand otherLobs = command("other", LobOp.ABORT, 0, new byte[0]);
            otherLobs.setUploadId("u");
            assertThat(applier.apply(otherLobs, key("other"), partitionOf("other"), 0, store, new Source("elsewhere-0", 0)))
                    .as("another LOB's: not its upload").isInstanceOf(CommandApplier.Applied.class);
            assertThat(store.uploadsInProgress()).isEqualTo(1);

            assertThat(applier.apply(abort, key(id), p, 0, store, new Source(TOPIC + p, 1))).isInstanceOf(CommandApplier.Applied.class);
            assertThat(store.uploadsInProgress()).isZero();
            assertThat(store.stats().pagesUploading()).isZero();
            assertThat(store.fsck(false).problems()).as("its pages free, none leaked").isEmpty();
            assertThat(store.current(id)).isEmpty();
            assertThat(store.appliedOffset(TOPIC + p)).isEqualTo(1);
            assertThat(applier.apply(abort, key(id), p, 0, store, new Source(TOPIC + p, 2))).as("sent again")
                    .isInstanceOf(CommandApplier.Duplicate.class);
            assertThat(applier.apply(chunk(id, "u", 1, new byte[20], null), key(id), p, 0, store, new Source(TOPIC + p, 3)))
                    .as("a chunk after it finds no upload").isInstanceOfSatisfying(CommandApplier.Rejected.class,
                            r -> assertThat(r.kind()).isEqualTo("upload"));
            LobCommand bare = command(id, LobOp.ABORT, 0, new byte[0]);
            assertThat(applier.apply(bare, key(id), p, 0, store, new Source(TOPIC + p, 4))).as("no uploadId")
                    .isInstanceOfSatisfying(CommandApplier.Rejected.class, r -> assertThat(r.kind()).isEqualTo("invalid"));
            LobCommand reused = command(id, LobOp.ABORT, 0, new byte[0]);
            reused.setUploadId("v");
            reused.setCommandId(abort.getCommandId());
            assertThat(applier.apply(reused, key(id), p, 0, store, new Source(TOPIC + p, 5))).as("its id reused for another upload")
                    .isInstanceOfSatisfying(CommandApplier.Rejected.class, r -> assertThat(r.kind()).isEqualTo("id-conflict"));
        }
    }

    /** offset + length wrapped past Long.MAX_VALUE: the chunk was let through, and refused later as kind upload. */
    @Test
    void aChunkWhoseOffsetRunsPastTheValueIsInvalidHoweverLarge() throws Exception {
        String id = "doc";
        int p = partitionOf(id);
        LobCommand far = chunk(id, "u", 0, new byte[20], null);
        far.setOffset(Long.MAX_VALUE);
        try (LobStore store = LobStore.open(dir.resolve("p"), LobStoreConfig.defaults())) {
            assertThat(applier.apply(far, key(id), p, 0, store, new Source(TOPIC + p, 0))).isInstanceOfSatisfying(CommandApplier.Rejected.class,
                    r -> assertThat(r.kind() + ": " + r.reason()).isEqualTo("invalid: chunk bytes " + Long.MAX_VALUE + "+10 run past totalLength 20"));
        }
    }

    @Test
    void aCommandWithoutAKeyOrOffItsKeysPartitionIsInvalid() throws Exception {
        String id = "doc";
        int p = partitionOf(id);
        try (LobStore store = LobStore.open(dir.resolve("p"), LobStoreConfig.defaults())) {
            LobCommand put = command(id, LobOp.PUT, 0, new byte[5]);
            assertThat(applier.apply(put, null, p, 0, store, new Source(TOPIC + p, 0)))
                    .isInstanceOfSatisfying(CommandApplier.Rejected.class, r -> assertThat(r.reason()).contains("no key"));
            int other = (p + 1) % PARTITIONS;
            assertThat(applier.apply(put, key(id), other, 0, store, new Source(TOPIC + other, 0)))
                    .isInstanceOfSatisfying(CommandApplier.Rejected.class, r -> assertThat(r.reason()).contains("belongs to partition " + p));
            assertThat(store.current(id)).isEmpty();

            // a long lobId: the letter's reason is cut, and what redrive leaves such letters by must be in what is kept
            String longId = "x".repeat(2 * DeadLetters.MAX_REASON_CHARS);
            int home = partitionOf(longId);
            int away = (home + 1) % PARTITIONS;
            assertThat(applier.apply(command(longId, LobOp.PUT, 0, new byte[5]), key(longId), away, 1, store, new Source(TOPIC + away, 1)))
                    .isInstanceOfSatisfying(CommandApplier.Rejected.class, r -> assertThat(r.kind() + ": " + r.reason())
                            .hasSizeGreaterThan(DeadLetters.MAX_REASON_CHARS)
                            .satisfies(why -> assertThat(why.substring(0, DeadLetters.MAX_REASON_CHARS)).contains(DeadLetterTopic.OFF_ITS_PARTITION + home)));
        }
    }

    /**
     * The index keeps ids in modified UTF-8, which stops at 64 KiB: such an id reached the index as an
     * IOException, which failed the task at every restart. Refused up front now, by the applier and by the store.
     */
    @Test
    void anIdOverTheLimitIsInvalidAndTheTablespaceRefusesItToo() throws Exception {
        String longest = "\u00e9".repeat(LobStore.MAX_ID_BYTES / 2); // two bytes a char: 65,534, the index takes it
        String over = "d".repeat(70_000);
        try (LobStore store = LobStore.open(dir.resolve("p"), LobStoreConfig.defaults())) {
            int p = partitionOf(over);
            assertThat(applier.apply(command(over, LobOp.PUT, 0, new byte[5]), key(over), p, 0, store, new Source(TOPIC + p, 0)))
                    .isInstanceOfSatisfying(CommandApplier.Rejected.class, r -> assertThat(r.reason())
                            .isEqualTo("lobId of 70000 bytes: at most 65535"));
            int q = partitionOf(longest);
            assertThat(applier.apply(command(longest, LobOp.PUT, 0, new byte[5]), key(longest), q, 0, store, new Source(TOPIC + q, 1)))
                    .isInstanceOf(CommandApplier.Applied.class);
            assertThatThrownBy(() -> store.put(over, new ByteArrayInputStream(new byte[5]), 5, null, null))
                    .isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> store.delete(over, null)).isInstanceOf(IllegalArgumentException.class);
            assertThat(store.fsck(true).ok()).isTrue();
        }
    }

    /**
     * A rejection read again after a restart is stamped again with its dead letter sent again: forgotten by the first
     * stamp, after an outage longer than the window, an abort of that letter's transaction would lose both.
     */
    @Test
    void aRejectionReadAgainIsStampedAgain() throws Exception {
        String id = "gone";
        int p = partitionOf(id);
        Source source = new Source(TOPIC + p, 0);
        try (LobStore store = LobStore.open(dir.resolve("p"), LobStoreConfig.defaults())) {
            LobCommand truncate = command(id, LobOp.TRUNCATE, 0, new byte[0]);
            assertThat(applier.apply(truncate, key(id), p, 0, store, source)).isInstanceOf(CommandApplier.Rejected.class);
            long between = nextMillisecond(System.currentTimeMillis()); // after the first stamp
            nextMillisecond(between); // the second stamp after it
            assertThat(applier.apply(truncate, key(id), p, 0, store, source)).isInstanceOf(CommandApplier.Rejected.class);
            store.forgetCommandsBefore(between);
            assertThat(store.rejection(source)).as("kept by its second stamp").isPresent();
        }
    }

    /** Waits until the wall clock, which stamps rejections, has passed {@code millis}; returns its time then. */
    private static long nextMillisecond(long millis) {
        long now;
        while ((now = System.currentTimeMillis()) <= millis) {
            Thread.onSpinWait();
        }
        return now;
    }

    /**
     * A PUT's content type and metadata are its version's; a chunked PUT's come with its last chunk; a
     * partial update keeps them; a PUT without them clears them; what an HTTP header cannot carry is dropped, the value kept.
     */
    @Test
    void aPutsAttributesAreKeptByPartialUpdatesAndReplacedByTheNextPut() throws Exception {
        String id = "doc";
        int p = partitionOf(id);
        String source = TOPIC + p;
        try (LobStore store = LobStore.open(dir.resolve("p"), LobStoreConfig.defaults())) {
            LobCommand put = command(id, LobOp.PUT, 0, new byte[50]);
            put.setContentType("image/png");
            put.setMetadata(Map.of("owner", "ann", "camera", "x-100"));
            assertThat(applier.apply(put, key(id), p, 0, store, new Source(source, 0))).isInstanceOf(CommandApplier.Applied.class);
            Attributes png = new Attributes("image/png", Map.of("camera", "x-100", "owner", "ann"));
            assertThat(store.current(id).orElseThrow().attributes()).isEqualTo(png);

            applier.apply(command(id, LobOp.APPEND, 0, new byte[7]), key(id), p, 0, store, new Source(source, 1));
            assertThat(store.current(id).orElseThrow().byteLength()).isEqualTo(57);
            assertThat(store.current(id).orElseThrow().attributes()).isEqualTo(png);

            applier.apply(command(id, LobOp.PUT, 0, new byte[3]), key(id), p, 0, store, new Source(source, 2));
            assertThat(store.current(id).orElseThrow().attributes()).isEqualTo(Attributes.NONE);

            long offset = 3;
            for (int i = 0; i < 2; i++) {
                LobCommand chunk = LobCommand.newBuilder().setCommandId(UUID.randomUUID().toString()).setLobId(id).setOp(LobOp.PUT)
                        .setUploadId("u").setChunkIndex(i).setChunkCount(2).setOffset(i * 10L).setTotalLength(20)
                        .setData(ByteBuffer.wrap(new byte[10])).setMetadata(i == 1 ? Map.of("part", "last") : Map.of())
                        .setContentType(i == 1 ? "text/plain" : null).setProducedAt(Instant.now()).build();
                applier.apply(chunk, key(id), p, 0, store, new Source(source, offset++));
            }
            assertThat(store.current(id).orElseThrow().attributes()).isEqualTo(new Attributes("text/plain", Map.of("part", "last")));

            // from a producer other than LobClient (which refuses them): the value is kept, what a header cannot carry is not
            LobCommand injecting = command(id, LobOp.PUT, 0, new byte[5]);
            injecting.setContentType("text/plain\r\nSet-Cookie: x=1");
            injecting.setMetadata(Map.of("owner", "ann\r\nSet-Cookie: x=1", "two words", "v", "Kept", "yes", "note", " draft "));
            assertThat(applier.apply(injecting, key(id), p, 0, store, new Source(source, offset))).isInstanceOf(CommandApplier.Applied.class);
            assertThat(store.current(id).orElseThrow().byteLength()).isEqualTo(5);
            // a space at either end is taken off, as HTTP readers did when a release before stored it with the value
            assertThat(store.current(id).orElseThrow().attributes()).isEqualTo(new Attributes(null, Map.of("kept", "yes", "note", "draft")));
            // said once a minute at most: a producer that sends them with every PUT would write a line per command
            ListAppender<ILoggingEvent> said = new ListAppender<>();
            said.start();
            Logger applierLog = (Logger) LoggerFactory.getLogger(CommandApplier.class);
            applierLog.addAppender(said);
            try {
                for (int i = 0; i < 3; i++) {
                    injecting.setCommandId(UUID.randomUUID().toString());
                    applier.apply(injecting, key(id), p, 0, store, new Source(source, ++offset));
                }
            } finally {
                applierLog.detachAppender(said);
            }
            assertThat(said.list).filteredOn(e -> e.getFormattedMessage().contains("metadata dropped")).hasSizeLessThanOrEqualTo(1);
            LobCommand last = command(id, LobOp.PUT, 0, new byte[20]);
            last.setContentType("text/plain");
            assertThat(applier.apply(last, key(id), p, 0, store, new Source(source, offset + 1))).isInstanceOf(CommandApplier.Applied.class);
        }
        // kept in the index: read back after a reopen
        try (LobStore store = LobStore.open(dir.resolve("p"), LobStoreConfig.defaults())) {
            assertThat(store.current(id).orElseThrow().attributes().contentType()).isEqualTo("text/plain");
        }
    }
    /**
     * lob.value.max.bytes lowered under a LOB already stored: a WRITE or APPEND is judged by the length it leaves the LOB,
     * which a write inside the value keeps, not by its own end; one of 0 bytes changes no byte and is applied as nothing.
     */
    @Test
    void aLoweredLimitJudgesAWriteByTheLengthItLeavesTheLob() throws Exception {
        String id = "doc";
        int p = partitionOf(id);
        String source = TOPIC + p;
        CommandApplier strict = new CommandApplier(50, PARTITIONS, WINDOW_MS);
        try (LobStore store = LobStore.open(dir.resolve("p"), LobStoreConfig.defaults())) {
            applier.apply(command(id, LobOp.PUT, 0, new byte[100]), key(id), p, 0, store, new Source(source, 0));
            assertThat(strict.apply(command(id, LobOp.WRITE, 0, new byte[5]), key(id), p, 0, store, new Source(source, 1)))
                    .isEqualTo(new CommandApplier.Rejected(Rejection.TOO_LARGE, "doc would be 100 bytes, over lob.value.max.bytes 50"));
            long offset = 2;
            for (LobCommand nothing : List.of(command(id, LobOp.APPEND, 0, new byte[0]), command(id, LobOp.WRITE, 80, new byte[0]))) {
                assertThat(strict.apply(nothing, key(id), p, 0, store, new Source(source, offset++)))
                        .isEqualTo(new CommandApplier.Applied(nothing.getOp(), Optional.empty()));
            }
            LobCommand truncate = command(id, LobOp.TRUNCATE, 0, new byte[0]);
            truncate.setTotalLength(40L);
            assertThat(strict.apply(truncate, key(id), p, 0, store, new Source(source, offset++)))
                    .isInstanceOf(CommandApplier.Applied.class);
            assertThat(strict.apply(command(id, LobOp.WRITE, 0, new byte[5]), key(id), p, 0, store, new Source(source, offset)))
                    .isInstanceOf(CommandApplier.Applied.class);
            assertThat(store.current(id).orElseThrow().byteLength()).isEqualTo(40);
        }
    }

    /**
     * A write or append of 0 bytes, or a truncate to the LOB's length, changes no byte: applied as nothing (the same version,
     * so the same ETag; no history), its id recorded, so it is a duplicate when it comes again. On a LOB that does not
     * exist, a write of 0 bytes still makes it, empty.
     */
    @Test
    void aCommandThatChangesNoByteMakesNoVersion() throws Exception {
        String id = "doc";
        int p = partitionOf(id);
        String source = TOPIC + p;
        try (LobStore store = LobStore.open(dir.resolve("p"), LobStoreConfig.defaults())) {
            applier.apply(command(id, LobOp.PUT, 0, new byte[50_000]), key(id), p, 0, store, new Source(source, 0));
            VersionEntry put = store.current(id).orElseThrow();
            LobCommand nothing = command(id, LobOp.APPEND, 0, new byte[0]);
            LobCommand truncate = command(id, LobOp.TRUNCATE, 0, new byte[0]);
            truncate.setTotalLength(50_000L);
            long offset = 1;
            for (LobCommand same : new LobCommand[] {nothing, command(id, LobOp.WRITE, 20_000, new byte[0]), truncate}) {
                assertThat(applier.apply(same, key(id), p, 0, store, new Source(source, offset++)))
                        .isEqualTo(new CommandApplier.Applied(same.getOp(), Optional.empty()));
            }
            assertThat(store.current(id).orElseThrow()).isEqualTo(put);
            assertThat(store.stats().historyLength()).isZero();
            assertThat(applier.apply(nothing, key(id), p, 0, store, new Source(source, offset++)))
                    .isInstanceOf(CommandApplier.Duplicate.class);
            assertThat(applier.apply(command("new", LobOp.APPEND, 0, new byte[0]), key("new"), partitionOf("new"), 0, store,
                    new Source(TOPIC + partitionOf("new"), 0))).isInstanceOf(CommandApplier.Applied.class);
            assertThat(store.current("new").orElseThrow().byteLength()).isZero();
        }
    }
}
