package io.lobstream.store.index;

import io.lobstream.store.LobStore;
import io.lobstream.store.LobStoreConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Comparator;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** A scan of the index that meets damage says so: RocksDB's iterator only stops, as at the end. */
class LobIndexScanTest {
    @TempDir
    Path dir;

    /**
     * Recovery builds the free space from what the index names: a scan that ended quietly at a damaged block would have
     * given the pages of every LOB after it to new writes. The tablespace refuses to open instead.
     */
    @Test
    void aDamagedIndexBlockFailsTheOpenInsteadOfFreeingThePagesItNames() throws IOException {
        byte[] value = new byte[100];
        try (LobStore store = LobStore.open(dir, LobStoreConfig.defaults())) {
            for (int i = 0; i < 1000; i++) {
                store.put("lob-" + i, new ByteArrayInputStream(value), value.length, null, Attributes.NONE, null);
            }
        } // (closing flushes the index into its table files)
        Path table;
        try (Stream<Path> files = Files.walk(dir)) {
            table = files.filter(f -> f.toString().endsWith(".sst")).max(Comparator.comparingLong(LobIndexScanTest::size)).orElseThrow();
        }
        try (FileChannel f = FileChannel.open(table, StandardOpenOption.WRITE)) {
            f.write(ByteBuffer.wrap(new byte[64]), size(table) / 3); // a data block: the index and footer are at the end
        }
        assertThatThrownBy(() -> LobStore.open(dir, LobStoreConfig.defaults()).close())
                .hasStackTraceContaining("the index could not be read to the end of a scan");
    }

    /** A prefix scan is bounded at the least key past the prefix, bytewise and unsigned; a prefix of 0xFF bytes has none. */
    @Test
    void aPrefixScanEndsAtTheLeastKeyPastThePrefix() {
        assertThat(LobIndex.successor(new byte[]{0, 3, 'a', 'b', 'c'})).containsExactly(0, 3, 'a', 'b', 'd');
        assertThat(LobIndex.successor(new byte[]{1, (byte) 0x7F})).containsExactly(1, (byte) 0x80);
        assertThat(LobIndex.successor(new byte[]{1, (byte) 0xFE, (byte) 0xFF})).containsExactly(1, (byte) 0xFF);
        assertThat(LobIndex.successor(new byte[]{(byte) 0xFF, (byte) 0xFF})).isNull();
        assertThat(LobIndex.successor(new byte[0])).isNull();
    }

    private static long size(Path f) {
        try {
            return Files.size(f);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** The sources whose log a copy records (another deployment's is how its copy is known), not keys that only start alike. */
    @Test
    void theSourcesWithALogAreThoseRecordedAndNoOtherMetaKey() throws IOException {
        try (LobStore store = LobStore.open(dir.resolve("store"), LobStoreConfig.defaults())) {
            assertThat(store.sourcesWithLogIds()).isEmpty();
            store.recordLogId("lob.commands-0", "id-1");
            store.recordLogId("other.commands-0", "id-2");
            assertThat(store.sourcesWithLogIds()).containsExactlyInAnyOrder("lob.commands-0", "other.commands-0");
        }
        try (LobIndex index = LobIndex.open(dir.resolve("index"))) {
            index.writeSync(index.newBatch().putMeta("log.id", new byte[1]).putMeta("log.idx", new byte[1])
                    .putMeta("log.id.a", new byte[] {7}).putMeta("log.ie", new byte[1]));
            assertThat(index.metaWithPrefix("log.id.")).containsOnlyKeys("a");
            assertThat(index.metaWithPrefix("log.id.").get("a")).containsExactly(7);
            assertThat(index.metaWithPrefix("nothing.")).isEmpty();
        }
    }
}
