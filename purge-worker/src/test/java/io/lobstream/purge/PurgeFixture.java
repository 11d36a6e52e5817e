package io.lobstream.purge;

import io.lobstream.avro.UndoCause;
import io.lobstream.avro.UndoRecord;
import io.lobstream.schema.Extents;
import io.lobstream.store.LobStore;
import io.lobstream.store.LobStoreConfig;
import io.lobstream.store.index.VersionEntry;
import io.lobstream.store.tablespace.TablespaceDirs;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.serialization.Deserializer;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.Map;
import java.util.Optional;
import java.util.Random;

/**
 * Partition 0's tablespace in a data directory, and a purger reading it as a worker does: versions
 * superseded on it, and the undo records the writer would produce for them, in plain Avro (what the
 * registry's serde adds is not under test).
 */
final class PurgeFixture implements AutoCloseable {
    static final String UNDO_TOPIC = "lob.undo-history";
    static final String RECLAIM_TOPIC = "lob.reclaim";
    static final Instant NOW = Instant.parse("2026-12-02T10:00:00Z");
    /** 4 KiB pages, no batch preallocation: freed pages are taken again at once, so a reclaimed root is reused. */
    static final LobStoreConfig CONFIG = new LobStoreConfig(Map.of("lob.page.size", 4096, "lob.prealloc", false));

    final Path dataDir;
    LobStore store;
    final TablespaceReaders readers;
    final SimpleMeterRegistry meters = new SimpleMeterRegistry();
    final PurgeMetrics metrics;
    final UndoPurger purger;
    /** Thrown by the purger's deserializer instead of decoding, when set. */
    volatile RuntimeException decodeFailure;

    PurgeFixture(Path dataDir) throws IOException {
        this.dataDir = dataDir;
        store = LobStore.open(TablespaceDirs.partitionDir(dataDir, 0), CONFIG);
        readers = new TablespaceReaders(dataDir, CONFIG, 0, "w1");
        metrics = new PurgeMetrics(meters, "w1");
        Deserializer<Object> undoReader = (topic, bytes) -> {
            RuntimeException failure = decodeFailure;
            if (failure != null) {
                throw failure;
            }
            try {
                return UndoRecord.fromByteBuffer(ByteBuffer.wrap(bytes));
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        };
        purger = new UndoPurger("w1", RECLAIM_TOPIC, undoReader, readers, metrics, Clock.fixed(NOW, ZoneOffset.UTC));
    }

    void put(String id, int size, long seed) throws IOException {
        byte[] b = new byte[size];
        new Random(seed).nextBytes(b);
        store.put(id, new ByteArrayInputStream(b), b.length, null, null);
    }

    /** Puts {@code id} twice: the first version, superseded, is pending purge. */
    VersionEntry supersede(String id, int size) throws IOException {
        put(id, size, 1);
        byte[] b = new byte[size];
        new Random(2).nextBytes(b);
        return store.put(id, new ByteArrayInputStream(b), b.length, null, null).superseded().orElseThrow();
    }

    /** The undo record the writer produces for a superseded version. */
    UndoRecord.Builder undo(VersionEntry old) {
        return UndoRecord.newBuilder().setLobId(old.lobId()).setVersion(old.version()).setRootPage(old.rootPage())
                .setPageCount((int) old.pageCount()).setRetained(Extents.toAvro(old.retained())).setByteLength(old.byteLength())
                .setCause(UndoCause.UPDATE).setSourceOffset(0).setTime(NOW).setCopyId(store.copyId());
    }

    static byte[] encode(UndoRecord undo) {
        try {
            ByteBuffer b = undo.toByteBuffer();
            byte[] bytes = new byte[b.remaining()];
            b.get(bytes);
            return bytes;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** An undo record of partition 0 as the consumer hands it over, at {@code offset}. */
    static ConsumerRecord<String, byte[]> record(long offset, byte[] value) {
        return new ConsumerRecord<>(UNDO_TOPIC, 0, offset, offset * 1_000L, TimestampType.LOG_APPEND_TIME, 0, value.length, "key", value,
                new RecordHeaders(), Optional.empty());
    }

    @Override
    public void close() throws IOException {
        readers.close();
        store.close();
    }
}
