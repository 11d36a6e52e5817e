package io.lobstream.purge;

import io.lobstream.avro.ReclaimRecord;
import io.lobstream.avro.UndoCause;
import io.lobstream.avro.UndoRecord;
import io.lobstream.schema.Extents;
import io.lobstream.schema.serde.RegistryUnavailableException;
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
import java.util.Set;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * What a purge worker makes of one partition's undo records, on a real tablespace: the reclaim
 * records it would send, and every kind of record it must skip without stopping the partition.
 */
class UndoPurgerTest {
    @TempDir
    Path dataDir;
    private PurgeFixture f;
    private long offset;

    @BeforeEach
    void open() throws IOException {
        f = new PurgeFixture(dataDir);
    }

    @AfterEach
    void close() throws IOException {
        f.close();
    }

    @Test
    void eachSupersededVersionBecomesOneReclaimOfItsOwnPages() throws IOException {
        VersionEntry small = f.supersede("small", 100);
        VersionEntry large = f.supersede("large", 300_000);
        f.put("partial", 200_000, 1);
        VersionEntry partial = f.store.write("partial", 4096, new ByteArrayInputStream(new byte[10]), 10, null).superseded().orElseThrow();
        assertThat(partial.retained()).as("a partial update shares the unchanged pages").isNotEmpty();

        UndoPurger.Purged purged = purge(f.undo(small), f.undo(large), f.undo(partial));

        assertThat(purged.reclaims()).hasSize(3);
        assertReclaims(purged.reclaims().get(0), small);
        assertReclaims(purged.reclaims().get(1), large);
        assertReclaims(purged.reclaims().get(2), partial);
        assertThat(purged.pages()).isEqualTo(Stream.of(small, large, partial).mapToLong(VersionEntry::pageCount).sum());
        ProducerRecord<String, Object> first = purged.reclaims().get(0);
        assertThat(first.topic()).isEqualTo(PurgeFixture.RECLAIM_TOPIC);
        assertThat(first.key()).isEqualTo("small");
        assertThat(first.partition()).as("the tablespace's partition, whatever lob.reclaim's count").isEqualTo(0);
        assertThat(first.timestamp()).as("the undo record's timestamp").isEqualTo(1_000L);
        assertThat(((ReclaimRecord) first.value()).getWorkerId()).isEqualTo("w1");
        assertThat(((ReclaimRecord) first.value()).getTime()).isEqualTo(PurgeFixture.NOW);
        assertThat(f.metrics.corrupt.count() + f.metrics.stale.count() + f.metrics.otherCopy.count()).isZero();
    }

    @Test
    void recordsItMustNotActOnAreCountedAndSkippedAndTheOthersPurged() throws IOException {
        VersionEntry good = f.supersede("good", 20_000);
        VersionEntry other = f.supersede("other", 20_000);
        VersionEntry negative = f.supersede("negative", 20_000);
        VersionEntry miscounted = f.supersede("miscounted", 20_000);

        UndoPurger.Purged purged = purge(
                "not avro".getBytes(StandardCharsets.UTF_8),
                PurgeFixture.encode(f.undo(other).setCopyId("another-copy").build()),
                PurgeFixture.encode(f.undo(negative).setRootPage(-3).build()),
                PurgeFixture.encode(f.undo(miscounted).setPageCount((int) miscounted.pageCount() + 1).build()),
                PurgeFixture.encode(f.undo(good).build()));

        assertThat(purged.reclaims()).hasSize(1);
        assertReclaims(purged.reclaims().get(0), good);
        assertThat(f.metrics.corrupt.count()).as("undecodable, a negative root page, a page count its pages do not match")
                .isEqualTo(3);
        assertThat(f.metrics.otherCopy.count()).isEqualTo(1);
    }

