package io.lobstream.store.impl;

import io.lobstream.store.LobStoreConfig;
import org.junit.jupiter.api.Test;

import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Without lob.sync.each.write, a writer on another thread than a flush's must not have its index entry made durable by
 * that flush's WAL sync while its pages, written after the flush's force, are not: it forces them itself then.
 */
class PagesFirstTest {
    private final AtomicInteger forces = new AtomicInteger();
    private final GroupSync pageSync = new GroupSync(forces::incrementAndGet, 0, () -> { });

    @Test
    void aWriterForcesItsPagesOnlyWhileAFlushIsBetweenItsForceAndItsSync() throws Exception {
        PagesFirst pagesFirst = new PagesFirst(new LobStoreConfig(Map.of()), pageSync);
        pagesFirst.beforeIndexNamesPages();
        assertThat(forces).as("no flush under way: the next flush forces first").hasValue(0);

        CountDownLatch inFlush = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        Thread flush = new Thread(() -> {
            try {
                pagesFirst.flush(() -> {
                    inFlush.countDown();
                    try {
                        release.await();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                });
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        });
        flush.start();
        assertThat(inFlush.await(10, TimeUnit.SECONDS)).isTrue();
        pagesFirst.beforeIndexNamesPages();
        assertThat(forces).as("a flush under way: its force may have come before these pages").hasValue(1);
        release.countDown();
        flush.join(10_000);

        pagesFirst.beforeIndexNamesPages();
        assertThat(forces).as("the flush is over").hasValue(1);
    }

    @Test
    void withSyncEachWriteEveryWriterForcesAndWithoutSyncNoneDoes() throws Exception {
        new PagesFirst(new LobStoreConfig(Map.of(LobStoreConfig.SYNC_EACH_WRITE.name(), true)), pageSync).beforeIndexNamesPages();
        assertThat(forces).hasValue(1);
        PagesFirst unsynced = new PagesFirst(new LobStoreConfig(Map.of(LobStoreConfig.SYNC.name(), false)), pageSync);
        unsynced.flush(unsynced::beforeIndexNamesPages);
        assertThat(forces).as("lob.sync=false promises nothing").hasValue(1);
    }

    /** A relocation's, a reservation's or a tail cut's WAL sync is ordered as a flush's: pages forced first, writers meanwhile force theirs. */
    @Test
    void aWalSyncOfItsOwnForcesThePagesFirstAndHoldsWritersToTheRule() throws Exception {
        PagesFirst pagesFirst = new PagesFirst(new LobStoreConfig(Map.of()), pageSync);
        java.util.List<String> order = new java.util.ArrayList<>();
        pagesFirst.syncWal(() -> order.add("force"), () -> {
            pagesFirst.beforeIndexNamesPages(); // another writer, naming its pages while this sync is under way
            order.add("wal");
        });
        assertThat(order).containsExactly("force", "wal");
        assertThat(forces).as("the writer forced its own pages").hasValue(1);

        order.clear();
        new PagesFirst(new LobStoreConfig(Map.of(LobStoreConfig.SYNC_EACH_WRITE.name(), true)), pageSync)
                .syncWal(() -> order.add("force"), () -> order.add("wal"));
        assertThat(order).as("each write forces its own pages already").containsExactly("wal");
    }
}
