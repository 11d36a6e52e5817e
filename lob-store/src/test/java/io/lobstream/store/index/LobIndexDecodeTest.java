package io.lobstream.store.index;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rocksdb.ColumnFamilyDescriptor;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.ColumnFamilyOptions;
import org.rocksdb.DBOptions;
import org.rocksdb.Options;
import org.rocksdb.RocksDB;

import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** An entry that does not decode is named by its column family and key: "unknown index entry format 99" alone named neither. */
class LobIndexDecodeTest {
    @Test
    void anEntryThatDoesNotDecodeIsNamedByItsFamilyAndKey(@TempDir Path dir) throws Exception {
        Path indexDir = dir.resolve("index");
        LobIndex.open(indexDir).close();
        try (Options options = new Options(); ColumnFamilyOptions cf = new ColumnFamilyOptions(); DBOptions db = new DBOptions()) {
            List<ColumnFamilyDescriptor> all = new ArrayList<>();
            for (byte[] name : RocksDB.listColumnFamilies(options, indexDir.toString())) {
                all.add(new ColumnFamilyDescriptor(name, cf));
            }
            List<ColumnFamilyHandle> handles = new ArrayList<>();
            try (RocksDB rocks = RocksDB.open(db, indexDir.toString(), all, handles)) {
                for (int i = 0; i < all.size(); i++) {
                    if (new String(all.get(i).getName(), StandardCharsets.UTF_8).equals("current")) {
                        rocks.put(handles.get(i), "doc\n".getBytes(StandardCharsets.UTF_8), new byte[]{99});
                    }
                }
                handles.forEach(ColumnFamilyHandle::close);
            }
        }
        try (LobIndex index = LobIndex.open(indexDir)) {
            assertThatThrownBy(() -> index.forEachCurrent(e -> { })).isInstanceOf(UncheckedIOException.class)
                    .hasMessageContaining("index entry current/doc\\x0a does not decode: unknown index entry format 99");
        }
        assertThat(LobIndex.printable(new byte[]{'a', 0, (byte) 0xff})).isEqualTo("a\\x00\\xff");
    }
}
