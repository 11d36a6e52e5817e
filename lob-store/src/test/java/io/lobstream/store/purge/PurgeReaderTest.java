package io.lobstream.store.purge;

import io.lobstream.store.LobStore;
import io.lobstream.store.LobStoreConfig;
import io.lobstream.store.WriteResult;
import io.lobstream.store.allocator.Extent;
import io.lobstream.store.index.VersionEntry;
import io.lobstream.store.page.PageType;
import io.lobstream.store.page.UnwrittenPageException;
import io.lobstream.store.tablespace.TablespaceDirs;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.StandardOpenOption;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/** The four prefetch / skip-load combinations find exactly the same pages for the same backlog; stale roots are told from corrupt ones. */
class PurgeReaderTest {
    @TempDir
    Path dir;

    static WriteResult put(LobStore store, String id, int size, long seed) throws IOException {
        byte[] b = new byte[size];
        new Random(seed).nextBytes(b);
        return store.put(id, new ByteArrayInputStream(b), b.length, null, null);
    }

    @Test
    void allFourCombinationsReclaimIdenticalExtents() throws IOException {
        // 4 KiB pages and a fragmented file, so some versions need INDEX pages; sizes from inline-only to 2 MB
        LobStoreConfig cfg = new LobStoreConfig(Map.of("lob.page.size", 4096, "lob.prealloc", false));
        List<VersionEntry> backlog = new ArrayList<>();
        try (LobStore store = LobStore.open(dir, cfg)) {
            for (int i = 0; i < 1200; i++) {
                put(store, "filler" + i, 5000, i);
            }
            for (int i = 0; i < 1200; i += 2) {
                VersionEntry gone = store.delete("filler" + i, null).orElseThrow();
                store.reclaim(gone.lobId(), gone.version(), gone.extents(), null);
            }
            store.flush(); // a reclaim with no source frees its pages at the next flush
            int[] sizes = {10, 3000, 5000, 40_000, 300_000, 2_000_000};
            Random rnd = new Random(1);
            for (int round = 0; round < 4; round++) {
                for (int i = 0; i < 12; i++) {
                    Optional<VersionEntry> old = put(store, "lob" + i, sizes[rnd.nextInt(sizes.length)], round * 100L + i).superseded();
                    old.ifPresent(backlog::add);
                }
            }
            store.flush();
            assertThat(backlog).hasSize(36);
            assertThat(backlog.stream().mapToInt(e -> e.extents().size()).max().orElse(0)).as("a fragmented version").isGreaterThan(1);

            List<PurgeReader.Request> requests = backlog.stream()
                    .map(LocalPurger::request).toList();
            Map<String, List<List<Extent>>> found = new LinkedHashMap<>();
            Map<String, PurgeReader> readers = new LinkedHashMap<>();
            for (boolean prefetch : new boolean[]{true, false}) {
                for (boolean skipLoad : new boolean[]{true, false}) {
                    LobStoreConfig c = cfg.with("lob.purge.prefetch", prefetch).with("lob.purge.skip.load", skipLoad)
                            .with("lob.purge.prefetch.window", 4);
                    PurgeReader reader = new PurgeReader(dir, c, 0);
                    List<List<Extent>> extents = new ArrayList<>();
                    for (PurgeReader.Result r : reader.scan(requests)) {
                        assertThat(r.ok()).as("%s: %s", r.request(), r.failure()).isTrue();
                        extents.add(Extent.coalesce(r.extents()));
                    }
                    String key = "prefetch=" + prefetch + ",skipLoad=" + skipLoad;
                    found.put(key, extents);
                    readers.put(key, reader);
                }
            }
            List<List<Extent>> expected = backlog.stream().map(e -> Extent.coalesce(e.extents())).toList();
            found.forEach((key, extents) -> assertThat(extents).as(key).isEqualTo(expected));

            long roots = backlog.size();
            readers.forEach((key, reader) -> {
                assertThat(reader.pagesRead(PageType.ROOT)).as(key).isEqualTo(roots);
                assertThat(reader.pagesRead(PageType.INDEX)).as(key + ": some version needs index pages").isPositive();
                long data = reader.pagesRead(PageType.DATA);
                if (key.endsWith("skipLoad=true")) {
                    assertThat(data).as(key + ": skip-load reads no data page").isZero();
                } else {
                    assertThat(data).as(key + ": every data page read").isPositive();
                }
                assertThat(reader.inFlight()).as(key + ": nothing left in flight").isZero();
                reader.close();
            });
            assertThat(readers.get("prefetch=true,skipLoad=false").pagesRead(PageType.DATA))
                    .isEqualTo(readers.get("prefetch=false,skipLoad=false").pagesRead(PageType.DATA));
        }
    }

