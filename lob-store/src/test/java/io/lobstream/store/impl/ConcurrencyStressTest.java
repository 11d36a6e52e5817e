package io.lobstream.store.impl;

import io.lobstream.store.LobReadHandle;
import io.lobstream.store.LobStore;
import io.lobstream.store.LobStoreConfig;
import io.lobstream.store.fsck.FsckReport;
import io.lobstream.store.index.VersionEntry;
import io.lobstream.store.purge.LocalPurger;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * 8 writers, 4 readers, a reclaimer and a flusher (which also shrinks the file) on one store for a
 * bounded time, in each latching mode. Every value describes itself (its length and seed in its
 * first bytes), so a reader can tell a torn or mixed value from a whole one; at the end every LOB
 * must hold what its writer last wrote, and fsck must be clean.
 */
class ConcurrencyStressTest {
    private static final int IDS = 64;

    @TempDir
    Path dir;

    /**
     * Values end in a trailer (length, CRC32C of the bytes before it), so a reader can tell a torn
     * or mixed value from any real one. Appends keep earlier trailers in place, so truncating to an
     * earlier length also yields a real value.
     */
    static byte[] withTrailer(byte[] prefix) {
        byte[] v = java.util.Arrays.copyOf(prefix, prefix.length + 8);
        java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
        crc.update(prefix);
        ByteBuffer.wrap(v, prefix.length, 8).putInt(v.length).putInt((int) crc.getValue());
        return v;
    }

    static void assertWhole(byte[] got) {
        assertThat(got.length).isGreaterThanOrEqualTo(8);
        ByteBuffer t = ByteBuffer.wrap(got, got.length - 8, 8);
        java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
        crc.update(got, 0, got.length - 8);
        assertThat(t.getInt()).as("trailer length").isEqualTo(got.length);
        assertThat(t.getInt()).as("trailer crc").isEqualTo((int) crc.getValue());
    }

    static byte[] random(SplittableRandom rnd, int n) {
        byte[] b = new byte[n];
        rnd.nextBytes(b);
        return b;
    }

    /** One writer's next write to one of its own LOBs; {@code model} holds their values and valid cut lengths. */
    static void writeOne(LobStore store, String id, SplittableRandom rnd, java.util.Map<String, byte[]> model,
                         java.util.Map<String, java.util.TreeSet<Integer>> cuts) throws IOException {
        byte[] old = model.get(id);
        int op = rnd.nextInt(10);
        byte[] next;
        if (old == null || op < 3) {
            next = withTrailer(random(rnd, rnd.nextInt(60_000)));
            store.put(id, new ByteArrayInputStream(next), next.length, null, null);
            cuts.put(id, new java.util.TreeSet<>());
        } else if (op < 5) {
            // append after the current trailer, which stays valid as a cut point
            next = withTrailer(concat(old, random(rnd, rnd.nextInt(20_000))));
            store.append(id, new ByteArrayInputStream(next, old.length, next.length - old.length), next.length - old.length, null);
            cuts.get(id).add(old.length);
        } else if (op < 8) {
            // rewrite from a random offset to (past) the end: pages before the offset are shared
            int at = rnd.nextInt(old.length - 7);
            next = withTrailer(concat(java.util.Arrays.copyOf(old, at), random(rnd, old.length - 8 - at + rnd.nextInt(10_000))));
            store.write(id, at, new ByteArrayInputStream(next, at, next.length - at), next.length - at, null);
            cuts.get(id).headSet(at + 8, true).clear();
            cuts.get(id).removeIf(c -> c > at);
        } else if (op < 9 && !cuts.get(id).isEmpty()) {
            int to = cuts.get(id).last();
            cuts.get(id).remove(to);
            next = java.util.Arrays.copyOf(old, to);
            store.truncate(id, to, null);
        } else {
            store.delete(id, null);
            model.remove(id);
            return;
        }
        model.put(id, next);
    }

    static byte[] concat(byte[] a, byte[] b) {
        byte[] out = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }

