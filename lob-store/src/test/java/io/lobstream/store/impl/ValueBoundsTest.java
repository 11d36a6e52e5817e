package io.lobstream.store.impl;

import io.lobstream.store.Chunk;
import io.lobstream.store.LobStoreConfig;
import io.lobstream.store.Source;
import io.lobstream.store.ValueTooLargeException;
import io.lobstream.store.fsck.FsckReport;
import io.lobstream.store.layout.StutteringStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;

import static io.lobstream.store.impl.DefaultLobStoreTest.assertSameBytes;
import static io.lobstream.store.impl.DefaultLobStoreTest.bytes;
import static io.lobstream.store.impl.DefaultLobStoreTest.put;
import static io.lobstream.store.impl.DefaultLobStoreTest.read;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Values too long for the tablespace, ids it cannot key, and caller streams longer or shorter than the length they announce. */
class ValueBoundsTest {
    private static final int PAGE = 4096;

    @TempDir
    Path dir;

    private DefaultLobStore open() throws IOException {
        return DefaultLobStore.open(dir, new LobStoreConfig(Map.of(LobStoreConfig.PAGE_SIZE.name(), PAGE)));
    }

    /** A stream the store must not read: it fails on the first byte. */
    private static InputStream unread() {
        return new InputStream() {
            @Override
            public int read() {
                throw new AssertionError("read a value that was refused");
            }
        };
    }

    @Test
    void aValueOverTheTablespaceLimitIsRefusedBeforeAnyPageIsAllocated() throws IOException {
        try (DefaultLobStore store = open()) {
            long max = store.layoutMaxBytes();
            assertThat(max).isEqualTo(store.config().layoutMaxBytes()).isBetween(400L << 20, 450L << 20);
            put(store, "small", bytes(100, 1));
            long pagesBefore = store.stats().pagesFree() + store.stats().pagesLive();
            long fileBefore = Files.size(dir.resolve(io.lobstream.store.tablespace.TablespaceDirs.PAGES));

            assertThatThrownBy(() -> store.put("big", unread(), max + 1, null, null))
                    .isInstanceOf(ValueTooLargeException.class).hasMessageContaining(String.valueOf(max))
                    .satisfies(e -> assertThat(((ValueTooLargeException) e).maxBytes()).isEqualTo(max));
            assertThatThrownBy(() -> store.append("small", unread(), max, null)).isInstanceOf(ValueTooLargeException.class);
            assertThatThrownBy(() -> store.write("small", 50, unread(), max, null)).isInstanceOf(ValueTooLargeException.class);
            assertThatThrownBy(() -> store.putChunk(new Chunk("u", "big", max + 1, 0, 1000, 0, 10, null), unread(), new Source("in", 7)))
                    .isInstanceOf(ValueTooLargeException.class);

            assertThat(store.stats().pagesFree() + store.stats().pagesLive()).isEqualTo(pagesBefore);
            assertThat(Files.size(dir.resolve(io.lobstream.store.tablespace.TablespaceDirs.PAGES))).isEqualTo(fileBefore);
            FsckReport fsck = store.fsck(false);
            assertThat(fsck.problems()).isEmpty();
            assertThat(fsck.pagesUploading()).isZero();
            assertThat(store.current("big")).isEmpty();
            assertSameBytes(read(store, "small"), bytes(100, 1));
            // the store goes on as before
            put(store, "after", bytes(10_000, 2));
            assertSameBytes(read(store, "after"), bytes(10_000, 2));
        }
    }

    @Test
    void aWriteTakesExactlyLengthBytesOfALongerStream() throws IOException {
        try (DefaultLobStore store = open()) {
            byte[] v = bytes(5 * 4064 + 300, 1);
            put(store, "doc", v);
            byte[] data = bytes(1000, 2);
            // 100 bytes announced, 1000 in the stream: the other 900 must not push the base's bytes along
            writeAndCheck(store, v, 4064 + 10, new ByteArrayInputStream(data), data, 100);

            store.append("doc", new ByteArrayInputStream(data), 10, null);
            byte[] appended = Arrays.copyOf(v, v.length + 10);
            System.arraycopy(data, 0, appended, v.length, 10);
            assertSameBytes(read(store, "doc"), appended);
            assertThat(store.fsck(true).problems()).isEmpty();
        }
    }

