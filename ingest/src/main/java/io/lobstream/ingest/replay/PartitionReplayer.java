package io.lobstream.ingest.replay;

import io.lobstream.avro.LobCommand;
import io.lobstream.ingest.writer.CommandApplier;
import io.lobstream.ingest.writer.CommandTime;
import io.lobstream.ingest.writer.JudgingSettings;
import io.lobstream.ingest.writer.TablespaceCheck;
import io.lobstream.ingest.writer.UploadExpiry;
import io.lobstream.schema.LobSerdes;
import io.lobstream.schema.LobStreamConfig;
import io.lobstream.schema.LobStreamConfig.ClientKind;
import io.lobstream.schema.TopicSetup;
import io.lobstream.schema.Topics;
import io.lobstream.schema.serde.RegistryUnavailableException;
import io.lobstream.store.LobStore;
import io.lobstream.store.Source;
import io.lobstream.store.StoreStats;
import io.lobstream.store.index.Rejection;
import io.lobstream.store.purge.LocalPurger;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetOutOfRangeException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.Deserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;

/**
 * Rebuilds (part of) one partition's tablespace from its redo log: the committed records of
 * {@code lob.commands} for the partition in an offset range, applied in order with the same
 * {@link CommandApplier} the writer uses, each recording its offset (so a writer's catch-up that
 * stopped part-way resumes from its last applied offset; an offline {@code replay} that fails or is
 * killed starts over, in a new staging directory). What the writer dead-lettered is rejected again and skipped (what it
 * could not decode, by its letter: a replay may decode it now, see {@link DeadLetterLog}). No
 * undo records are produced: superseded versions are reclaimed locally as it goes, since the
 * page numbers in {@code lob.reclaim} belong to the tablespace that wrote them, not to this one.
 * Used offline ({@code ./lobstream replay}) and by a writer task that finds its tablespace
 * behind the group's committed offset ({@link io.lobstream.ingest.writer.TablespaceCatchUp}). A
 * replay from the start needs the topic's whole history ({@code retention.ms=-1}), see README; a copy
 * built without commands retention deleted is marked so ({@link LobStore#markIncomplete}), for fsck to report.
 */
public final class PartitionReplayer {
    private static final Logger log = LoggerFactory.getLogger(PartitionReplayer.class);
    private static final Duration POLL = Duration.ofMillis(500);
    private static final int PURGE_BATCH = 256;

    /**
     * When the copy's history is due a purge: past {@link #PURGE_BATCH} versions, or half of what backpressure lets it
     * have ({@code lob.history.max}, {@code lob.history.max.ratio}). Its purge is the replay's own thread, so a write
     * that waited for purge would only slow the replay. (Each purge ends with a flush: not after every command.)
     */
    private record PurgeDue(long versions, double ratio) {
        static PurgeDue of(LobStore store) {
            int max = store.config().historyMax();
            return new PurgeDue(max > 0 ? Math.min(PURGE_BATCH, max / 2) : PURGE_BATCH, store.config().historyMaxRatio() / 2);
        }

        boolean now(StoreStats s) {
            return s.historyLength() > versions || ratio > 0 && s.pagesHistory() > ratio * s.pagesLive();
        }
    }

    /** What a replay did. */
    public record Result(long records, long applied, long rejected, long endOffset) {
    }

    /** Told, after each poll, how far a replay is: the next offset it reads, and the offset it stops at. */
    @FunctionalInterface
    public interface Progress {
        Progress NONE = (offset, endOffset) -> { };

        void at(long offset, long endOffset);

        /** Told once, before the first record of the range is applied: a replay that reads none issues no version number. */
        default void firstRecord(long offset) throws IOException {
        }
    }

    private final LobStreamConfig config;
    private final ReplayStop stop = new ReplayStop();

    public PartitionReplayer(LobStreamConfig config) {
        this.config = config;
    }

    /**
     * Stops the replay under way (or the next), from any thread: before its next record, or in the Kafka call it waits
     * in. It throws {@link InterruptedIOException} and closes what it opened, leaving its store open and whole: each
     * command's offset is recorded as it is applied, and a replay started again from {@link LobStore#appliedOffset} goes
     * on from there. Not by an interrupt: one that reaches a thread writing or syncing a file closes the file for every
     * thread, and the store could then not sync what it wrote.
     */
    public void stop() {
        stop.ask();
    }

    /** Replays the whole partition, from its first record to the end offset found at start. */
    public Result replay(int partition, LobStore store) throws IOException {
        return replay(partition, store, 0, -1);
    }