    @Test
    void aPurgeStoppedEarlySaysHowMuchOfTheBatchItConsumed() throws IOException {
        VersionEntry first = f.supersede("first", 20_000);
        VersionEntry second = f.supersede("second", 20_000);
        f.store.flush();
        List<ConsumerRecord<String, byte[]>> batch = List.of(record("not avro".getBytes(StandardCharsets.UTF_8)),
                record(PurgeFixture.encode(f.undo(first).build())), record(PurgeFixture.encode(f.undo(second).build())));

        UndoPurger.Purged purged = f.purger.purge(0, f.readers.reader(0), batch, () -> true);

        assertThat(purged.reclaims()).as("the first version is always scanned").hasSize(1);
        assertReclaims(purged.reclaims().get(0), first);
        assertThat(purged.consumed()).as("the undecodable record and the first version").isEqualTo(2);
        assertThat(f.purger.purge(0, f.readers.reader(0), batch.subList(2, 3), () -> true).consumed()).isEqualTo(1);
    }

    @Test
    void aVersionReclaimedAlreadyIsStaleNotCorrupt() throws IOException {
        VersionEntry gone = f.supersede("gone", 20_000);
        f.store.reclaim(gone.lobId(), gone.version(), gone.extents(), null);
        f.store.flush(); // its pages free (a reclaim with no source waits for a flush)
        for (int i = 0; i < 10; i++) {
            f.put("reuse" + i, 20_000, i); // takes the freed pages, the old root among them
        }
        f.store.flush();

        UndoPurger.Purged purged = purge(f.undo(gone));

        assertThat(purged.reclaims()).isEmpty();
        assertThat(f.metrics.stale.count()).isEqualTo(1);
        assertThat(f.metrics.corrupt.count()).isZero();
    }

    @Test
    void aRegistryThatDoesNotAnswerFailsTheBatchSoItIsReadAgain() throws IOException {
        VersionEntry old = f.supersede("a", 100);
        f.decodeFailure = new RuntimeException("registry lookup", new ConnectException("Connection refused"));

        assertThatThrownBy(() -> purge(f.undo(old))).isInstanceOf(RegistryUnavailableException.class);
        assertThat(f.metrics.corrupt.count()).as("not the record's fault").isZero();
    }

    @Test
    void aTablespaceReplacedUnderTheWorkerIsReadAnew() throws IOException {
        f.supersede("before", 100);
        PurgeReader oldReader = f.readers.reader(0);
        // the partition rebuilt as a new copy (replay; a failed sync): same directory, new copy id
        f.store.close();
        Path dir = TablespaceDirs.partitionDir(dataDir, 0);
        try (Stream<Path> files = Files.walk(dir)) {
            files.sorted((a, b) -> b.compareTo(a)).forEach(p -> p.toFile().delete());
        }
        f.store = LobStore.open(dir, PurgeFixture.CONFIG);
        assertThat(f.store.copyId()).isNotEqualTo(oldReader.copyId());
        VersionEntry fresh = f.supersede("after", 20_000);

        UndoPurger.Purged purged = f.purger.purge(0, oldReader, List.of(record(PurgeFixture.encode(f.undo(fresh).build()))), () -> false);
        purged.countSkipped();

        assertThat(purged.reclaims()).hasSize(1);
        assertReclaims(purged.reclaims().get(0), fresh);
        assertThat(f.readers.reader(0).copyId()).isEqualTo(f.store.copyId());
        assertThat(f.metrics.otherCopy.count()).isZero();
    }

    /**
     * A reader opened before the node gave its tablespace a copy id (an upgrade) took every record for its own copy's: a
     * copy rebuilt later had its records read in the replaced file, found stale, and consumed.
     */
    @Test
    void aReaderOfATablespaceWithoutACopyIdIsReadAnewWhenARecordNamesOne() throws IOException {
        f.store.close();
        Path dir = TablespaceDirs.partitionDir(dataDir, 0);
        Path descriptor = dir.resolve(TablespaceDirs.DESCRIPTOR);
        Files.writeString(descriptor, Files.readString(descriptor).replaceAll("(?m)^copy\\.id=.*$", ""));
        PurgeReader before = f.readers.reader(0);
        assertThat(before.copyId()).as("as a release before copy ids left it").isNull();
        f.store = LobStore.open(dir, PurgeFixture.CONFIG); // the node gives it one
        VersionEntry fresh = f.supersede("after", 20_000);
        f.store.flush();

        UndoPurger.Purged purged = f.purger.purge(0, before, List.of(record(PurgeFixture.encode(f.undo(fresh).build()))), () -> false);

        assertThat(f.readers.reader(0).copyId()).isEqualTo(f.store.copyId());
        assertThat(purged.reclaims()).hasSize(1);
    }

