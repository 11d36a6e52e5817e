package io.lobstream.store;

import io.lobstream.store.page.PageType;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;

import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.stream.LongStream;

/**
 * The engine's meters, named for Prometheus ({@code lob_*}), tagged with the tablespace
 * (partition). One instance per store; {@link #close()} removes its meters from the registry, so
 * that the store that opens the tablespace next registers its own (a registry hands out the meter
 * already registered under an id: gauges would go on reading, and holding, the closed store).
 */
public final class StoreMetrics implements AutoCloseable {
    private final MeterRegistry registry;
    private final Tags tags;
    private final Map<String, Timer> latchWaits = new ConcurrentHashMap<>();
    private final Counter allocatorGrants;
    private final Counter allocatorPages;
    private final Map<PageType, Counter> pagesRead = new EnumMap<>(PageType.class);
    private final Timer writeLatency;
    private final Timer readLatency;
    private final Counter casConflicts;
    private final Counter pageSyncs;
    private final Counter walSyncs;
    private final Timer backpressure;
    private final Counter shrinks;
    private final Counter shrunkPages;
    private final Counter relocatedVersions;
    private final Counter relocatedPages;
    /** Every meter this instance registered, for {@link #close()}. */
    private final List<Meter> registered = new ArrayList<>();
    private boolean closed;

    /**
     * The latency histograms' buckets, per tablespace. Micrometer's percentile histogram starts at 1 ms, where a read's
     * open (a pin, a root page from the page cache) and a write without lob.sync both sit, all in its first bucket, and
     * its dozens of buckets a timer make a thousand series a node at 8 partitions. These 17, from 50 us to 10 s,
     * tell 50 us from 900 us.
     */
    private static final Duration[] LATENCY_BUCKETS = LongStream.of(50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000,
            50_000, 100_000, 250_000, 500_000, 1_000_000, 2_500_000, 5_000_000, 10_000_000)
            .mapToObj(micros -> Duration.of(micros, ChronoUnit.MICROS)).toArray(Duration[]::new);

    public StoreMetrics(MeterRegistry registry, String tablespace) {
        this.registry = registry;
        this.tags = Tags.of("tablespace", tablespace);
        this.allocatorGrants = track(Counter.builder("lob_allocator_latch_acquisitions").tags(tags)
                .description("Allocator latch acquisitions that granted pages").register(registry));
        this.allocatorPages = track(Counter.builder("lob_allocator_pages").tags(tags)
                .description("Pages granted by the allocator").register(registry));
        for (PageType t : List.of(PageType.ROOT, PageType.INDEX, PageType.DATA)) { // a free page is never read: no series of zeros
            pagesRead.put(t, track(Counter.builder("lob_pages_read").tags(tags).tag("type", t.name().toLowerCase(Locale.ROOT))
                    .description("Pages read from the tablespace, by page type").register(registry)));
        }
        this.writeLatency = track(Timer.builder("lob_write_seconds").tags(tags).serviceLevelObjectives(LATENCY_BUCKETS)
                .description("Time to write and publish one LOB version").register(registry));
        this.readLatency = track(Timer.builder("lob_read_open_seconds").tags(tags).serviceLevelObjectives(LATENCY_BUCKETS)
                .description("Time to open (pin and read the root of) a LOB version").register(registry));
        this.casConflicts = track(Counter.builder("lob_optimistic_update_conflicts").tags(tags)
                .description("Optimistic updates whose expected version had been superseded at publish").register(registry));
        this.pageSyncs = track(Counter.builder("lob_syncs").tags(tags).tag("file", "pages")
                .description("fsyncs, by file; with lob.sync.each.write, writes / syncs is the group commit size").register(registry));
        this.backpressure = track(Timer.builder("lob_backpressure_delay_seconds").tags(tags)
                .description("Delays added to writes because history passed lob.history.max or lob.history.max.ratio").register(registry));
        this.walSyncs = track(Counter.builder("lob_syncs").tags(tags).tag("file", "index-wal")
                .description("fsyncs, by file; with lob.sync.each.write, writes / syncs is the group commit size").register(registry));
        this.shrinks = track(Counter.builder("lob_tablespace_shrinks").tags(tags)
                .description("Times the page file was cut to give its free tail back (lob.shrink.min.pages)").register(registry));
        this.shrunkPages = track(Counter.builder("lob_tablespace_shrunk_pages").tags(tags)
                .description("Pages cut from the end of the page file and given back to the file system").register(registry));
        this.relocatedVersions = track(Counter.builder("lob_compaction_relocated_versions").tags(tags)
                .description("Current versions compaction moved into holes lower in the page file (lob.compact.*)").register(registry));
        this.relocatedPages = track(Counter.builder("lob_compaction_relocated_pages").tags(tags)
                .description("Pages compaction moved into holes lower in the page file").register(registry));
    }

    /** Meters that go nowhere: for tools and tests that do not export metrics. */
    public static StoreMetrics unregistered(String tablespace) {
        return new StoreMetrics(new SimpleMeterRegistry(), tablespace);
    }

    public void latchAcquired(String latch, long waitNanos) {
        latchWaits.computeIfAbsent(latch, l -> track(Timer.builder("lob_latch_wait_seconds").tags(tags).tag("latch", l)
                .description("Time spent waiting for a latch").register(registry))).record(waitNanos, TimeUnit.NANOSECONDS);
    }

    /** {@code acquisitions} of the allocator latch granted {@code pages} pages. */
    public void allocated(int acquisitions, int pages) {
        allocatorGrants.increment(acquisitions);
        allocatorPages.increment(pages);
    }

    public void pageRead(PageType type) {
        pagesRead.get(type).increment();
    }

    public Timer writeLatency() {
        return writeLatency;
    }

    public Timer readLatency() {
        return readLatency;
    }

    public void backpressure(long nanos) {
        backpressure.record(nanos, TimeUnit.NANOSECONDS);
    }

    public void pageSync() {
        pageSyncs.increment();
    }

    public void walSync() {
        walSyncs.increment();
    }

    public double syncs() {
        return pageSyncs.count() + walSyncs.count();
    }

    public void shrunk(long pages) {
        shrinks.increment();
        shrunkPages.increment(pages);
    }

    public double shrinks() {
        return shrinks.count();
    }

    public void relocated(long pages) {
        relocatedVersions.increment();
        relocatedPages.increment(pages);
    }

    public void casConflict() {
        casConflicts.increment();
    }

    /** Registers a gauge with this tablespace's tags (and {@code state=stateTag} if not null), removed on close. */
    public void gauge(String name, String description, String stateTag, Supplier<Number> value) {
        Gauge.Builder<Supplier<Number>> b = Gauge.builder(name, value).tags(tags).description(description);
        if (stateTag != null) {
            b.tag("state", stateTag);
        }
        track(b.register(registry));
    }

    /** Remembers a meter this instance registered; one registered after {@link #close()} is removed at once. */
    private synchronized <M extends Meter> M track(M meter) {
        registered.add(meter);
        if (closed) {
            registry.remove(meter);
        }
        return meter;
    }

    /** Removes this store's meters from the registry: the store is closed. They still count, unexported. */
    public synchronized void close() {
        closed = true;
        for (Meter m : registered) {
            registry.remove(m);
        }
    }
}