    /**
     * Replays offsets {@code [from, to)} of the partition; {@code to} = -1: up to the end offset
     * found at start.
     */
    public Result replay(int partition, LobStore store, long from, long to) throws IOException {
        return replay(partition, store, from, to, Progress.NONE);
    }

    /** As {@link #replay(int, LobStore, long, long)}, telling {@code progress} how far it is after each poll; see {@link #stop}. */
    public Result replay(int partition, LobStore store, long from, long to, Progress progress) throws IOException {
        Map<String, Object> p = config.clientConfig(ClientKind.CONSUMER);
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 100);
        p.put(ConsumerConfig.FETCH_MAX_BYTES_CONFIG, 16 * 1024 * 1024);
        // not a jump to the log's end (Kafka's default) when retention deletes what the replay was about to read: an
        // error, for the replay to say which commands it lost (deletedBeforeRead)
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "none");
        p.put(ConsumerConfig.ALLOW_AUTO_CREATE_TOPICS_CONFIG, false); // a reader: never a topic made on a broker that would
        TopicPartition tp = new TopicPartition(config.topics().commands(), partition);
        long uploadTimeoutMs = config.get(LobStreamConfig.UPLOAD_TIMEOUT_MS);
        long records = 0;
        // the highest command time so far: a record without one takes it (CommandTime), as from the writer's restored
        // partition time where this copy goes on from an offset (a catch-up resumed), not from nothing
        long partitionTime = Math.max(-1, store.latestTime(tp.toString()));
        long applied = 0;
        long rejected = 0;
        DeadLetterLog letters = null; // read at the first record
        long lettersFrom = -1;
        try (Deserializer<Object> values = LobSerdes.valueDeserializer(config);
             KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
             ReplayStop.Watch watch = stop.watch(consumer);
             LocalPurger purger = new LocalPurger(store, PURGE_BATCH)) {
            PurgeDue purgeDue = PurgeDue.of(store);
            consumer.assign(List.of(tp));
            int partitions = consumer.partitionsFor(tp.topic()).size();
            CommandApplier applier = new CommandApplier(config.get(LobStreamConfig.VALUE_MAX_BYTES), partitions,
                    config.get(LobStreamConfig.DEDUPE_WINDOW_MS));
            long next = Math.max(from, deletedBeforeRead(consumer, tp, from, store)); // the consumer's position, as of the last poll
            compactedBeforeRead(tp, store);
            JudgingSettings.of(config).recordIn(store, next);
            consumer.seek(tp, next);
            long logEnd = consumer.endOffsets(List.of(tp)).get(tp);
            if (to > logEnd) { // the poll loop would wait for ever for offsets the log no longer has
                throw new IOException("asked to replay " + tp + " up to offset " + to + ", past the end of its log (" + logEnd
                        + "): the log lost records that were committed (an unclean leader election, a lost disk?). "
                        + TablespaceCheck.offsetReset(config, tp));
            }
            long end = to >= 0 ? to : logEnd;
            log.info("replaying {} offsets [{}, {})", tp, next, end);
            long lastLog = System.nanoTime();
            long progressedAt = lastLog;
            long seen = next;
            while (next < end) {
                stopIfAsked(tp, next);
                ConsumerRecords<byte[], byte[]> polled;
                try { // (both calls are where the consumer finds its position gone)
                    polled = consumer.poll(POLL);
                    next = consumer.position(tp);
                } catch (OffsetOutOfRangeException e) { // retention deleted the next records meanwhile, or the log went back
                    long at = e.offsetOutOfRangePartitions().getOrDefault(tp, next);
                    long first = deletedBeforeRead(consumer, tp, at, store);
                    if (first <= at) { // out of range past the log's end: it lost records
                        throw new IOException(tp + " has no offset " + at + " any more: the log lost records that were committed "
                                + "(an unclean leader election, a lost disk?). " + TablespaceCheck.offsetReset(config, tp), e);
                    }
                    consumer.seek(tp, first);
                    next = first;
                    continue;
                }
                if (next != seen) {
                    seen = next;
                    progressedAt = System.nanoTime();
                } else if (System.nanoTime() - progressedAt > DeadLetterLog.STALLED.toNanos()) {
                    // records up to the end are there to read: a wait for ever (a broker away) would print progress for ever
                    throw new IOException("cannot read " + tp + " past offset " + next + " of " + end + " (a broker away, a partition "
                            + "without a leader?)", new TimeoutException("no progress for " + DeadLetterLog.STALLED.toSeconds() + " s"));
                }
                for (ConsumerRecord<byte[], byte[]> r : polled) {
                    if (r.offset() >= end) {
                        break;
                    }
                    stopIfAsked(tp, r.offset());
                    if (records++ == 0) {
                        // (a range of markers alone: not read)
                        letters = DeadLetterLog.read(config, tp, r.offset(), end, DeadLetterLog.since(r), stop);
                        lettersFrom = r.offset();
                        lettersCompactedBeforeRead(letters, store);
                        progress.firstRecord(r.offset());
                    }
                    int home = r.key() == null ? tp.partition() : Topics.partitionOf(r.key(), partitions);
                    // read again if its letter may be older than those read, or (its key's partition another) in any partition
                    DeadLetterLog judged = letters.toJudge(r, home != tp.partition(), config, tp, lettersFrom, end, stop);
                    if (judged != letters) { // read again: its check of the topic too
                        letters = judged;
                        lettersCompactedBeforeRead(letters, store);
                    }
                    if (home != tp.partition()) { // refused below, as the writer refuses it now; unless it applied it, under another count
                        letters.requireLetterIfElsewhere(r, home, partitions);
                    }
                    CommandApplier.Outcome o;
                    // the writer's name for this input, so the applied offsets agree with what its tasks record
                    LobCommand cmd;
                    LobCommand decoded = null;
                    Rejection refusedThen = null;
                    try {
                        cmd = decoded = LobSerdes.decode(values, r.topic(), r.value(), LobCommand.class);
                        Optional<DeadLetterLog.Letter> letter = letters.refusedAt(r);
                        if (letter.isPresent()) { // its redriven copy, if any, applies where it was sent back
                            cmd = null;
                            refusedThen = new Rejection(letter.get().kind(), letter.get().reason());
                        }
                    } catch (RegistryUnavailableException e) {
                        throw e; // the writer would have retried too, not skipped the command
                    } catch (RuntimeException undecodable) {
                        cmd = null; // dead-lettered by the writer too; a failure to apply one that decodes is not skipped
                        refusedThen = new Rejection(Rejection.UNDECODABLE, "cannot decode a LobCommand: " + undecodable.getMessage());
                        // unless this replay reads another registry, or with another deserializer, than the writer did
                        letters.requireLetter(r, config.registryShown(), undecodable);
                    }
                    long at = CommandTime.of(r.timestamp(), partitionTime); // as the writer's tasks read it
                    partitionTime = Math.max(partitionTime, at);
                    boolean writerDecoded = decoded != null && (refusedThen == null || !Rejection.UNDECODABLE.equals(refusedThen.kind()));
                    if (writerDecoded && decoded.getUploadId() != null) { // refused by its letter or not, as the writer does
                        // before a chunk, as the writer does (CommandProcessor.apply): an upload idle for the timeout in the
                        // commands' time is gone
                        UploadExpiry.expireBeforeUploadCommand(store, tp.toString(), at, uploadTimeoutMs);
                    }
                    Source source = new Source(tp.toString(), r.offset(), at);
                    if (cmd == null) {
                        store.recordRejected(source, refusedThen); // as the writer does
                        o = new CommandApplier.Rejected(refusedThen.kind(), refusedThen.reason());
                    } else {
                        o = applier.apply(cmd, r.key(), tp.partition(), at, store, source);
                    }
                    if (o instanceof CommandApplier.Applied) {
                        applied++;
                    } else if (o instanceof CommandApplier.Rejected) {
                        rejected++;
                    }
                    while (purgeDue.now(store.stats()) && purger.purgeOnce() > 0) {
                        // keep the rebuilt tablespace near its live size
                    }
                }
                if (!polled.isEmpty()) {
                    progressedAt = System.nanoTime(); // the stall counts from here: applying them (and reading letters) is progress
                }
                progress.at(next, end);
                if (System.nanoTime() - lastLog > 5_000_000_000L) {
                    lastLog = System.nanoTime();
                    log.info("replaying {}: offset {} of {} ({} applied, {} rejected)", tp, next, end, applied, rejected);
                }
            }
            while (purger.purgeOnce() > 0) {
                // drain the rest of the history
            }
            store.flush();
            log.info("replayed {}: {} records, {} applied, {} rejected (dead-lettered in the original run)", tp, records, applied, rejected);
            return new Result(records, applied, rejected, end);
        } catch (WakeupException e) {
            stop.throwIfAsked(e, "replay of " + tp);
            throw e; // (only a stop wakes its consumer)
        }
    }

    /**
     * The partition's first offset; if retention deleted commands from {@code next} on before this copy read them, the
     * copy is marked incomplete first, for fsck to report: before anything past the gap is applied and its offset recorded,
     * so that no crash leaves a copy that looks whole (offsets alone cannot tell a lost command from a transaction marker:
     * the range may have held only markers).
     */
    private static long deletedBeforeRead(KafkaConsumer<?, ?> consumer, TopicPartition tp, long next, LobStore store) throws IOException {
        long first = consumer.beginningOffsets(List.of(tp)).get(tp);
        if (first > next) {
            log.error("{} starts at offset {} (retention deleted the records before it): the commands in [{}, {}), if any, are "
                    + "lost to this copy, and fsck of {} will say so. Keep lob.commands with retention.ms=-1 to rebuild a "
                    + "partition from its topic.", tp, first, next, first, store.directory());
            store.markIncomplete("offsets [" + next + ", " + first + ") of " + tp + ", deleted by retention before this copy read them");
        }
        return first;
    }

    /**
     * Marks the copy incomplete, as {@link #deletedBeforeRead} does, if {@code lob.commands} compacts: compaction keeps only
     * the newest record of each LOB (an upload's last chunk, a write's last piece) and leaves the log's start where it was,
     * so nothing else here would see what it took, and the copy would pass fsck with values missing. A configuration that
     * cannot be read is said, and the replay goes on (a principal without DescribeConfigs).
     */
    private void compactedBeforeRead(TopicPartition tp, LobStore store) throws IOException {
        Optional<String> compaction;
        try (Admin admin = Admin.create(config.clientConfig(ClientKind.ADMIN)); ReplayStop.Watch watch = stop.watch(admin)) {
            compaction = compaction(admin, tp.topic(), stop);
        }
        if (compaction.isPresent()) {
            log.error("{} has cleanup.policy={}: compaction keeps only the newest record of each LOB, so commands this copy needs "
                    + "may be gone, and fsck of {} will say so. Keep lob.commands with cleanup.policy=delete and retention.ms=-1 "
                    + "to rebuild a partition from its topic.", tp.topic(), compaction.get(), store.directory());
            store.markIncomplete(tp + " has cleanup.policy=" + compaction.get() + ": compaction may have taken commands before this "
                    + "copy read them");
        }
    }

    /**
     * {@code topic}'s {@code cleanup.policy} if it compacts (a topic made or altered by hand: a node warns of it); empty if
     * not, or if its configuration cannot be read (a principal without DescribeConfigs), which is said, and the replay goes
     * on unchecked. A stop asked meanwhile ends it.
     */
    static Optional<String> compaction(Admin admin, String topic, ReplayStop stop) throws InterruptedIOException {
        try {
            return TopicSetup.compaction(admin, topic, Duration.ofSeconds(30));
        } catch (ExecutionException | TimeoutException | RuntimeException e) {
            stop.throwIfAsked(e, "reading the configuration of " + topic);
            log.warn("cannot read the configuration of {} ({}): whether compaction took records from it is not checked", topic,
                    e.toString());
            return Optional.empty();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted while reading the configuration of " + topic);
        }
    }

    /**
     * Marks the copy incomplete, before it applies anything (or the next command, after a read again), if the dead-letter
     * topic compacts: a command the writer refused may have lost its letter, and this copy may then apply it, where the
     * writer's tablespace does not have it.
     */
    private void lettersCompactedBeforeRead(DeadLetterLog letters, LobStore store) throws IOException {
        if (letters.compaction().isPresent()) {
            String topic = config.topics().deadLetters();
            log.error("{} has cleanup.policy={}: compaction keeps only the newest letter of each LOB, so this copy may apply "
                    + "commands the writer refused, and fsck of {} will say so. Keep {} with cleanup.policy=delete (letters "
                    + "compaction took stay lost: rebuild from topics that never compacted).", topic, letters.compaction().get(),
                    store.directory(), topic);
            store.markIncomplete(topic + " has cleanup.policy=" + letters.compaction().get() + ": compaction may have taken the "
                    + "letters of commands the writer refused, which this copy may then have applied");
        }
    }

    private void stopIfAsked(TopicPartition tp, long next) throws InterruptedIOException {
        stop.throwIfAsked("replay of " + tp + " stopped before offset " + next);
    }
}
