package io.lobstream.store.impl;

import io.lobstream.store.Chunk;
import io.lobstream.store.ChunkResult;
import io.lobstream.store.LobReadHandle;
import io.lobstream.store.LobStore;
import io.lobstream.store.LobStoreConfig;
import io.lobstream.store.fsck.FsckReport;
import io.lobstream.store.purge.LocalPurger;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.ShrinkingMode;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Model-based test: random sequences of put / write / append / truncate / delete / burst /
 * reclaim / pin / unpin / flush / reopen run against the engine and against a map of byte arrays, over
 * random switch combinations, page sizes and shrink thresholds. After every step fsck must be
 * clean and every LOB must read back as the model says; a pinned reader must keep reading the
 * version it pinned, even after later partial updates shared its pages and purge ran; after a
 * flush no free tail of the shrink threshold's length is left at the end of the file.
 */
class LobStoreModelTest {

    sealed interface Action permits Put, Upload, Write, Append, Truncate, Delete, Burst, Reclaim, Pin, Unpin, Flush, Compact, Reopen {
    }

    record Put(String id, int size, int seed) implements Action { }
    /** A chunked PUT; {@code abandonAfter < chunks} stops sending there and expires the upload. */
    record Upload(String id, int size, int chunks, int abandonAfter, int seed) implements Action { }
    record Write(String id, double at, int size, int seed) implements Action { }
    record Append(String id, int size, int seed) implements Action { }
    record Truncate(String id, double to) implements Action { }
    record Delete(String id) implements Action { }
    /** A large value put on an id outside the model and deleted; then purge and flush: a peak that the flush gives back. */
    record Burst(int size, int seed) implements Action { }
    record Reclaim() implements Action { }
    record Pin(String id) implements Action { }
    record Unpin(int which) implements Action { }
    record Flush() implements Action { }
    /** Compaction with no threshold: moves the highest versions into the lowest holes, whatever their size. */
    record Compact() implements Action { }
    record Reopen() implements Action { }

    record Switches(int pageSize, boolean prealloc, int batch, boolean downgrade, boolean optimistic, boolean prefetch,
                    boolean skipLoad, int shrinkMinPages) {
        LobStoreConfig config() {
            return new LobStoreConfig(Map.of(
                    LobStoreConfig.PAGE_SIZE.name(), pageSize,
                    LobStoreConfig.PREALLOC.name(), prealloc,
                    LobStoreConfig.PREALLOC_BATCH.name(), batch,
                    LobStoreConfig.LATCH_DOWNGRADE.name(), downgrade,
                    LobStoreConfig.OPTIMISTIC_UPDATE.name(), optimistic,
                    LobStoreConfig.PURGE_PREFETCH.name(), prefetch,
                    LobStoreConfig.PURGE_SKIP_LOAD.name(), skipLoad,
                    LobStoreConfig.SYNC.name(), false,
                    // purge runs only when the sequence says so: no backpressure waits
                    LobStoreConfig.HISTORY_MAX.name(), 0,
                    LobStoreConfig.HISTORY_MAX_RATIO.name(), 0.0)).with(LobStoreConfig.SHRINK_MIN_PAGES.name(), shrinkMinPages)
                    .with(LobStoreConfig.COMPACT_MIN_FREE_RATIO.name(), 0.0);
        }
    }

    private record PinnedRead(LobReadHandle handle, byte[] expected) {
    }

    @Property(tries = 60, shrinking = ShrinkingMode.BOUNDED)
    void engineBehavesLikeTheModel(@ForAll("switches") Switches switches, @ForAll("actions") List<Action> actions) throws IOException {
        Path dir = Files.createTempDirectory("lobstream-model-");
        Map<String, byte[]> model = new HashMap<>();
        List<PinnedRead> pinned = new ArrayList<>();
        DefaultLobStore store = DefaultLobStore.open(dir, switches.config());
        try {
            for (Action a : actions) {
                store = apply(store, dir, switches, a, model, pinned);
                FsckReport fsck = store.fsck(true);
                assertThat(fsck.problems()).as("fsck after %s with %s", a, switches).isEmpty();
                for (Map.Entry<String, byte[]> e : model.entrySet()) {
                    assertThat(read(store, e.getKey())).as("%s after %s", e.getKey(), a).isEqualTo(e.getValue());
                }
                for (String id : List.of("a", "b", "c")) {
                    if (!model.containsKey(id)) {
                        assertThat(store.current(id)).as("%s after %s", id, a).isEmpty();
                    }
                }
            }
            for (PinnedRead p : pinned) {
                assertThat(readAll(p.handle())).isEqualTo(p.expected());
                p.handle().close();
            }
            pinned.clear();
            drainPurge(store);
            assertThat(store.stats().historyLength()).isZero();
            assertThat(store.fsck(true).problems()).isEmpty();
        } finally {
            pinned.forEach(p -> p.handle().close());
            store.close();
            deleteTree(dir);
        }
    }