    /**
     * A scan told to stop (a purge transaction at its deadline) returns a prefix, in order: at least the first
     * request, and with prefetch those already started; never a gap. Told nothing, every request.
     */
    @Test
    void aScanToldToStopReturnsAPrefixInOrder() throws IOException {
        LobStoreConfig cfg = new LobStoreConfig(Map.of("lob.page.size", 4096));
        try (LobStore store = LobStore.open(dir, cfg)) {
            List<PurgeReader.Request> requests = new ArrayList<>();
            for (int i = 0; i < 10; i++) {
                put(store, "lob" + i, 20_000, i);
                requests.add(LocalPurger.request(put(store, "lob" + i, 20_000, 100 + i).superseded().orElseThrow()));
            }
            store.flush();
            for (boolean prefetch : new boolean[]{true, false}) {
                LobStoreConfig c = cfg.with("lob.purge.prefetch", prefetch).with("lob.purge.prefetch.window", 4);
                try (PurgeReader reader = new PurgeReader(dir, c, 0)) {
                    assertThat(reader.scan(requests, () -> true)).as("prefetch %s: stopped at once", prefetch)
                            .extracting(PurgeReader.Result::request).containsExactly(requests.get(0));
                    int[] asked = {0};
                    List<PurgeReader.Result> some = reader.scan(requests, () -> ++asked[0] > 5);
                    assertThat(some).extracting(PurgeReader.Result::request).as("prefetch %s", prefetch)
                            .containsExactlyElementsOf(requests.subList(0, some.size()));
                    assertThat(some.size()).isBetween(2, 9);
                    assertThat(some).allMatch(PurgeReader.Result::ok);
                    assertThat(reader.scan(requests, () -> false)).hasSize(requests.size());
                    // the stopped scan's reads started ahead end on their own, after it returned (CI saw one still going)
                    await().atMost(Duration.ofSeconds(10)).until(() -> reader.inFlight() == 0);
                }
            }
        }
    }

    /**
     * Told to stop while scans started ahead have not finished (large values read whole, a slow disk), a prefetching
     * scan gives up those whose turn has not come rather than wait for the whole window: a purge transaction at its
     * deadline commits after one version's scan, not a window's.
     */
    @Test
    // a scan that waited for the held scans would wait for good, in a join no interrupt ends
    @Timeout(value = 60, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void aStoppedScanGivesUpTheScansStartedAheadThatHaveNotFinished() throws IOException {
        LobStoreConfig cfg = new LobStoreConfig(Map.of("lob.page.size", 4096));
        try (LobStore store = LobStore.open(dir, cfg)) {
            List<PurgeReader.Request> requests = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                put(store, "lob" + i, 40_000, i);
                requests.add(LocalPurger.request(put(store, "lob" + i, 40_000, 100 + i).superseded().orElseThrow()));
            }
            store.flush();
            LobStoreConfig c = cfg.with("lob.purge.prefetch", true).with("lob.purge.skip.load", false).with("lob.purge.prefetch.window", 4);
            // more requests than the window (told to stop as the fifth would start), and no more (every one started first)
            for (List<PurgeReader.Request> batch : List.of(requests, requests.subList(0, 4))) {
                // one thread, which holds every scan after the first until the call returned: those have not finished
                // when their turn comes, however fast the machine
                CountDownLatch returned = new CountDownLatch(1);
                AtomicInteger started = new AtomicInteger();
                ExecutorService oneThread = new ThreadPoolExecutor(1, 1, 0, TimeUnit.SECONDS, new LinkedBlockingQueue<>()) {
                    @Override
                    protected void beforeExecute(Thread t, Runnable r) {
                        if (started.incrementAndGet() > 1) {
                            try {
                                returned.await();
                            } catch (InterruptedException e) {
                                Thread.currentThread().interrupt();
                            }
                        }
                    }
                };
                try (PurgeReader reader = new PurgeReader(dir, c, 0, oneThread)) {
                    int[] asked = {0};
                    // four scans started (asked three times), the first collected, then told to stop
                    List<PurgeReader.Result> some = reader.scan(batch, () -> ++asked[0] > 3);
                    returned.countDown();
                    assertThat(some).extracting(PurgeReader.Result::request).as("%d requests", batch.size())
                            .containsExactly(requests.get(0));
                    assertThat(some).allMatch(PurgeReader.Result::ok);
                    await().atMost(Duration.ofSeconds(30)).until(() -> reader.inFlight() == 0);
                    assertThat(reader.pagesRead(PageType.ROOT)).as("the scans given up read no page").isEqualTo(1);
                } finally {
                    oneThread.shutdownNow();
                }
            }
        }
    }

    /**
     * An undo record seen again after its version was reclaimed: a root page that reads as zeros (cut by
     * a shrink, the file grown back over it) is stale, as one granted to another version is; one that is
     * neither stale nor intact is corrupt.
     */
    @Test
    void anUnwrittenRootIsStaleAndAGarbledOneCorrupt() throws IOException {
        LobStoreConfig cfg = new LobStoreConfig(Map.of("lob.page.size", 4096));
        try (LobStore store = LobStore.open(dir, cfg)) {
            put(store, "a", 3000, 1);
            put(store, "b", 3000, 2);
            VersionEntry zeroed = put(store, "a", 3000, 3).superseded().orElseThrow();
            VersionEntry garbled = put(store, "b", 3000, 4).superseded().orElseThrow();
            store.flush();
            try (FileChannel pages = FileChannel.open(dir.resolve(TablespaceDirs.PAGES), StandardOpenOption.WRITE)) {
                pages.write(ByteBuffer.allocate(4096), zeroed.rootPage() * 4096);
                byte[] noise = new byte[4096];
                Arrays.fill(noise, (byte) 0x55);
                pages.write(ByteBuffer.wrap(noise), garbled.rootPage() * 4096);
            }
            try (PurgeReader reader = new PurgeReader(dir, cfg, 0)) {
                List<PurgeReader.Result> results = reader.scan(List.of(LocalPurger.request(zeroed), LocalPurger.request(garbled)));
                assertThat(results.get(0).stale()).as("%s", results.get(0).failure()).isTrue();
                assertThat(results.get(0).failure()).isInstanceOf(UnwrittenPageException.class);
                assertThat(results.get(1).ok()).isFalse();
                assertThat(results.get(1).stale()).isFalse();
                assertThat(results.get(1).failure()).hasMessageContaining("page " + garbled.rootPage());
            }
        }
    }
}
