package io.lobstream.store.index;

import io.lobstream.store.LobStore;
import io.lobstream.store.LobStoreConfig;
import io.lobstream.store.Source;
import io.lobstream.store.tablespace.TablespaceDirs;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rocksdb.ColumnFamilyDescriptor;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.DBOptions;
import org.rocksdb.Options;
import org.rocksdb.RocksDB;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** What the index keeps with each source's applied offset: the latest command time read from it. */
class LobIndexAppliedTest {
    private static final String SOURCE = "lob.commands-0";

    @TempDir
    Path dir;

    /** Refused, skipped or applied, a record moves the latest time; one whose time went back does not take it back. */
    @Test
    void everyRecordMovesTheLatestTimeAndNoneTakesItBack() throws Exception {
        try (LobStore store = LobStore.open(dir.resolve("p"), LobStoreConfig.defaults())) {
            assertThat(store.latestTime(SOURCE)).isEqualTo(Source.UNKNOWN_TIME);
            store.recordRejected(new Source(SOURCE, 0, 5_000), new Rejection(Rejection.INVALID, "test"));
            assertThat(store.latestTime(SOURCE)).isEqualTo(5_000);
            store.recordSkipped(new Source(SOURCE, 1, "id-1", 9_000));
            assertThat(store.latestTime(SOURCE)).isEqualTo(9_000);
            store.recordSkipped(new Source(SOURCE, 2, "id-2", 7_000)); // went back
            assertThat(store.latestTime(SOURCE)).isEqualTo(9_000);
            assertThat(store.appliedOffset(SOURCE)).isEqualTo(2);
            assertThat(store.commandApplied("id-2", 9_000)).as("stamped with the latest time, not its own").isPresent();
        }
    }

    /** An offset a release before session 55 wrote (the offset alone) has no latest time until the next record. */
    @Test
    void anOffsetWrittenWithoutATimeHasNoneUntilTheNextRecord() throws Exception {
        Path p = dir.resolve("p");
        LobStore.open(p, LobStoreConfig.defaults()).close();
        Path index = p.resolve(TablespaceDirs.INDEX);
        writeRaw(index, "applied", SOURCE, ByteBuffer.allocate(8).putLong(41).array());
        try (LobStore store = LobStore.open(p, LobStoreConfig.defaults())) {
            assertThat(store.appliedOffset(SOURCE)).isEqualTo(41);
            assertThat(store.latestTime(SOURCE)).isEqualTo(Source.UNKNOWN_TIME);
            store.recordSkipped(new Source(SOURCE, 42, 3_000));
            assertThat(store.latestTime(SOURCE)).isEqualTo(3_000);
            assertThat(store.appliedOffset(SOURCE)).isEqualTo(42);
        }
    }

    /** Writes {@code value} under {@code key} into column family {@code cf} of the RocksDB at {@code path}, as another release would. */
    private static void writeRaw(Path path, String cf, String key, byte[] value) throws Exception {
        RocksDB.loadLibrary();
        List<byte[]> names;
        try (Options options = new Options()) {
            names = RocksDB.listColumnFamilies(options, path.toString());
        }
        List<ColumnFamilyDescriptor> descriptors = names.stream().map(ColumnFamilyDescriptor::new).toList();
        List<ColumnFamilyHandle> handles = new ArrayList<>();
        try (DBOptions options = new DBOptions(); RocksDB db = RocksDB.open(options, path.toString(), descriptors, handles)) {
            for (int i = 0; i < names.size(); i++) {
                if (Arrays.equals(names.get(i), cf.getBytes(StandardCharsets.UTF_8))) {
                    db.put(handles.get(i), key.getBytes(StandardCharsets.UTF_8), value);
                }
            }
            handles.forEach(ColumnFamilyHandle::close);
        }
    }
}