    private static DefaultLobStore apply(DefaultLobStore store, Path dir, Switches switches, Action action,
                                         Map<String, byte[]> model, List<PinnedRead> pinned) throws IOException {
        if (action instanceof Put p) {
            byte[] v = bytes(p.size(), p.seed());
            store.put(p.id(), new ByteArrayInputStream(v), v.length, null, null);
            model.put(p.id(), v);
        } else if (action instanceof Upload u) {
            byte[] v = bytes(u.size(), u.seed());
            int per = (v.length + u.chunks() - 1) / u.chunks();
            String uploadId = "up-" + u.seed();
            for (int i = 0; i < u.chunks() && i < u.abandonAfter(); i++) {
                int from = Math.min(v.length, i * per);
                int to = i == u.chunks() - 1 ? v.length : Math.min(v.length, from + per);
                ChunkResult r = store.putChunk(new Chunk(uploadId, u.id(), v.length, i, u.chunks(), from, to - from, null),
                        new ByteArrayInputStream(v, from, to - from), null);
                assertThat(r.status()).isIn(ChunkResult.Status.ACCEPTED, ChunkResult.Status.PUBLISHED);
            }
            if (u.abandonAfter() >= u.chunks()) {
                model.put(u.id(), v);
            } else {
                store.expireUploads(-1);
            }
        } else if (action instanceof Write w) {
            byte[] old = model.getOrDefault(w.id(), new byte[0]);
            int at = (int) (w.at() * old.length);
            byte[] data = bytes(w.size(), w.seed());
            store.write(w.id(), at, new ByteArrayInputStream(data), data.length, null);
            byte[] v = Arrays.copyOf(old, Math.max(old.length, at + data.length));
            System.arraycopy(data, 0, v, at, data.length);
            model.put(w.id(), v);
        } else if (action instanceof Append a) {
            byte[] old = model.getOrDefault(a.id(), new byte[0]);
            byte[] data = bytes(a.size(), a.seed());
            store.append(a.id(), new ByteArrayInputStream(data), data.length, null);
            byte[] v = Arrays.copyOf(old, old.length + data.length);
            System.arraycopy(data, 0, v, old.length, data.length);
            model.put(a.id(), v);
        } else if (action instanceof Truncate t) {
            byte[] old = model.get(t.id());
            if (old != null) {
                int to = (int) (t.to() * old.length);
                store.truncate(t.id(), to, null);
                model.put(t.id(), Arrays.copyOf(old, to));
            }
        } else if (action instanceof Delete d) {
            store.delete(d.id(), null);
            model.remove(d.id());
        } else if (action instanceof Burst b) {
            byte[] v = bytes(b.size(), b.seed());
            store.put("burst", new ByteArrayInputStream(v), v.length, null, null);
            store.delete("burst", null);
            drainPurge(store);
            flush(store, switches);
        } else if (action instanceof Reclaim) {
            drainPurge(store);
        } else if (action instanceof Pin p) {
            store.open(p.id()).ifPresent(h -> pinned.add(new PinnedRead(h, model.get(p.id()))));
        } else if (action instanceof Unpin u) {
            if (!pinned.isEmpty()) {
                PinnedRead p = pinned.remove(u.which() % pinned.size());
                assertThat(readAll(p.handle())).as("pinned %s", p.handle().version()).isEqualTo(p.expected());
                p.handle().close();
            }
        } else if (action instanceof Flush) {
            flush(store, switches);
        } else if (action instanceof Compact) {
            store.compact(); // the first run after writes only notes them
            store.compact();
        } else if (action instanceof Reopen) {
            for (PinnedRead p : pinned) {
                assertThat(readAll(p.handle())).isEqualTo(p.expected());
                p.handle().close();
            }
            pinned.clear();
            store.close();
            return DefaultLobStore.open(dir, switches.config());
        }
        return store;
    }

