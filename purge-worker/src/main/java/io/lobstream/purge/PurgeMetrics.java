package io.lobstream.purge;

import io.lobstream.store.page.PageType;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;

import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/** Meters of a purge worker. */
final class PurgeMetrics {
    final Counter versions;
    final Counter pages;
    final Counter stale;
    final Counter corrupt;
    final Counter readErrors;
    final Counter otherCopy;
    final Counter failures;
    private final MeterRegistry registry;
    private final String workerId;
    private final Map<PageType, Counter> pagesRead = new ConcurrentHashMap<>();
    /** Set by the worker's thread after each poll: its consumer is not for other threads, a scrape's included. */
    private final AtomicInteger partitions = new AtomicInteger();
    private final AtomicInteger partitionsHeld = new AtomicInteger();

    PurgeMetrics(MeterRegistry registry, String workerId) {
        this.registry = registry;
        this.workerId = workerId;
        this.versions = Counter.builder("lob_purge_versions").tag("worker", workerId)
                .description("Superseded versions turned into reclaim records, counted once their transaction commits").register(registry);
        this.pages = Counter.builder("lob_purge_pages").tag("worker", workerId)
                .description("Pages named in reclaim records, counted once their transaction commits").register(registry);
        this.stale = Counter.builder("lob_purge_stale_roots").tag("worker", workerId)
                .description("Undo records of versions reclaimed already: their root page reused, cut, or never written since the file grew back").register(registry);
        this.corrupt = Counter.builder("lob_purge_corrupt_pages").tag("worker", workerId)
                .description("Undo records skipped because they could not be decoded, named impossible pages, or a page failed verification, read twice").register(registry);
        this.readErrors = Counter.builder("lob_purge_read_errors").tag("worker", workerId)
                .description("Undo records skipped because reading their version's pages failed twice with an I/O error (not a "
                        + "page that failed verification): the disk's, produced again by the writer's re-send").register(registry);
        this.otherCopy = Counter.builder("lob_purge_other_copy").tag("worker", workerId)
                .description("Undo records skipped because another copy of the partition produced them (it moved)").register(registry);
        this.failures = Counter.builder("lob_purge_failures").tag("worker", workerId)
                .description("Turns of the worker's loop that failed and are tried again: an aborted transaction, a Kafka error, "
                        + "a commit that timed out (retried, not aborted), an unexpected one; not a transaction a rebalance outran")
                .register(registry);
        // an idle worker (more workers than partitions) and one held back by a tablespace it cannot open purge nothing
        // alike, and in-node workers are no group members that kafka-consumer-groups would list: these tell them apart
        Gauge.builder("lob_purge_partitions", partitions, AtomicInteger::get).tag("worker", workerId)
                .description("Partitions of the undo history the worker holds now (0: idle, more workers than partitions, or "
                        + "waiting for its group's first assignment or its node's first tablespace)")
                .register(registry);
        Gauge.builder("lob_purge_partitions_held", partitionsHeld, AtomicInteger::get).tag("worker", workerId)
                .description("Of those, partitions held back: no tablespace in the worker's data directory, or one that does "
                        + "not open (the worker's log says why), until a batch of theirs is purged; their undo records wait").register(registry);
        for (PageType type : List.of(PageType.ROOT, PageType.INDEX, PageType.DATA)) {
            pagesRead(type, 0); // at 0 from the start: with skip-load on, "data" stays 0, a series and not an absent one
        }
    }

    void pagesRead(PageType type, long n) {
        pagesRead.computeIfAbsent(type, t -> Counter.builder("lob_purge_pages_read").tag("type", t.name().toLowerCase(Locale.ROOT))
                .tag("worker", workerId).description("Pages read by purge, by type").register(registry)).increment(n);
    }

    /** What the worker's consumer holds, and of that, held back for want of a tablespace. */
    void partitions(int held, int heldBack) {
        partitions.set(held);
        partitionsHeld.set(heldBack);
    }

    long pagesRead(PageType type) {
        Counter c = pagesRead.get(type);
        return c == null ? 0 : (long) c.count();
    }

    /** Prefetch window occupancy: reads in flight now (summed over open tablespaces), and the window they may fill (the largest). */
    void prefetch(Supplier<Number> inFlight, Supplier<Number> window) {
        Gauge.builder("lob_purge_prefetch_in_flight", inFlight).tag("worker", workerId)
                .description("Versions whose page reads purge has in flight (prefetch window occupancy)").register(registry);
        Gauge.builder("lob_purge_prefetch_window", window).tag("worker", workerId)
                .description("Versions purge may have in flight: lob.purge.prefetch.window (0 with prefetch off or no tablespace open)")
                .register(registry);
    }
}
