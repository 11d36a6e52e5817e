package io.lobstream.ingest.writer;

import io.lobstream.store.LobStore;
import io.lobstream.store.LobStoreConfig;
import io.lobstream.store.index.VersionEntry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayInputStream;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** Which pending versions a task produces the undo records of again, and how often. */
class UndoResenderTest {
    static final long EVERY = 30_000;
    static final long TRANSACTION_TIMEOUT = 10_000;
    static final long SLACK = TRANSACTION_TIMEOUT + UndoResender.MARGIN_MS;

    long consumedBefore = Long.MIN_VALUE;
    final UndoResender resender = new UndoResender(UndoResender.Settings.every(partition -> consumedBefore, EVERY, TRANSACTION_TIMEOUT));

    @Test
    void aVersionIsDueOnceItsUndoRecordIsKnownConsumedThenEachTimeAfterTwiceTheWait(@TempDir Path dir) throws Exception {
        try (LobStore store = LobStore.open(dir, LobStoreConfig.defaults())) {
            put(store, "a", 1000);
            put(store, "a", 2000); // the first version is pending purge
            VersionEntry pending = store.pendingToPurge(10).get(0);
            long t0 = pending.supersededAtMillis();

            assertThat(resender.due(0, store, t0 + EVERY)).as("nothing known").isEmpty();
            consumedBefore = t0 + SLACK; // the undo record may have been committed after that
            assertThat(resender.due(0, store, t0 + EVERY)).isEmpty();
            consumedBefore = t0 + SLACK + 1;
            List<VersionEntry> due = resender.due(0, store, t0 + EVERY);
            assertThat(due).extracting(VersionEntry::version).containsExactly(pending.version());

            long t1 = t0 + EVERY;
            assertThat(resender.resent(due, t1)).as("not stuck after one").isEmpty();
            assertThat(resender.due(0, store, t1 + EVERY)).as("purge has not moved").isEmpty();
            consumedBefore = t1 + SLACK + 1; // the record produced again was consumed too, without a reclaim
            assertThat(resender.due(0, store, t1 + EVERY)).as("waits twice the interval after the first").isEmpty();
            assertThat(resender.due(0, store, t1 + 2 * EVERY)).hasSize(1);
            assertThat(resender.resent(due, t1 + 2 * EVERY)).isEmpty();
            assertThat(resender.resent(due, t1 + 6 * EVERY)).as("the third time: named in the writer's log")
                    .extracting(VersionEntry::version).containsExactly(pending.version());
        }
    }

    @Test
    void aVersionProducedAgainAtTheTablespacesOpenCountsFromThen(@TempDir Path dir) throws Exception {
        try (LobStore store = LobStore.open(dir, LobStoreConfig.defaults())) {
            put(store, "b", 1000);
            put(store, "b", 2000);
            VersionEntry pending = store.pendingToPurge(10).get(0);
            long opened = pending.supersededAtMillis() + 10 * EVERY;
            resender.reemittedAll(opened);
            consumedBefore = opened; // consumed what was superseded, not yet what was produced at the open
            assertThat(resender.due(0, store, opened + EVERY)).isEmpty();
            consumedBefore = opened + SLACK + 1;
            assertThat(resender.due(0, store, opened + EVERY)).hasSize(1);
        }
    }

    private static void put(LobStore store, String id, int size) throws Exception {
        byte[] v = new byte[size];
        store.put(id, new ByteArrayInputStream(v), v.length, null, null);
    }
}