    /**
     * Flushes; then the free run at the end of the tablespace must be shorter than the shrink
     * threshold, or no longer than the one batch of slack a shrink leaves.
     */
    private static void flush(DefaultLobStore store, Switches switches) throws IOException {
        store.flush();
        if (switches.shrinkMinPages() == 0) {
            return;
        }
        long end = store.stats().pagesTotal();
        long tail = end - DefaultLobStoreTest.usedEnd(store);
        assertThat(tail).as("free tail after flush, %s", switches).isLessThan(Math.max(switches.shrinkMinPages(), switches.batch() + 1));
        assertThat(Files.size(store.directory().resolve(io.lobstream.store.tablespace.TablespaceDirs.PAGES)))
                .as("file length").isLessThanOrEqualTo(end * switches.pageSize());
    }

    /** Reclaims every pending version that no pin holds. */
    private static void drainPurge(DefaultLobStore store) throws IOException {
        try (LocalPurger purger = new LocalPurger(store, 64)) {
            while (purger.purgeOnce() > 0) {
                // again: reclaims may have been deferred or a batch may not have covered all
            }
        }
    }

    private static byte[] read(LobStore store, String id) throws IOException {
        try (LobReadHandle h = store.open(id).orElseThrow()) {
            return readAll(h);
        }
    }

    private static byte[] readAll(LobReadHandle h) {
        try (InputStream in = h.stream(0, h.length())) {
            return in.readAllBytes();
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static byte[] bytes(int size, int seed) {
        byte[] b = new byte[size];
        new Random(seed).nextBytes(b);
        return b;
    }

    @Provide
    Arbitrary<Switches> switches() {
        Arbitrary<Boolean> bool = Arbitraries.of(true, false);
        return Combinators.combine(Arbitraries.of(4096, 8192, 16384), bool, Arbitraries.integers().between(1, 32), bool, bool,
                        bool, bool, Arbitraries.of(0, 1, 4, 16))
                .as(Switches::new);
    }

    @Provide
    Arbitrary<List<Action>> actions() {
        Arbitrary<String> id = Arbitraries.of("a", "b", "c");
        // sizes from empty through inline-only to several pages of the largest page size
        Arbitrary<Integer> size = Arbitraries.oneOf(Arbitraries.integers().between(0, 300),
                Arbitraries.integers().between(3_000, 70_000));
        Arbitrary<Integer> seed = Arbitraries.integers();
        Arbitrary<Double> fraction = Arbitraries.doubles().between(0, 1);
        Arbitrary<Action> action = Arbitraries.frequencyOf(
                net.jqwik.api.Tuple.of(4, Combinators.combine(id, size, seed).as(Put::new)),
                net.jqwik.api.Tuple.of(4, Combinators.combine(id, fraction, size, seed).as(Write::new)),
                net.jqwik.api.Tuple.of(2, Combinators.combine(id, Arbitraries.integers().between(0, 200_000),
                        Arbitraries.integers().between(1, 6), Arbitraries.integers().between(0, 8), seed).as(Upload::new)),
                net.jqwik.api.Tuple.of(3, Combinators.combine(id, size, seed).as(Append::new)),
                net.jqwik.api.Tuple.of(2, Combinators.combine(id, fraction).as(Truncate::new)),
                net.jqwik.api.Tuple.of(1, id.map(Delete::new)),
                net.jqwik.api.Tuple.of(2, Combinators.combine(Arbitraries.integers().between(100_000, 400_000), seed).as(Burst::new)),
                net.jqwik.api.Tuple.of(2, Arbitraries.just(new Reclaim())),
                net.jqwik.api.Tuple.of(2, id.map(Pin::new)),
                net.jqwik.api.Tuple.of(2, Arbitraries.integers().between(0, 10).map(Unpin::new)),
                net.jqwik.api.Tuple.of(3, Arbitraries.just(new Flush())),
                net.jqwik.api.Tuple.of(2, Arbitraries.just(new Compact())),
                net.jqwik.api.Tuple.of(1, Arbitraries.just(new Reopen())));
        return action.list().ofMinSize(1).ofMaxSize(30);
    }

    private static void deleteTree(Path dir) throws IOException {
        try (Stream<Path> walk = Files.walk(dir)) {
            for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }
}