    /** Its records were matched against the old copy, taken for another copy's, and consumed without a reclaim. */
    @Test
    void recordsOfANewCopyThatDoesNotOpenAreHeldBack() throws IOException {
        Path dir = TablespaceDirs.partitionDir(dataDir, 0);
        assertHeldBack(() -> Files.delete(dir.resolve(TablespaceDirs.PAGES))); // the new copy's page file not there (yet)
    }

    @Test
    void recordsOfAPartitionWhoseDescriptorCannotBeReadAreHeldBack() throws IOException {
        Path descriptor = TablespaceDirs.partitionDir(dataDir, 0).resolve(TablespaceDirs.DESCRIPTOR);
        assertHeldBack(() -> Files.writeString(descriptor, Files.readString(descriptor).replaceAll("(?m)^page\\.size=.*$", "page.size=0")));
    }

    private interface Damage {
        void apply() throws IOException;
    }

    /** A record of copy "rebuilt", which the descriptor names, after {@code damage}: the batch waits, none of it consumed. */
    private void assertHeldBack(Damage damage) throws IOException {
        VersionEntry old = f.supersede("before", 100);
        f.store.flush();
        PurgeReader oldReader = f.readers.reader(0);
        Path descriptor = TablespaceDirs.partitionDir(dataDir, 0).resolve(TablespaceDirs.DESCRIPTOR);
        Files.writeString(descriptor, Files.readString(descriptor).replaceAll("(?m)^copy\\.id=.*$", "copy.id=rebuilt"));
        damage.apply();

        UndoPurger.Purged purged = f.purger.purge(0, oldReader, List.of(record(PurgeFixture.encode(f.undo(old).setCopyId("rebuilt")
                .build()))), () -> false);

        assertThat(purged).isSameAs(UndoPurger.Purged.HELD_BACK);
        assertThat(f.metrics.otherCopy.count()).isZero();
    }

    @Test
    void aPartitionWithoutItsTablespaceHasNoReaderUntilItAppears() throws IOException {
        assertThat(f.readers.reader(1)).isNull();
        assertThat(f.readers.reader(1)).as("asked again: still none, reported once").isNull();
        try (LobStore p1 = LobStore.open(TablespaceDirs.partitionDir(dataDir, 1), PurgeFixture.CONFIG)) {
            assertThat(f.readers.reader(1)).isNotNull();
            assertThat(f.readers.reader(1).copyId()).isEqualTo(p1.copyId());
        }
    }

    /** A following worker closes the readers of partitions its node no longer has, whatever it last assigned itself. */
    @Test
    void readersOfPartitionsNoLongerWantedAreClosed() throws IOException {
        try (LobStore p1 = LobStore.open(TablespaceDirs.partitionDir(dataDir, 1), PurgeFixture.CONFIG)) {
            PurgeReader r0 = f.readers.reader(0);
            PurgeReader r1 = f.readers.reader(1);
            f.readers.retainOnly(Set.of(1));
            assertThat(f.readers.reader(1)).isSameAs(r1);
            assertThat(f.readers.reader(0)).as("closed, and opened anew when asked").isNotSameAs(r0);
        }
    }

    // ------------------------------------------------------------------ helpers

    private UndoPurger.Purged purge(UndoRecord.Builder... undos) throws IOException {
        return purge(Arrays.stream(undos).map(u -> PurgeFixture.encode(u.build())).toArray(byte[][]::new));
    }

    private UndoPurger.Purged purge(byte[]... values) throws IOException {
        f.store.flush(); // the pages on disk, where the worker's reader finds them
        List<ConsumerRecord<String, byte[]>> batch = new ArrayList<>();
        for (byte[] v : values) {
            batch.add(record(v));
        }
        UndoPurger.Purged purged = f.purger.purge(0, f.readers.reader(0), batch, () -> false);
        purged.countSkipped(); // as the worker does once its transaction commits
        return purged;
    }

    private ConsumerRecord<String, byte[]> record(byte[] value) {
        return PurgeFixture.record(++offset, value);
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
