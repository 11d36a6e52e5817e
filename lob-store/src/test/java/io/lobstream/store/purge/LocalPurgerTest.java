package io.lobstream.store.purge;

import io.lobstream.store.LobStore;
import io.lobstream.store.LobStoreConfig;
import io.lobstream.store.allocator.Extent;
import io.lobstream.store.index.LobIndex;
import io.lobstream.store.index.VersionEntry;
import io.lobstream.store.page.PageCodec;
import io.lobstream.store.page.PageHeader;
import io.lobstream.store.page.PageType;
import io.lobstream.store.tablespace.TablespaceDirs;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static io.lobstream.store.purge.PurgeReaderTest.put;
import static org.assertj.core.api.Assertions.assertThat;

class LocalPurgerTest {
    private static final int PAGE = 4096;

    @TempDir
    Path dir;

    private void writePage(long pageNo, ByteBuffer page) throws IOException {
        try (FileChannel ch = FileChannel.open(dir.resolve(TablespaceDirs.PAGES), StandardOpenOption.WRITE)) {
            ch.write(page, pageNo * PAGE);
        }
    }

    private static VersionEntry supersede(LobStore store, String id) throws IOException {
        put(store, id, 10_000, 1);
        return put(store, id, 10_000, 2).superseded().orElseThrow();
    }

    /**
     * One stale pending version used to stop local purge for good: every purgeOnce threw on it. So did a corrupt one, and a
     * node's catch-up, which purges with this, failed at it at every retry: the partition stayed away.
     */
    @Test
    void staleAndCorruptVersionsAreSkippedAndHoldUpNoBatch() throws IOException {
        try (LobStore store = LobStore.open(dir, new LobStoreConfig(Map.of(LobStoreConfig.PAGE_SIZE.name(), PAGE)))) {
            VersionEntry stale = supersede(store, "a"); // first in index order
            supersede(store, "b");
            supersede(store, "c");
            // a's root page now holds a page of another kind, as after a reclaim and a reuse of the page
            ByteBuffer other = ByteBuffer.allocate(PAGE);
            PageCodec.seal(other, stale.rootPage(), new PageHeader(PageType.DATA, PageCodec.lobIdHash("x"), 1, 1, 0));
            writePage(stale.rootPage(), other);

            try (LocalPurger purger = new LocalPurger(store, 1)) {
                int dealtWith = 0;
                for (int n; (n = purger.purgeOnce()) > 0; ) {
                    dealtWith += n;
                }
                assertThat(dealtWith).as("a skipped, b and c reclaimed").isEqualTo(3);
                assertThat(store.stats().historyLength()).isEqualTo(1);
                assertThat(purger.purgeOnce()).isZero();

                VersionEntry corrupt = supersede(store, "d");
                try (FileChannel ch = FileChannel.open(dir.resolve(TablespaceDirs.PAGES), StandardOpenOption.WRITE)) {
                    ch.write(ByteBuffer.wrap(new byte[]{(byte) 0xff}), corrupt.rootPage() * PAGE + 100);
                }
                supersede(store, "e");
                dealtWith = 0;
                for (int n; (n = purger.purgeOnce()) > 0; ) {
                    dealtWith += n;
                }
                assertThat(dealtWith).as("d skipped, e reclaimed").isEqualTo(2);
                assertThat(store.stats().historyLength()).as("a and d").isEqualTo(2);
                assertThat(store.fsck(false).problems()).anySatisfy(p -> assertThat(p).contains("page " + corrupt.rootPage()));
            }
        }
    }

    /**
     * A pending version whose index entry names other pages than its root (damage fsck reports) is refused by the store:
     * it used to come back in every batch, and a batch of nothing else ended a replay's purge with history left.
     */
    @Test
    void aVersionWhoseReclaimIsRefusedIsSkippedAndEndsNoDrainEarly() throws IOException {
        LobStoreConfig config = new LobStoreConfig(Map.of(LobStoreConfig.PAGE_SIZE.name(), PAGE));
        VersionEntry damaged;
        try (LobStore store = LobStore.open(dir, config)) {
            damaged = supersede(store, "a"); // first in index order
            supersede(store, "b");
        }
        try (LobIndex index = LobIndex.open(dir.resolve(TablespaceDirs.INDEX))) {
            List<Extent> more = new ArrayList<>(damaged.extents());
            more.add(new Extent(1_000, 1)); // a page nothing else names
            index.writeSync(index.newBatch().putPending(VersionEntry.current("a", damaged.version(), damaged.rootPage(),
                    damaged.byteLength(), damaged.valueCrc32c(), more).superseded(damaged.cause(), damaged.sourceOffset())));
        }
        try (LobStore store = LobStore.open(dir, config); LocalPurger purger = new LocalPurger(store, 1)) {
            int dealtWith = 0;
            for (int n; (n = purger.purgeOnce()) > 0; ) {
                dealtWith += n;
            }
            assertThat(dealtWith).as("a skipped, b reclaimed").isEqualTo(2);
            assertThat(store.stats().historyLength()).isEqualTo(1);
        }
    }
}
