package io.lobstream.ingest.writer;

import io.lobstream.store.LobStore;
import io.lobstream.store.index.VersionEntry;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * One writer task's record of the undo records it produced again, and the choice of those to
 * produce again now: the versions still pending although purge consumed their undo records and
 * the writer applied every reclaim that came of it ({@link PurgeProgress}). Purge consumed them
 * without a reclaim: a purge worker still following a partition its node has lost skips this
 * copy's records as another copy's and commits past them; one that cannot read a version's pages
 * logs it and commits past it. Without this the version would stay history until the
 * tablespace is next opened, and count against the partition's backpressure meanwhile.
 *
 * <p>An undo record was last produced when its version was superseded or when this task produced
 * it again; the transaction it was forwarded in was committed or aborted by the producer's
 * {@code transaction.timeout.ms} later at the latest (aborted, the command is applied again and
 * the record produced again), which with {@link #MARGIN_MS} is the settings' {@code slackMs}.
 * A version produced again and still not reclaimed waits twice as long each time (purge may be
 * unable to read it, or the writer reject its reclaim: both say why in their logs), up to 128
 * intervals.
 */
public final class UndoResender {
    /** Added to the writer's transaction timeout: clocks and scheduling. */
    static final long MARGIN_MS = 5_000;
    /** At most this many undo records per round, so one transaction stays small; the rest wait for the next round. */
    static final int MAX_PER_ROUND = 10_000;
    private static final int MAX_BACKOFF_SHIFT = 7;
    /** Produced again this many times and still pending: purge cannot reclaim it, and the writer says so with its pages. */
    static final int STUCK_AFTER = 3;

    private record Produced(long atMillis, int resends) {
    }

    /**
     * What every task's resender is given.
     *
     * @param everyMs how often to look (0: never)
     * @param slackMs how long after its forward an undo record may still be uncommitted
     */
    public record Settings(PurgeProgress progress, long everyMs, long slackMs) {
        public static final Settings OFF = new Settings(PurgeProgress.UNKNOWN, 0, 0);

        /** For writers whose transactions time out after {@code transactionTimeoutMs}. */
        public static Settings every(PurgeProgress progress, long everyMs, long transactionTimeoutMs) {
            return new Settings(progress, everyMs, transactionTimeoutMs + MARGIN_MS);
        }
    }

    private final PurgeProgress progress;
    private final long everyMs;
    private final long slackMs;
    /** Pending versions this task produced again one by one: when, and how many times for lack of a reclaim. */
    private final Map<String, Produced> produced = new HashMap<>();
    /**
     * When the pass at the tablespace's open had produced every pending version's undo record again: one mark for all
     * of them, not an entry each, or a history of millions after purge was away long would be held in the heap.
     */
    private long allProducedAt = Long.MIN_VALUE;
    private long lastConsumedBefore = Long.MIN_VALUE;
    /** Versions were left for a later round (backoff, or the cap): look again even if purge did not move. */
    private boolean waiting;

    UndoResender(Settings settings) {
        this.progress = settings.progress();
        this.everyMs = settings.everyMs();
        this.slackMs = settings.slackMs();
    }

    boolean enabled() {
        return everyMs > 0;
    }

    Duration every() {
        return Duration.ofMillis(everyMs);
    }

    /** The task produced the undo record of every version pending at {@code atMillis} again (the tablespace opened). */
    void reemittedAll(long atMillis) {
        allProducedAt = atMillis;
    }

    /** The task produced {@code version}'s undo record again (its command came again). */
    void reemitted(VersionEntry version, long atMillis) {
        if (enabled()) {
            produced.merge(key(version), new Produced(atMillis, 0), (old, now) -> new Produced(atMillis, old.resends()));
        }
    }

    /** The pending versions of {@code store} (the task's partition {@code partition}) whose undo records to produce again now. */
    List<VersionEntry> due(int partition, LobStore store, long now) {
        long consumedBefore = progress.consumedBefore(partition);
        if (consumedBefore == Long.MIN_VALUE || (consumedBefore == lastConsumedBefore && !waiting)) {
            return List.of(); // nothing new to tell
        }
        lastConsumedBefore = consumedBefore;
        waiting = false;
        List<VersionEntry> due = new ArrayList<>();
        Set<String> pending = new HashSet<>();
        store.forEachPending(e -> { // on the index's iterator: a long history is not copied into a list
            if (e.reclaimRequested()) {
                return; // its reclaim came; it waits for a reader's pin
            }
            String key = key(e);
            Produced last = produced.get(key);
            if (last != null) {
                pending.add(key); // of those it remembers alone: a long history is not copied into a set either
            }
            long producedAt = Math.max(Math.max(e.supersededAtMillis(), allProducedAt), last == null ? Long.MIN_VALUE : last.atMillis());
            if (producedAt >= consumedBefore - slackMs) {
                return; // not known to be consumed yet
            }
            if ((last != null && now - last.atMillis() < everyMs << Math.min(last.resends(), MAX_BACKOFF_SHIFT))
                    || due.size() == MAX_PER_ROUND) {
                waiting = true;
                return;
            }
            due.add(e);
        });
        produced.keySet().retainAll(pending); // forget versions reclaimed since
        return due;
    }

    /**
     * {@code due} were produced again at {@code atMillis}; returns those of them produced again {@link #STUCK_AFTER} times or
     * more: purge cannot reclaim them.
     */
    List<VersionEntry> resent(List<VersionEntry> due, long atMillis) {
        List<VersionEntry> stuck = new ArrayList<>();
        for (VersionEntry e : due) {
            Produced last = produced.get(key(e));
            int resends = (last == null ? 0 : last.resends()) + 1;
            produced.put(key(e), new Produced(atMillis, resends));
            if (resends >= STUCK_AFTER) {
                stuck.add(e);
            }
        }
        return stuck;
    }

    private static String key(VersionEntry e) {
        return e.version() + "/" + e.lobId();
    }
}