    @ParameterizedTest(name = "prealloc={0} downgrade={1} optimistic={2}")
    @CsvSource({"true,true,true", "false,false,false", "true,false,true", "false,true,false"})
    void writersReadersAndReclaimerTogether(boolean prealloc, boolean downgrade, boolean optimistic) throws Exception {
        LobStoreConfig cfg = new LobStoreConfig(Map.of("lob.prealloc", prealloc, "lob.latch.downgrade", downgrade,
                "lob.optimistic.update", optimistic, "lob.page.size", 4096, "lob.shrink.min.pages", 16));
        AtomicBoolean stop = new AtomicBoolean();
        AtomicLong writes = new AtomicLong();
        AtomicLong reads = new AtomicLong();
        ConcurrentLinkedQueue<Throwable> failures = new ConcurrentLinkedQueue<>();
        Map<String, byte[]> last = new ConcurrentHashMap<>();
        try (DefaultLobStore store = DefaultLobStore.open(dir, cfg)) {
            List<Thread> threads = new ArrayList<>();
            for (int w = 0; w < 8; w++) {
                long seed0 = w;
                int writer = w;
                threads.add(new Thread(() -> {
                    SplittableRandom rnd = new SplittableRandom(seed0);
                    // each writer owns the ids = writer (mod 8), so it knows their values for partial updates
                    java.util.Map<String, byte[]> mine = new java.util.HashMap<>();
                    java.util.Map<String, java.util.TreeSet<Integer>> cuts = new java.util.HashMap<>();
                    while (!stop.get()) {
                        try {
                            String id = "lob-" + (writer + 8 * rnd.nextInt(IDS / 8));
                            writeOne(store, id, rnd, mine, cuts);
                            writes.incrementAndGet();
                        } catch (Throwable t) {
                            failures.add(t);
                        }
                    }
                    last.putAll(mine);
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
                                assertWhole(in.readAllBytes());
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
                    try { // the scan too: a failure there ended the thread, and reclaims, with nothing to fail the test
                        List<VersionEntry> pending = new ArrayList<>();
                        store.forEachPending(pending::add);
                        for (VersionEntry e : pending) {
                            // the pages purge would find: what the root names, less what the successor retained
                            store.reclaim(e.lobId(), e.version(), e.extents(), null);
                        }
                    } catch (Throwable t) {
                        failures.add(t);
                    }
                }
            }, "reclaimer"));
            threads.add(flusher(store, stop, failures));
            AtomicLong checks = new AtomicLong();
            threads.add(new Thread(() -> {
                // the online check reads values while they are replaced, purged and moved: it must find nothing wrong
                while (!stop.get()) {
                    try {
                        List<String> problems = store.fsckOnline().problems();
                        if (!problems.isEmpty()) {
                            failures.add(new AssertionError("online fsck under load: " + problems));
                        }
                        checks.incrementAndGet();
                        Thread.sleep(5); // its first part holds the writers back: not back to back
                    } catch (Throwable t) {
                        failures.add(t);
                    }
                }
            }, "online-fsck"));
            threads.add(new Thread(() -> {
                while (!stop.get()) {
                    try {
                        store.compact(); // moves live versions the check may be reading: not while it holds their pin
                        Thread.sleep(5);
                    } catch (Throwable t) {
                        failures.add(t);
                    }
                }
            }, "compactor"));
            threads.forEach(Thread::start);
            // 2.5 s of load, and on a slow machine until every kind of thread has done something
            await().pollDelay(Duration.ofMillis(2500)).atMost(Duration.ofSeconds(60))
                    .until(() -> writes.get() > 0 && reads.get() > 0 && checks.get() > 0);
            stop.set(true);
            for (Thread t : threads) {
                t.join(30_000);
                assertThat(t.isAlive()).as(t.getName() + " ended (a deadlock after its first pass would pass unseen)").isFalse();
            }
            assertThat(failures).isEmpty();
            assertThat(writes.get()).isPositive();
            assertThat(reads.get()).isPositive();
            FsckReport report = store.fsck(true);
            assertThat(report.problems()).isEmpty();
            assertThat(report.ok()).isTrue();
            assertHolds(store, last, IDS);
        }
        // and it reopens to the same state
        try (DefaultLobStore store = DefaultLobStore.open(dir, cfg)) {
            assertThat(store.fsck(true).ok()).isTrue();
            assertHolds(store, last, IDS);
        }
    }

