package io.lobstream.purge;

import io.lobstream.avro.ReclaimRecord;
import io.lobstream.avro.UndoRecord;
import io.lobstream.schema.Extents;
import io.lobstream.schema.LobSerdes;
import io.lobstream.schema.serde.RegistryUnavailableException;
import io.lobstream.store.allocator.Extent;
import io.lobstream.store.page.PageType;
import io.lobstream.store.page.CorruptPageException;
import io.lobstream.store.purge.PurgeReader;
import io.micrometer.core.instrument.Counter;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.Deserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Clock;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BooleanSupplier;

/**
 * Turns one partition's batch of undo records into reclaim records: decodes them, skips those it
 * must not act on (another copy's, undecodable, naming impossible pages, reclaimed already), and
 * reads the rest's root and index pages through the partition's {@link PurgeReader} (prefetch,
 * skip-load) to name every page each version owns. It sends nothing: the {@link PurgeWorker}
 * sends the reclaims in the transaction that commits the batch's offsets.
 *
 * <p>A record it skips is counted and logged, never thrown: a record that failed every time would
 * otherwise stop its partition's purge, and that of every worker the group gave it to next.
 */
final class UndoPurger implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(UndoPurger.class);

    private final String workerId;
    private final String reclaimTopic;
    private final Deserializer<Object> undoReader;
    private final TablespaceReaders readers;
    private final PurgeMetrics metrics;
    private final Clock clock;

    UndoPurger(String workerId, String reclaimTopic, Deserializer<Object> undoReader, TablespaceReaders readers, PurgeMetrics metrics,
               Clock clock) {
        this.workerId = workerId;
        this.reclaimTopic = reclaimTopic;
        this.undoReader = undoReader;
        this.readers = readers;
        this.metrics = metrics;
        this.clock = clock;
    }

    /** Closes the undo records' deserializer (its registry client). */
    @Override
    public void close() {
        undoReader.close();
    }

    /**
     * The reclaim records of a batch, and the pages they name; {@code consumed} records of the batch
     * are done with (all of it, unless the purge was stopped): the rest must be read again.
     * {@code skipped}: a counter for each record consumed without a reclaim (stale, corrupt, unreadable, another
     * copy's), to be counted once the transaction commits, as the versions purged are: an aborted one's records are
     * read again, and would be counted twice.
     */
    record Purged(List<ProducerRecord<String, Object>> reclaims, long pages, int consumed, List<Counter> skipped) {
        /** None of the batch: its tablespace is missing, or cannot be read, or was replaced by a copy that does not open. */
        static final Purged HELD_BACK = new Purged(List.of(), 0, 0, List.of());

        void countSkipped() {
            skipped.forEach(Counter::increment);
        }
    }

    /**
     * @param reader the partition's reader ({@link TablespaceReaders#reader})
     * @param stop   asked before each version's pages are read but the first: true leaves the rest of the batch
     *               unconsumed ({@link Purged#consumed()})
     * @return {@link Purged#HELD_BACK} if the partition's tablespace was replaced by a copy that does not open, or its
     *         descriptor cannot be read: the batch is to wait
     * @throws RegistryUnavailableException if the schema registry did not answer: the batch must be read again
     */
    Purged purge(int partition, PurgeReader reader, List<ConsumerRecord<String, byte[]>> batch, BooleanSupplier stop) {
        List<UndoRecord> undos = new ArrayList<>(batch.size());
        List<Long> undoTimes = new ArrayList<>(batch.size());
        List<Integer> undoIndex = new ArrayList<>(batch.size()); // where in the batch each decoded record is
        // what to count and log for the records skipped, by their place in the batch: only those before where a stopped
        // purge ends are done with (the rest come again, and would be counted twice)
        List<Map.Entry<Integer, Runnable>> skipped = new ArrayList<>();
        List<Counter> toCount = new ArrayList<>();
        Skips said = new Skips(partition);
        for (int b = 0; b < batch.size(); b++) {
            ConsumerRecord<String, byte[]> r = batch.get(b);
            try {
                undos.add(LobSerdes.decode(undoReader, r.topic(), r.value(), UndoRecord.class));
                undoTimes.add(r.timestamp());
                undoIndex.add(b);
            } catch (RegistryUnavailableException e) {
                throw e; // the transaction aborts and the batch is read again: the record may be good
            } catch (RuntimeException e) {
                skipped.add(Map.entry(b, () -> {
                    toCount.add(metrics.corrupt);
                    said.first("undecodable", () -> log.error("undecodable undo record at {}-{}@{} skipped: {}", r.topic(),
                            r.partition(), r.offset(), e.getMessage()));
                }));
            }
        }
        PurgeReader own = reader;
        if (undos.stream().anyMatch(u -> own.mayBeReplacedBy(u.getCopyId()))) {
            reader = readers.reopenedIfReplaced(partition, reader); // before any record is matched against a copy
            if (reader == null) { // matched against the old copy, the new copy's records would be consumed as another's
                return Purged.HELD_BACK;
            }
        }
        List<PurgeReader.Request> requests = new ArrayList<>(batch.size());
        List<Long> timestamps = new ArrayList<>(batch.size());
        List<Integer> pageCounts = new ArrayList<>(batch.size()); // what each request's undo record says the version owns
        List<Integer> requestIndex = new ArrayList<>(batch.size());
        for (int i = 0; i < undos.size(); i++) {
            UndoRecord undo = undos.get(i);
            if (!reader.ownCopy(undo.getCopyId())) {
                // produced by another copy of the partition (before it moved here); that copy's node, or this one's
                // re-emission when it opens the tablespace, purges what is pending here
                skipped.add(Map.entry(undoIndex.get(i), () -> toCount.add(metrics.otherCopy)));
                continue;
            }
            List<Extent> retained;
            try {
                if (undo.getRootPage() < 0) {
                    throw new IllegalArgumentException("root page " + undo.getRootPage());
                }
                retained = Extents.fromAvro(undo.getRetained());
            } catch (IllegalArgumentException e) {
                ConsumerRecord<String, byte[]> r = batch.get(undoIndex.get(i));
                skipped.add(Map.entry(undoIndex.get(i), () -> {
                    toCount.add(metrics.corrupt);
                    said.first("with bad page numbers", () -> log.error("undo record of {}@{} at {}-{}@{} with bad pages skipped: {}",
                            undo.getLobId(), undo.getVersion(), r.topic(), r.partition(), r.offset(), e.getMessage()));
                }));
                continue;
            }
            requests.add(new PurgeReader.Request(undo.getLobId(), undo.getVersion(), undo.getRootPage(), retained));
            timestamps.add(undoTimes.get(i));
            pageCounts.add(undo.getPageCount());
            requestIndex.add(undoIndex.get(i));
        }
        long[] before = pagesRead(reader);
        List<PurgeReader.Result> results = reader.scan(requests, stop);
        // the records skipped above before the first version not scanned are done with too
        int consumed = results.size() == requests.size() ? batch.size() : requestIndex.get(results.size());
        skipped.stream().filter(s -> s.getKey() < consumed).forEach(s -> s.getValue().run());
        List<ProducerRecord<String, Object>> reclaims = new ArrayList<>(results.size());
        long pages = 0;
        for (int i = 0; i < results.size(); i++) {
            PurgeReader.Result result = results.get(i);
            PurgeReader.Request q = result.request();
            if (!result.ok()) {
                if (result.stale()) {
                    toCount.add(metrics.stale); // already reclaimed and the root page reused or cut: nothing to do
                } else {
                    // a page that failed verification, or the disk's error: the second an operator checks the disk for
                    boolean corrupt = result.failure() instanceof CorruptPageException;
                    toCount.add(corrupt ? metrics.corrupt : metrics.readErrors);
                    said.first(corrupt ? "whose pages failed verification" : "whose pages could not be read", () -> log.error(
                            "cannot purge {}@{} (partition {}): {}{}; fsck of the tablespace names every bad page", q.lobId(),
                            q.version(), partition, result.failure(), result.failure().getCause() == null ? ""
                                    : " (" + result.failure().getCause() + ")"));
                }
                continue;
            }
            long found = Extent.totalPages(result.extents());
            if (found != pageCounts.get(i)) {
                // the root and index pages read do not describe the version the record names: the writer would refuse the
                // reclaim (its extents must be the version's own); said here, where the record is
                toCount.add(metrics.corrupt);
                int owns = pageCounts.get(i);
                said.first("whose pages were miscounted", () -> log.error("cannot purge {}@{} (partition {}): its undo record says it owns "
                        + "{} pages, its root and index pages name {}", q.lobId(), q.version(), partition, owns, found));
                continue;
            }
            ReclaimRecord reclaim = ReclaimRecord.newBuilder().setLobId(q.lobId()).setVersion(q.version())
                    .setExtents(Extents.toAvro(result.extents())).setWorkerId(workerId).setTime(clock.instant()).build();
            // The reclaim record carries the undo record's timestamp, so that lob.reclaim's times (retention, time
            // index) follow lob.undo-history's. The writer does not order by it: it reads reclaims ahead of commands.
            // To the partition numbered as the tablespace's, whose writer task applies it: by key, under a partition count
            // changed since the writer started, it would reach another task, which ignores it.
            reclaims.add(new ProducerRecord<>(reclaimTopic, partition, timestamps.get(i), q.lobId(), reclaim));
            pages += Extent.totalPages(result.extents());
        }
        long[] after = pagesRead(reader);
        for (PageType t : PageType.values()) {
            if (after[t.ordinal()] > before[t.ordinal()]) {
                metrics.pagesRead(t, after[t.ordinal()] - before[t.ordinal()]);
            }
        }
        said.countTheRest();
        return new Purged(reclaims, pages, consumed, toCount);
    }

    /**
     * The records a batch skipped, said once per kind: the first in full, the others counted in one line. A failing disk
     * region fails every version of a batch, and the writer sends their undo records again and again (its undo re-send):
     * one line each would bury the log. The metrics count every one.
     */
    private static final class Skips {
        private final Map<String, Integer> byKind = new LinkedHashMap<>();
        private final int partition;

        Skips(int partition) {
            this.partition = partition;
        }

        void first(String kind, Runnable say) {
            if (byKind.merge(kind, 1, Integer::sum) == 1) {
                say.run();
            }
        }

        void countTheRest() {
            byKind.forEach((kind, n) -> {
                if (n > 1) {
                    log.error("partition {}: and {} more undo records {} in the same batch, skipped", partition, n - 1, kind);
                }
            });
        }
    }

    private static long[] pagesRead(PurgeReader reader) {
        long[] n = new long[PageType.values().length];
        for (PageType t : PageType.values()) {
            n[t.ordinal()] = reader.pagesRead(t);
        }
        return n;
    }
}
