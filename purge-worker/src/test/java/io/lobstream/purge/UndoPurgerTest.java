package io.lobstream.purge;

import io.lobstream.avro.ReclaimRecord;
import io.lobstream.avro.UndoCause;
import io.lobstream.avro.UndoRecord;
import io.lobstream.schema.Extents;
import io.lobstream.schema.serde.RegistryUnavailableException;
import io.lobstream.store.DefaultLobStore;
import io.lobstream.store.LobStore;
import io.lobstream.store.LobStoreConfig;
import io.lobstream.store.allocator.Extent;
import io.lobstream.store.index.VersionEntry;
import io.lobstream.store.purge.PurgeReader;
import io.lobstream.store.tablespace.TablespaceDirs;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.Deserializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ConnectException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * What a purge worker makes of one partition's undo records, on a real tablespace: the reclaim
 * records it would send, and every kind of record it must skip without stopping the partition.
 */
class UndoPurgerTest {
    private static final String UNDO_TOPIC = "lob.undo-history";
    private static final String RECLAIM_TOPIC = "lob.reclaim";
    private static final Instant NOW = Instant.parse("2026-12-02T10:00:00Z");
    /** 4 KiB pages, no batch preallocation: freed pages are taken again at once, so a reclaimed root is reused. */
    private static final LobStoreConfig CONFIG = new LobStoreConfig(Map.of("lob.page.size", 4096, "lob.prealloc", false));

    @TempDir
    Path dataDir;
    private LobStore store;
    private TablespaceReaders readers;
    private PurgeMetrics metrics;
    private UndoPurger purger;
    /** Thrown by the test's deserializer instead of decoding, when set. */
    private RuntimeException decodeFailure;
    private long offset;

