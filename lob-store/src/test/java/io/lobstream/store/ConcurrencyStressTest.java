package io.lobstream.store;

import io.lobstream.store.fsck.FsckReport;
import io.lobstream.store.index.VersionEntry;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * 8 writers, 4 readers and a reclaimer on one store for a bounded time, in each latching mode.
 * Every value describes itself (its length and seed in its first bytes), so a reader can tell a
 * torn or mixed value from a whole one; at the end fsck must be clean.
 */
class ConcurrencyStressTest {
    private static final int IDS = 64;

    @TempDir
    Path dir;

    static byte[] value(long seed, int length) {
        byte[] v = new byte[length];
        new SplittableRandom(seed).nextBytes(v);
        ByteBuffer.wrap(v).putInt(length).putLong(seed);
        return v;
    }

    @ParameterizedTest(name = "prealloc={0} downgrade={1} optimistic={2}")
    @CsvSource({"true,true,true", "false,false,false", "true,false,true", "false,true,false"})
    void writersReadersAndReclaimerTogether(boolean prealloc, boolean downgrade, boolean optimistic) throws Exception {
        LobStoreConfig cfg = new LobStoreConfig(Map.of("lob.prealloc", prealloc, "lob.latch.downgrade", downgrade,
                "lob.optimistic.update", optimistic, "lob.page.size", 4096));
        AtomicBoolean stop = new AtomicBoolean();
        AtomicLong writes = new AtomicLong();
        AtomicLong reads = new AtomicLong();
        ConcurrentLinkedQueue<Throwable> failures = new ConcurrentLinkedQueue<>();
        try (DefaultLobStore store = DefaultLobStore.open(dir, cfg)) {
            List<Thread> threads = new ArrayList<>();
            for (int w = 0; w < 8; w++) {
                long seed0 = w;
                threads.add(new Thread(() -> {
                    SplittableRandom rnd = new SplittableRandom(seed0);
                    while (!stop.get()) {
                        try {
                            String id = "lob-" + rnd.nextInt(IDS);
                            if (rnd.nextInt(10) == 0) {
                                store.delete(id, null);
                            } else {
                                int len = 12 + rnd.nextInt(60_000);
                                byte[] v = value(rnd.nextLong(), len);
                                store.put(id, new ByteArrayInputStream(v), len, null, null);
                            }
                            writes.incrementAndGet();
                        } catch (Throwable t) {
                            failures.add(t);
                        }
                    }
                }, "writer-" + w));
            }
            for (int r = 0; r < 4; r++) {
                long seed0 = 100 + r;
                threads.add(new Thread(() -> {
                    SplittableRandom rnd = new SplittableRandom(seed0);
                    while (!stop.get()) {
                        try {
                            Optional<LobReadHandle> h = store.open("lob-" + rnd.nextInt(IDS));
                            if (h.isEmpty()) {
                                continue;
                            }
                            try (LobReadHandle handle = h.get(); InputStream in = handle.stream(0, handle.length())) {
                                byte[] got = in.readAllBytes();
                                ByteBuffer b = ByteBuffer.wrap(got);
                                int len = b.getInt();
                                long seed = b.getLong();
                                assertThat(got.length).isEqualTo(len);
                                assertThat(got).isEqualTo(value(seed, len));
                            }
                            reads.incrementAndGet();
                        } catch (Throwable t) {
                            failures.add(t);
                        }
                    }
                }, "reader-" + r));
            }
            threads.add(new Thread(() -> {
                while (!stop.get()) {
                    List<VersionEntry> pending = new ArrayList<>();
                    store.forEachPending(pending::add);
                    for (VersionEntry e : pending) {
                        try {
                            store.reclaim(e.lobId(), e.version(), e.extents(), null);
                        } catch (Throwable t) {
                            failures.add(t);
                        }
                    }
                }
            }, "reclaimer"));
            threads.forEach(Thread::start);
            Thread.sleep(2500);
            stop.set(true);
            for (Thread t : threads) {
                t.join(30_000);
            }
            assertThat(failures).isEmpty();
            assertThat(writes.get()).isPositive();
            assertThat(reads.get()).isPositive();
            FsckReport report = store.fsck(true);
            assertThat(report.problems()).isEmpty();
            assertThat(report.ok()).isTrue();
        }
        // and it reopens to the same state
        try (DefaultLobStore store = DefaultLobStore.open(dir, cfg)) {
            assertThat(store.fsck(true).ok()).isTrue();
        }
    }
}