    /** Writes {@code length} bytes of {@code in} (the first of {@code data}) into "doc" at {@code offset}, and reads back {@code v} so changed. */
    private static void writeAndCheck(DefaultLobStore store, byte[] v, int offset, InputStream in, byte[] data, int length)
            throws IOException {
        store.write("doc", offset, in, length, null);
        System.arraycopy(data, 0, v, offset, length);
        assertSameBytes(read(store, "doc"), v);
    }

    @Test
    void anIdWithASurrogateWithoutItsPairIsRefusedAsItWouldShareAKey() throws IOException {
        try (DefaultLobStore store = open()) {
            put(store, "a?", bytes(10, 1));
            assertThatThrownBy(() -> store.put("a\uD800", new ByteArrayInputStream(bytes(10, 2)), 10, null, null))
                    .isInstanceOf(IllegalArgumentException.class).hasMessage("lobId has a surrogate without its pair at char 1");
            assertThatThrownBy(() -> store.delete("\uDC00b", null)).isInstanceOf(IllegalArgumentException.class);
            put(store, "a\uD83D\uDE00", bytes(10, 3)); // a pair is one code point, as UTF-8 keys it

            assertSameBytes(read(store, "a?"), bytes(10, 1));
            assertSameBytes(read(store, "a\uD83D\uDE00"), bytes(10, 3));
        }
    }

    @Test
    void aStreamThatReturnsNoBytesForABulkReadLosesNoneAndEndsWhereItEnds() throws IOException {
        try (DefaultLobStore store = open()) {
            byte[] v = bytes(3 * 4064 + 50, 1);
            put(store, "doc", v);
            writeAndCheck(store, v, 100, new StutteringStream(bytes(5000, 2)), bytes(5000, 2), 5000);

            assertThatThrownBy(() -> store.write("doc", 0, new StutteringStream(bytes(10, 3)), 20, null))
                    .isInstanceOf(EOFException.class).hasMessageContaining("10 of the 20 bytes");
            assertSameBytes(read(store, "doc"), v);

            // A whole value reads its stream the same way: one that says 0 bytes at its end, not
            // -1, ends the put rather than spinning under the LOB's latch.
            byte[] w = bytes(3 * 4064 + 50, 4);
            store.put("whole", new StutteringStream(w), w.length, null, null);
            assertSameBytes(read(store, "whole"), w);
            InputStream zeroAtEnd = new InputStream() {
                private final InputStream in = new ByteArrayInputStream(bytes(2 * 4064 + 10, 5)); // past a page: both loops

                @Override
                public int read() throws IOException {
                    return in.read();
                }

                @Override
                public int read(byte[] b, int off, int len) throws IOException {
                    return Math.max(0, in.read(b, off, len));
                }
            };
            assertThatThrownBy(() -> store.put("short", zeroAtEnd, 3 * 4064 + 20, null, null)).isInstanceOf(EOFException.class);
            assertThat(store.open("short")).isEmpty();
            assertThat(store.fsck(true).problems()).isEmpty();
        }
    }

    @Test
    void aWriteWhoseStreamEndsEarlyFailsAndChangesNothing() throws IOException {
        try (DefaultLobStore store = open()) {
            byte[] v = bytes(5 * 4064 + 300, 1);
            put(store, "doc", v);
            long free = store.stats().pagesFree();
            assertThatThrownBy(() -> store.write("doc", 4064 + 10, new ByteArrayInputStream(bytes(40, 3)), 100, null))
                    .isInstanceOf(EOFException.class).hasMessageContaining("40 of the 100 bytes");
            assertSameBytes(read(store, "doc"), v);
            assertThat(store.stats().pagesFree()).isEqualTo(free);
            assertThat(store.stats().historyLength()).isZero();
            assertThat(store.fsck(true).problems()).isEmpty();
        }
    }
}
