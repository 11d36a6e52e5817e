package io.lobstream.purge;

import io.lobstream.store.page.PageType;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;

/** Meters of a purge worker. */
final class PurgeMetrics {
    final Counter versions;
    final Counter pages;
    final Counter stale;
    final Counter corrupt;
    private final MeterRegistry registry;

    PurgeMetrics(MeterRegistry registry, String workerId) {
        this.registry = registry;
        this.versions = Counter.builder("lob_purge_versions").tag("worker", workerId)
                .description("Superseded versions turned into reclaim records").register(registry);
        this.pages = Counter.builder("lob_purge_pages").tag("worker", workerId)
                .description("Pages named in reclaim records").register(registry);
        this.stale = Counter.builder("lob_purge_stale_roots").tag("worker", workerId)
                .description("Undo records whose root page already belongs to another version (already reclaimed)").register(registry);
        this.corrupt = Counter.builder("lob_purge_corrupt_pages").tag("worker", workerId)
                .description("Undo records skipped because a page failed verification").register(registry);
    }

    void pagesRead(PageType type, long n) {
        Counter.builder("lob_purge_pages_read").tag("type", type.name().toLowerCase())
                .description("Pages read by purge, by type").register(registry).increment(n);
    }
}