    @BeforeEach
    void open() throws IOException {
        store = DefaultLobStore.open(TablespaceDirs.partitionDir(dataDir, 0), CONFIG);
        readers = new TablespaceReaders(dataDir, CONFIG, 0, "w1");
        metrics = new PurgeMetrics(new SimpleMeterRegistry(), "w1");
        // plain Avro: what the registry's serde adds is not under test here
        Deserializer<Object> undoReader = (topic, bytes) -> {
            if (decodeFailure != null) {
                throw decodeFailure;
            }
            try {
                return UndoRecord.fromByteBuffer(ByteBuffer.wrap(bytes));
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        };
        purger = new UndoPurger("w1", RECLAIM_TOPIC, undoReader, readers, metrics, Clock.fixed(NOW, ZoneOffset.UTC));
    }

    @AfterEach
    void close() throws IOException {
        readers.close();
        store.close();
    }

    @Test
    void eachSupersededVersionBecomesOneReclaimOfItsOwnPages() throws IOException {
        VersionEntry small = supersede("small", 100);
        VersionEntry large = supersede("large", 300_000);
        put("partial", 200_000, 1);
        VersionEntry partial = store.write("partial", 4096, new ByteArrayInputStream(new byte[10]), 10, null).superseded().orElseThrow();
        assertThat(partial.retained()).as("a partial update shares the unchanged pages").isNotEmpty();

        UndoPurger.Purged purged = purge(undo(small), undo(large), undo(partial));

        assertThat(purged.reclaims()).hasSize(3);
        assertReclaims(purged.reclaims().get(0), small);
        assertReclaims(purged.reclaims().get(1), large);
        assertReclaims(purged.reclaims().get(2), partial);
        assertThat(purged.pages()).isEqualTo(Stream.of(small, large, partial).mapToLong(VersionEntry::pageCount).sum());
        ProducerRecord<String, Object> first = purged.reclaims().get(0);
        assertThat(first.topic()).isEqualTo(RECLAIM_TOPIC);
        assertThat(first.key()).isEqualTo("small");
        assertThat(first.timestamp()).as("the undo record's timestamp").isEqualTo(1_000L);
        assertThat(((ReclaimRecord) first.value()).getWorkerId()).isEqualTo("w1");
        assertThat(((ReclaimRecord) first.value()).getTime()).isEqualTo(NOW);
        assertThat(metrics.corrupt.count() + metrics.stale.count() + metrics.otherCopy.count()).isZero();
    }

    @Test
    void recordsItMustNotActOnAreCountedAndSkippedAndTheOthersPurged() throws IOException {
        VersionEntry good = supersede("good", 20_000);
        VersionEntry other = supersede("other", 20_000);
        VersionEntry negative = supersede("negative", 20_000);

        UndoPurger.Purged purged = purge(
                "not avro".getBytes(StandardCharsets.UTF_8),
                encode(undo(other).setCopyId("another-copy").build()),
                encode(undo(negative).setRootPage(-3).build()),
                encode(undo(good).build()));

        assertThat(purged.reclaims()).hasSize(1);
        assertReclaims(purged.reclaims().get(0), good);
        assertThat(metrics.corrupt.count()).as("undecodable, and a negative root page").isEqualTo(2);
        assertThat(metrics.otherCopy.count()).isEqualTo(1);
    }

    @Test
    void aVersionReclaimedAlreadyIsStaleNotCorrupt() throws IOException {
        VersionEntry gone = supersede("gone", 20_000);
        store.reclaim(gone.lobId(), gone.version(), gone.extents(), null);
        for (int i = 0; i < 10; i++) {
            put("reuse" + i, 20_000, i); // takes the freed pages, the old root among them
        }
        store.flush();

        UndoPurger.Purged purged = purge(undo(gone));

        assertThat(purged.reclaims()).isEmpty();
        assertThat(metrics.stale.count()).isEqualTo(1);
        assertThat(metrics.corrupt.count()).isZero();
    }

    @Test
    void aRegistryThatDoesNotAnswerFailsTheBatchSoItIsReadAgain() throws IOException {
        VersionEntry old = supersede("a", 100);
        decodeFailure = new RuntimeException("registry lookup", new ConnectException("Connection refused"));

        assertThatThrownBy(() -> purge(undo(old))).isInstanceOf(RegistryUnavailableException.class);
        assertThat(metrics.corrupt.count()).as("not the record's fault").isZero();
    }

    @Test
    void aTablespaceReplacedUnderTheWorkerIsReadAnew() throws IOException {
        supersede("before", 100);
        PurgeReader oldReader = readers.reader(0);
        // the partition rebuilt as a new copy (replay; a failed sync): same directory, new copy id
        store.close();
        Path dir = TablespaceDirs.partitionDir(dataDir, 0);
        try (Stream<Path> files = Files.walk(dir)) {
            files.sorted((a, b) -> b.compareTo(a)).forEach(p -> p.toFile().delete());
        }
        store = DefaultLobStore.open(dir, CONFIG);
        assertThat(store.copyId()).isNotEqualTo(oldReader.copyId());
        VersionEntry fresh = supersede("after", 20_000);

        UndoPurger.Purged purged = purger.purge(0, oldReader, List.of(record(encode(undo(fresh).build()))));

        assertThat(purged.reclaims()).hasSize(1);
        assertReclaims(purged.reclaims().get(0), fresh);
        assertThat(readers.reader(0).copyId()).isEqualTo(store.copyId());
        assertThat(metrics.otherCopy.count()).isZero();
    }

    @Test
    void aPartitionWithoutItsTablespaceHasNoReaderUntilItAppears() throws IOException {
        assertThat(readers.reader(1)).isNull();
        assertThat(readers.reader(1)).as("asked again: still none, reported once").isNull();
        try (LobStore p1 = DefaultLobStore.open(TablespaceDirs.partitionDir(dataDir, 1), CONFIG)) {
            assertThat(readers.reader(1)).isNotNull();
            assertThat(readers.reader(1).copyId()).isEqualTo(p1.copyId());
        }
    }

    // ------------------------------------------------------------------ helpers

    private UndoPurger.Purged purge(UndoRecord.Builder... undos) throws IOException {
        return purge(Arrays.stream(undos).map(u -> encode(u.build())).toArray(byte[][]::new));
    }

    private UndoPurger.Purged purge(byte[]... values) throws IOException {
        store.flush(); // the pages on disk, where the worker's reader finds them
        List<ConsumerRecord<String, byte[]>> batch = new ArrayList<>();
        for (byte[] v : values) {
            batch.add(record(v));
        }
        return purger.purge(0, readers.reader(0), batch);
    }

    private ConsumerRecord<String, byte[]> record(byte[] value) {
        offset++;
        return new ConsumerRecord<>(UNDO_TOPIC, 0, offset, offset * 1_000L, org.apache.kafka.common.record.TimestampType.LOG_APPEND_TIME,
                0, value.length, "key", value, new org.apache.kafka.common.header.internals.RecordHeaders(), java.util.Optional.empty());
    }

    private void put(String id, int size, long seed) throws IOException {
        byte[] b = new byte[size];
        new Random(seed).nextBytes(b);
        store.put(id, new ByteArrayInputStream(b), b.length, null, null);
    }

    /** Writes a value twice: the first version is the one superseded. */
    private VersionEntry supersede(String id, int size) throws IOException {
        put(id, size, 1);
        byte[] b = new byte[size];
        new Random(2).nextBytes(b);
        return store.put(id, new ByteArrayInputStream(b), b.length, null, null).superseded().orElseThrow();
    }

    /** The undo record the writer produces for a superseded version. */
    private UndoRecord.Builder undo(VersionEntry old) {
        return UndoRecord.newBuilder().setLobId(old.lobId()).setVersion(old.version()).setRootPage(old.rootPage())
                .setPageCount((int) old.pageCount()).setRetained(Extents.toAvro(old.retained())).setByteLength(old.byteLength())
                .setCause(UndoCause.UPDATE).setSourceOffset(0).setTime(NOW).setCopyId(store.copyId());
    }

    private static byte[] encode(UndoRecord undo) {
        try {
            ByteBuffer b = undo.toByteBuffer();
            byte[] bytes = new byte[b.remaining()];
            b.get(bytes);
            return bytes;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private void assertReclaims(ProducerRecord<String, Object> reclaim, VersionEntry version) {
        ReclaimRecord r = (ReclaimRecord) reclaim.value();
        assertThat(r.getLobId()).isEqualTo(version.lobId());
        assertThat(r.getVersion()).isEqualTo(version.version());
        assertThat(Extent.coalesce(Extents.fromAvro(r.getExtents())))
                .as("every page the version owns (its extents), none it shares with its successor (retained)")
                .isEqualTo(Extent.coalesce(version.extents()));
    }
}