    /** Calls flush() over and over: forces, syncs, and cuts the file whenever its end is free. */
    private static Thread flusher(LobStore store, AtomicBoolean stop, ConcurrentLinkedQueue<Throwable> failures) {
        return new Thread(() -> {
            while (!stop.get()) {
                try {
                    store.flush();
                    Thread.sleep(1);
                } catch (Throwable t) {
                    failures.add(t);
                }
            }
        }, "flusher");
    }

    /** Each of lob-0 .. lob-(ids-1) holds its value in {@code values}, or is absent if it has none there. */
    private static void assertHolds(LobStore store, Map<String, byte[]> values, int ids) throws IOException {
        for (int i = 0; i < ids; i++) {
            String id = "lob-" + i;
            if (values.containsKey(id)) {
                DefaultLobStoreTest.assertSameBytes(DefaultLobStoreTest.read(store, id), values.get(id));
            } else {
                assertThat(store.current(id)).as(id).isEmpty();
            }
        }
    }

    /**
     * Writers keep putting while a purger reclaims (reading root pages through its own read-only
     * file, as a purge worker does) and a flusher flushes. Every 300 puts the writers switch between
     * large and small values, so the file grows and then its end empties, again and again: cuts
     * happen while writers allocate, and growth follows cuts at once. No value may lose a page.
     */
    @ParameterizedTest(name = "prealloc={0} downgrade={1} optimistic={2}")
    @CsvSource({"true,true,true", "false,false,false"})
    void writersKeepPuttingWhileFlushesShrinkTheFile(boolean prealloc, boolean downgrade, boolean optimistic) throws Exception {
        LobStoreConfig cfg = new LobStoreConfig(Map.of("lob.prealloc", prealloc, "lob.latch.downgrade", downgrade,
                "lob.optimistic.update", optimistic, "lob.page.size", 4096, "lob.shrink.min.pages", 16, "lob.sync", false,
                "lob.history.max", 32)); // backpressure keeps the writers to purge's pace, so old versions do not hold the end
        AtomicBoolean stop = new AtomicBoolean();
        ConcurrentLinkedQueue<Throwable> failures = new ConcurrentLinkedQueue<>();
        Map<String, byte[]> last = new ConcurrentHashMap<>();
        AtomicLong puts = new AtomicLong();
        try (DefaultLobStore store = DefaultLobStore.open(dir, cfg)) {
            List<Thread> threads = new ArrayList<>();
            for (int w = 0; w < 4; w++) {
                int writer = w;
                threads.add(new Thread(() -> {
                    SplittableRandom rnd = new SplittableRandom(writer);
                    while (!stop.get()) {
                        try {
                            boolean large = puts.getAndIncrement() / 300 % 2 == 0;
                            byte[] v = withTrailer(random(rnd, large ? 20_000 + rnd.nextInt(100_000) : rnd.nextInt(8_000)));
                            String id = "lob-" + (writer + 4 * rnd.nextInt(8));
                            store.put(id, new ByteArrayInputStream(v), v.length, null, null);
                            last.put(id, v);
                        } catch (Throwable t) {
                            failures.add(t);
                        }
                    }
                }, "writer-" + w));
            }
            threads.add(new Thread(() -> {
                try (LocalPurger purger = new LocalPurger(store, 64)) {
                    while (!stop.get()) {
                        purger.purgeOnce();
                    }
                } catch (Throwable t) {
                    failures.add(t);
                }
            }, "purger"));
            threads.add(flusher(store, stop, failures));
            threads.forEach(Thread::start);
            // 2 s of load, and on a slow machine until a flush has cut the file at least once
            await().pollDelay(Duration.ofMillis(2000)).atMost(Duration.ofSeconds(60))
                    .until(() -> store.metrics().shrinks() > 0);
            stop.set(true);
            for (Thread t : threads) {
                t.join(30_000);
                assertThat(t.isAlive()).as(t.getName() + " ended (a deadlock after its first pass would pass unseen)").isFalse();
            }
            assertThat(failures).isEmpty();
            assertThat(store.metrics().shrinks()).as("shrinks").isPositive();
            assertHolds(store, last, 32);
            assertThat(store.fsck(true).problems()).isEmpty();
        }
        try (DefaultLobStore store = DefaultLobStore.open(dir, cfg)) {
            assertHolds(store, last, 32);
            assertThat(store.fsck(true).problems()).isEmpty();
        }
    }
}
