package io.lobstream.ingest.writer;

import io.lobstream.store.LobStore;
import io.lobstream.avro.LobCommand;
import io.lobstream.avro.UndoCause;
import io.lobstream.avro.UndoRecord;
import io.lobstream.schema.Extents;
import io.lobstream.store.Source;
import io.lobstream.store.tablespace.TablespaceDirs;
import io.lobstream.store.index.VersionEntry;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.streams.processor.Cancellable;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * Applies LobCommands to the task's tablespace (through {@link CommandApplier}) and emits an
 * UndoRecord for every version it supersedes; what cannot be applied goes to the dead-letter
 * topic with its reason.
 *
 * <p><b>Exactly once in effect.</b> The store records, in the same index batch as each command,
 * the offset it came from and its commandId. Kafka Streams commits the task's offsets and
 * outputs in one transaction after {@link LobStateStore#flushCache()} has synced the tablespace. After a crash the transaction
 * is aborted and the commands since the last commit come again: those at or below the recorded
 * offset are not applied again, but the undo records they produced (aborted with the
 * transaction) are produced again from the versions still pending in the index. A command a
 * producer sent twice (same commandId, another offset) is recognised by its id.
 *
 * <p>Every {@value #HOUSEKEEPING_SECONDS} s at most (wall clock) the task also drops chunked uploads
 * idle for {@code lob.upload.timeout.ms} (in the time of the commands: {@link #housekeeping}) and forgets commandIds older than
 * {@code lob.command.dedupe.window.ms}; every {@code lob.compact.interval.ms} it runs the
 * tablespace's compaction (below {@link #IDLE_COMPACT_EVERY}: that often once the partition is idle). A punctuation also makes the task commit, so the commit that follows
 * gives the free tail that compaction gathered back to the file system, idle or not. Every
 * {@code lob.undo.resend.interval.ms} it produces again the undo records purge consumed without a
 * reclaim ({@link UndoResender}).
 */
final class CommandProcessor extends TablespaceProcessor<LobCommand> {
    private static final Logger log = LoggerFactory.getLogger(CommandProcessor.class);
    static final String UNDO_SINK = "undo-history";
    static final int HOUSEKEEPING_SECONDS = 10;
    /** Between pages of undo records produced again at open (each page asks for a commit of its own). */
    private static final Duration REEMIT_EVERY = Duration.ofMillis(100);
    /**
     * Compaction runs in a row that found nothing to move (no pass under way), no command or reclaim applied between them,
     * after which compaction runs only every {@link #IDLE_COMPACT_EVERY}, until a command or a reclaim comes or a run finds
     * something to move. Kafka Streams commits a task after each
     * punctuation: a task that once consumed a record sends its offsets again in a transaction of their own each time, so
     * an idle node ran a transaction a second on each stream thread (AddOffsetsToTxn, TxnOffsetCommit, EndTxn, and their
     * markers) for compaction runs that had nothing to do.
     */
    static final int IDLE_COMPACTIONS = 5;
    static final Duration IDLE_COMPACT_EVERY = Duration.ofSeconds(HOUSEKEEPING_SECONDS);

    private final CommandApplier applier;
    private final UploadExpiry uploads;
    private final long dedupeWindowMs;
    private final JudgingSettings judging;
    private final Duration compactEvery;
    /** this task's token in its thread's {@link CompactionShare} */
    private final Object compactionTurn = new Object();
    private Cancellable compaction;
    private boolean compactingSlowly;
    private int fruitlessCompactions;
    private boolean recordsSinceCompaction;
    private final UndoResender resender;
    /**
     * System.nanoTime() of the last command processed (or of the task's start): how long the partition has been quiet. Not
     * the wall clock: a step forward of the host's clock (NTP, a VM resumed) would take an upload still receiving chunks
     * for idle, and drop it where a copy rebuilt from lob.commands keeps it.
     */
    private long lastRecordAtNanos;
    private final LongSupplier nanoClock;
    /** What the broker said of the task's partition: whether a command waits there, asked once it has been quiet that long. */
    private QuietPartition quiet;
    /**
     * Whether the task has read a command past the last one its tablespace had applied when it
     * opened. Until then rejections are not forgotten: those of the commands an aborted transaction
     * held (a crash) must refuse them again when they come, even after an outage longer than the
     * window by which the clock forgets them.
     */
    private boolean pastOpenedOffset;
    private Long openedAppliedOffset;
    /** Whether this task recorded its settings in its tablespace yet ({@link #recordJudgingSettings}). */
    private boolean judgingRecorded;
    /** The pending versions whose undo records the task produced again since it opened, and the last of them. */
    private int reemitted;
    private VersionEntry reemitAfter;
    /** Whether the open's re-emit pass still runs: the resender waits for it (it would send the versions ahead of it too). */
    private boolean reemitting;

    CommandProcessor(Supplier<Deserializer<Object>> deserializers, WriterMetrics metrics, long maxValueBytes, int partitions,
                     UploadExpiry uploads, long dedupeWindowMs, Duration compactEvery, UndoResender resender) {
        this(deserializers, metrics, maxValueBytes, partitions, uploads, dedupeWindowMs, compactEvery, resender, System::nanoTime);
    }

    /** @param nanoClock System.nanoTime, or a test's: how long a partition has been quiet */
    CommandProcessor(Supplier<Deserializer<Object>> deserializers, WriterMetrics metrics, long maxValueBytes, int partitions,
                     UploadExpiry uploads, long dedupeWindowMs, Duration compactEvery, UndoResender resender, LongSupplier nanoClock) {
        super(deserializers, LobCommand.class, metrics);
        this.nanoClock = nanoClock;
        this.resender = resender;
        this.applier = new CommandApplier(maxValueBytes, partitions, dedupeWindowMs);
        this.judging = new JudgingSettings(dedupeWindowMs, uploads.timeoutMs(), maxValueBytes);
        this.uploads = uploads;
        this.dedupeWindowMs = dedupeWindowMs;
        this.compactEvery = compactEvery;
    }

    @Override
    public void init(ProcessorContext<Object, Object> context) {
        super.init(context);
        lastRecordAtNanos = nanoClock.getAsLong();
        quiet = new QuietPartition(uploads);
        pastOpenedOffset = false;
        openedAppliedOffset = null;
        judgingRecorded = false;
        // often enough that an upload expires within about half its timeout after it is due
        Duration housekeepingEvery = Duration.ofMillis(Math.max(100, Math.min(HOUSEKEEPING_SECONDS * 1000L, uploads.timeoutMs() / 2)));
        every(housekeepingEvery, "housekeeping", this::housekeeping);
        compactingSlowly = false;
        fruitlessCompactions = 0;
        recordsSinceCompaction = false;
        compaction = every(compactEvery, "compaction", this::compact);
        tablespace().onRecord(this::recorded);
        if (resender.enabled()) {
            every(resender.every(), "re-sending undo records", this::resendConsumedUnreclaimed);
        }
        reemitted = 0;
        reemitAfter = null;
        reemitting = true;
        Cancellable[] reemit = new Cancellable[1];
        reemit[0] = every(REEMIT_EVERY, "re-emitting undo records", now -> {
            if (!reemitPending()) {
                reemit[0].cancel();
            }
        });
    }

    /**
     * Produces the undo record of every version pending purge again, once, when the task opens
     * its tablespace. Those records may have been consumed without a reclaim: by another node's
     * purge while the partition was away (they name pages of this copy, which that node does not
     * have), or lost with an aborted transaction at a restart. Without them the versions would
     * stay history forever. A duplicate of a record not yet purged is harmless: its second
     * reclaim finds the version gone and is ignored. One page per call; returns whether more remain.
     */
    private boolean reemitPending() {
        // a page at a time, each in the transaction then open: after purge was away for long, all at once could
        // outlast the transaction timeout, and the abort that followed would start it over at the task's next init
        List<VersionEntry> page = store().pendingToPurge(reemitAfter, UndoResender.MAX_PER_ROUND);
        for (VersionEntry e : page) {
            emitUndo(e, true);
        }
        if (!page.isEmpty()) {
            context.commit(); // a page a transaction, whatever lob.writer.commit.interval.ms
        }
        reemitted += page.size();
        if (page.size() == UndoResender.MAX_PER_ROUND) {
            reemitAfter = page.get(page.size() - 1);
            return true;
        }
        reemitting = false;
        resender.reemittedAll(System.currentTimeMillis());
        if (reemitted > 0) {
            log.info("{}: undo records of the {} versions pending purge produced again (tablespace opened)", store().name(), reemitted);
        }
        return false;
    }

    /** Produces again the undo records purge consumed without reclaiming their versions ({@link UndoResender}). */
    private void resendConsumedUnreclaimed(long now) {
        if (reemitting) {
            // the versions the pass has not reached yet look consumed and unreclaimed (their records are old): they
            // would be produced twice, counted as resent and warned of, though purge lost nothing
            return;
        }
        List<VersionEntry> due = resender.due(context.taskId().partition(), store(), now);
        if (due.isEmpty()) {
            return;
        }
        for (VersionEntry e : due) {
            emitUndo(e, true);
        }
        List<VersionEntry> stuck = resender.resent(due, System.currentTimeMillis());
        metrics.undoResent(due.size());
        // INFO: a purge worker that lost the partition in a rebalance skips what it had read, as it should; versions that
        // stay pending through several re-sends are the fault, said below
        log.info("{}: {} versions still pending after purge consumed their undo records; produced them again", store().name(),
                due.size());
        if (!stuck.isEmpty()) {
            // named with their root pages: a purge worker takes a root that is not the version's (stale, never written, past
            // the file's end) for one reclaimed already and says nothing, but this version is pending, so that is damage
            log.error("{}: {} versions pending although their undo records were produced {} times or more: purge cannot "
                    + "reclaim them (see the purge workers' log, the writer's for rejected reclaims, and fsck): {}{}",
                    store().name(), stuck.size(), UndoResender.STUCK_AFTER, stuck.stream().limit(5)
                            .map(e -> e.lobId() + "@" + e.version() + " (root page " + e.rootPage() + ")").toList(),
                    stuck.size() > 5 ? " and more" : "");
        }
    }

    /**
     * Expires uploads whose producer stopped, between chunks (each chunk expires the idle ones first,
     * in {@link #apply}). Idle is measured in the time of the commands (the latest its tablespace recorded, stream time
     * until one is: {@link #commandsTime}): commands that
     * came more than {@code lob.upload.timeout.ms} after the upload's last chunk have been applied
     * without its next one, so a writer that was down or behind does not expire uploads whose
     * chunks wait in its backlog, as the wall clock alone would; the writer's clock must agree. On
     * a partition where nothing came for the timeout, and where the log ends right after the last
     * command the task processed (nothing waits in Kafka: {@link QuietPartition}), the wall clock
     * stands in for the time of the commands that did not come.
     */
    private void housekeeping(long now) throws IOException {
        LobStore store = store();
        recordJudgingSettings(store); // before housekeeping goes by them, on a partition where no command comes too
        long latest = store.latestTime(uploads.source(context.taskId().partition()));
        metrics.uploadsExpired(store.expireUploads(commandsTime(store, latest, now), now, uploads.timeoutMs()).size());
        store.reclaimPastPinLeases();
        // ids by the latest command time the tablespace recorded, where the window ends when duplicates are judged: a
        // replay, which records the same times, then finds what the writer finds; not by a clock, so that a writer behind
        // by more than the window keeps what it needs. Rejections by the clock they are stamped with, so that none is
        // forgotten before its transaction ends
        store.forgetCommandsBefore(latest == Source.UNKNOWN_TIME ? Long.MIN_VALUE : latest - dedupeWindowMs,
                pastOpenedOffset ? now - dedupeWindowMs : Long.MIN_VALUE);
    }

    /** Records the settings this task judges by in its tablespace, once, warning if they changed (JudgingSettings). */
    private void recordJudgingSettings(LobStore store) throws IOException {
        if (!judgingRecorded) {
            judging.recordIn(store, store.appliedOffset(uploads.source(context.taskId().partition())) + 1);
            judgingRecorded = true;
        }
    }

    /**
     * The time of the commands uploads are idle in: the latest command time the tablespace recorded, as a chunk's expiry
     * reads it ({@link CommandTime#latest}; stream time before the first is recorded), or the wall clock where it may stand
     * in. The broker is asked ({@link QuietPartition}) only where no command came for the upload timeout and an upload is in
     * progress. Before the task's first record, the last one processed is the last its tablespace recorded.
     *
     * @param latest the tablespace's {@link LobStore#latestTime}, read once for all of housekeeping
     */
    private long commandsTime(LobStore store, long latest, long now) throws IOException {
        int partition = context.taskId().partition();
        long commandsTime = latest == Source.UNKNOWN_TIME ? context.currentStreamTimeMs() : latest;
        if (nanoClock.getAsLong() - lastRecordAtNanos < TimeUnit.MILLISECONDS.toNanos(uploads.timeoutMs())
                || store.uploadsInProgress() == 0) {
            return commandsTime;
        }
        long last = lastOffset() >= 0 ? lastOffset() : store.appliedOffset(uploads.source(partition));
        return Math.max(commandsTime, quiet.commandsCompleteUntil(partition, last, now).orElse(commandsTime));
    }

    /**
     * The clock now, not {@code context.currentSystemTimeMs()}: Kafka Streams caches that once for a
     * whole batch of records, before the first is processed, so it would leave out the apply itself.
     */
    private void applyLag(Record<byte[], byte[]> record) {
        metrics.commandApplyLag(record.timestamp(), System.currentTimeMillis());
    }

    /**
     * The tablespace applied offsets of lob.commands the log may now hold other commands at: marked (LOG-CUT), so that the
     * task's start moves it aside and rebuilds the partition, whatever the log's end is by then. (A cut lob.reclaim only
     * delays purge: its records come again from the undo records the writer re-sends.)
     */
    @Override
    protected void logWentBack(String why) throws IOException {
        TablespaceDirs.markLogCut(store().directory(), store().copyId(), why);
    }

    /** A turn of compaction, in the thread's share of time; at {@link #IDLE_COMPACT_EVERY} once the partition is idle. */
    private void compact(long now) throws IOException {
        boolean[] ran = {false};
        long[] moved = {0};
        CompactionShare.OF_THREAD.get().run(compactionTurn, () -> {
            ran[0] = true;
            moved[0] = store().compact();
        });
        // a run of a pass over a large index reads a share of it and moves nothing yet: not a run that found nothing to do
        boolean busy = moved[0] > 0 || store().compactionUnderWay();
        if (busy || recordsSinceCompaction) {
            fruitlessCompactions = 0;
        } else if (ran[0]) {
            fruitlessCompactions++;
        }
        recordsSinceCompaction = false;
        if (compactingSlowly ? busy : fruitlessCompactions >= IDLE_COMPACTIONS && compactEvery.compareTo(IDLE_COMPACT_EVERY) < 0) {
            compactEvery(!compactingSlowly);
        }
    }

    /** Compaction every {@link #IDLE_COMPACT_EVERY} ({@code slowly}), or every lob.compact.interval.ms again. */
    private void compactEvery(boolean slowly) {
        cancel(compaction);
        compactingSlowly = slowly;
        fruitlessCompactions = 0;
        compaction = every(slowly ? IDLE_COMPACT_EVERY : compactEvery, "compaction", this::compact);
    }

    /** A command or a reclaim of the task was applied: its writes, or the pages it freed, leave holes to gather. */
    private void recorded() {
        recordsSinceCompaction = true;
        if (compactingSlowly) {
            compactEvery(false);
        }
    }

    @Override
    public void close() {
        LobStateStore t = tablespace();
        if (t != null) {
            t.onRecord(null);
        }
        super.close();
    }

    @Override
    protected void apply(Record<byte[], byte[]> record, LobCommand cmd, LobStore store, Source source) throws IOException {
        lastRecordAtNanos = nanoClock.getAsLong();
        if (!pastOpenedOffset) {
            if (openedAppliedOffset == null) {
                openedAppliedOffset = store.appliedOffset(source.name()); // before this command is recorded
                recordJudgingSettings(store);
            }
            pastOpenedOffset = source.offset() > openedAppliedOffset;
        }
        if (cmd.getUploadId() != null) {
            // exactly as replay does (PartitionReplayer); by the partition's latest time, as housekeeping expires by: by the
            // chunk's own, a chunk whose time went back would find an upload housekeeping had expired here, and a replay not
            metrics.uploadsExpired(UploadExpiry.expireBeforeUploadCommand(store, source.name(), record.timestamp(), uploads.timeoutMs()).size());
        }
        CommandApplier.Outcome outcome = applier.apply(cmd, record.key(), context.recordMetadata().orElseThrow().partition(),
                record.timestamp(), store, source);
        if (outcome instanceof CommandApplier.Applied applied) {
            applied.superseded().ifPresent(old -> emitUndo(old, false));
            metrics.applied(applied.op());
            applyLag(record);
        } else if (outcome instanceof CommandApplier.ChunkAccepted) {
            metrics.chunk();
            applyLag(record);
        } else if (outcome instanceof CommandApplier.AlreadyApplied again) {
            for (VersionEntry e : again.undoToReemit()) {
                // a commit interval's worth of commands after each restart: counted (applied-before-restart), not said
                log.debug("re-emitting undo record for {}@{} (command at offset {} was applied before a restart)",
                        e.lobId(), e.version(), source.offset());
                emitUndo(e, true);
                resender.reemitted(e, System.currentTimeMillis());
            }
            metrics.skipped(WriterMetrics.SKIPPED_APPLIED);
        } else if (outcome instanceof CommandApplier.Duplicate) {
            metrics.skipped(WriterMetrics.SKIPPED_DUPLICATE);
        } else if (outcome instanceof CommandApplier.Rejected rejected) {
            deadLetter(record, rejected.kind(), rejected.kind() + ": " + rejected.reason());
        }
    }

    private void emitUndo(VersionEntry old, boolean reemitted) {
        UndoRecord undo = UndoRecord.newBuilder()
                .setLobId(old.lobId())
                .setVersion(old.version())
                .setRootPage(old.rootPage())
                .setPageCount((int) old.pageCount())
                .setRetained(Extents.toAvro(old.retained()))
                .setByteLength(old.byteLength())
                .setCause(old.cause() == VersionEntry.Cause.DELETE ? UndoCause.DELETE : UndoCause.UPDATE)
                .setSourceOffset(old.sourceOffset())
                .setTime(Instant.ofEpochMilli(old.supersededAtMillis()))
                .setCopyId(store().copyId())
                .build();
        context.forward(new Record<Object, Object>(old.lobId(), undo, context.currentSystemTimeMs()), UNDO_SINK);
        metrics.undo(reemitted);
    }
}
