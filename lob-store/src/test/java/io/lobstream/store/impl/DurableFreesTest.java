package io.lobstream.store.impl;

import io.lobstream.store.LobStoreConfig;
import io.lobstream.store.ReclaimOutcome;
import io.lobstream.store.Source;
import io.lobstream.store.allocator.Extent;
import io.lobstream.store.index.VersionEntry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static io.lobstream.store.impl.DefaultLobStoreTest.bytes;
import static io.lobstream.store.impl.DefaultLobStoreTest.put;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * With lob.sync.each.write, pages a reclaim frees are not granted before a WAL sync has made the reclaim durable: the next
 * write allocates before its own sync, so it gets other pages, and a power loss cannot bring the reclaimed version back
 * onto pages another version overwrote.
 */
class DurableFreesTest {
    @TempDir
    Path dir;

    @Test
    void pagesAReclaimFreesWaitForTheWalSyncThatMakesItDurable() throws Exception {
        LobStoreConfig config = new LobStoreConfig(Map.of(LobStoreConfig.PAGE_SIZE.name(), 4096, LobStoreConfig.SYNC_EACH_WRITE.name(), true,
                LobStoreConfig.SHRINK_MIN_PAGES.name(), 0));
        try (DefaultLobStore store = DefaultLobStore.open(dir, config)) {
            put(store, "a", bytes(40_000, 1));
            VersionEntry old = put(store, "a", bytes(40_000, 2)).superseded().orElseThrow();
            long freeBefore = store.stats().pagesFree();
            assertThat(store.reclaim("a", old.version(), old.extents(), null)).isEqualTo(ReclaimOutcome.APPLIED);

            assertThat(store.stats().pagesFree()).as("free, waiting for a sync").isEqualTo(freeBefore + old.pageCount());
            assertThat(store.fsck(true).problems()).as("neither leaked nor claimed twice").isEmpty();
            VersionEntry next = put(store, "b", bytes(40_000, 3)).written();
            assertThat(overlap(next.extents(), old.extents())).as("allocated before its own sync: not the reclaimed pages").isZero();

            VersionEntry after = put(store, "c", bytes(40_000, 4)).written(); // b's sync made the reclaim durable
            assertThat(overlap(after.extents(), old.extents())).as("granted once durable").isPositive();
            assertThat(store.fsck(true).problems()).isEmpty();
        }
    }

    /**
     * Without it (the pipeline), a reclaim from lob.reclaim frees its pages at once: one lost in a crash comes again from
     * Kafka. One no Kafka transaction would apply again (no source: LocalPurger's, in a catch-up) frees them only once a
     * flush has made it durable.
     */
    @Test
    void withoutSyncEachWriteAReclaimFromKafkaFreesAtOnceAndOneWithNoSourceAtTheNextFlush() throws Exception {
        LobStoreConfig config = new LobStoreConfig(Map.of(LobStoreConfig.PAGE_SIZE.name(), 4096, LobStoreConfig.SHRINK_MIN_PAGES.name(), 0));
        try (DefaultLobStore store = DefaultLobStore.open(dir, config)) {
            put(store, "a", bytes(40_000, 1));
            VersionEntry old = put(store, "a", bytes(40_000, 2)).superseded().orElseThrow();
            store.reclaim("a", old.version(), old.extents(), new Source("reclaim-0", 0));
            VersionEntry next = put(store, "b", bytes(40_000, 3)).written();
            assertThat(overlap(next.extents(), old.extents())).as("the pipeline's reclaims come again from Kafka after a loss").isPositive();

            VersionEntry replaced = put(store, "b", bytes(40_000, 4)).superseded().orElseThrow();
            long freeBefore = store.stats().pagesFree();
            assertThat(store.reclaim("b", replaced.version(), replaced.extents(), null)).isEqualTo(ReclaimOutcome.APPLIED);
            assertThat(store.stats().pagesFree()).as("free, waiting for a flush").isEqualTo(freeBefore + replaced.pageCount());
            assertThat(overlap(put(store, "c", bytes(40_000, 5)).written().extents(), replaced.extents())).as("before the flush").isZero();
            store.flush();
            assertThat(overlap(put(store, "d", bytes(40_000, 6)).written().extents(), replaced.extents())).as("after it").isPositive();
            assertThat(store.fsck(true).problems()).isEmpty();
        }
    }

    private static long overlap(List<Extent> a, List<Extent> b) {
        long n = 0;
        for (Extent x : a) {
            for (Extent y : b) {
                n += Math.max(0, Math.min(x.endPage(), y.endPage()) - Math.max(x.firstPage(), y.firstPage()));
            }
        }
        return n;
    }
}
