package io.lobstream.ingest.writer;

import io.lobstream.schema.LobStreamConfig;
import io.lobstream.store.LobStore;
import io.lobstream.store.StoreStats;
import io.lobstream.store.tablespace.TablespaceDirs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeTopicsOptions;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsOptions;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Whether a task's tablespace may serve its partition as it is: a copy of this {@code lob.commands} log (its topic id,
 * partition count, no log cut or lost under it, not another deployment's), and how far it is behind the writer group's
 * stable committed offset. A task's init asks on its stream thread, each question to the cluster within
 * {@link #CHECK_TIMEOUT}; {@link TablespaceCatchUp}'s thread asks again, with the offset it waited for, before it
 * replays into the copy.
 */
public final class TablespaceCheck implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(TablespaceCheck.class);

    private final LobStreamConfig config;
    private final WriterMetrics metrics;
    /**
     * The end offset the last catch-up of each copy of a partition's tablespace ({@link LobStore#copyId()})
     * replayed to. By copy, not by partition: a tablespace moved aside after a failed sync is replaced by an
     * empty one, which the replay of its predecessor says nothing about.
     */
    private final Map<String, Long> replayedTo = new ConcurrentHashMap<>();
    /**
     * Asks the checks' questions for every task's init, made at the first: one per check cost each task start a
     * connection and a metadata round trip on its stream thread.
     */
    private final LazyAdmin admin;

    TablespaceCheck(LobStreamConfig config, WriterMetrics metrics) {
        this.config = config;
        this.metrics = metrics;
        this.admin = new LazyAdmin(config);
    }

    /** A catch-up of copy {@code copyId} replayed up to {@code endOffset}: the copy is current up to there. */
    void replayed(String copyId, long endOffset) {
        replayedTo.put(copyId, endOffset);
    }

    /** Copy {@code copyId} was given a new id: no store opens under this one again. */
    void forget(String copyId) {
        replayedTo.remove(copyId);
    }

    /** What {@link #check} found out about a task's tablespace. */
    public enum Verdict {
        /** It has applied every command of its partition the writer group committed: the task may start. */
        CURRENT,
        /** It is behind the writer group's committed offset: it needs a catch-up. */
        BEHIND,
        /**
         * The group's committed offset is not stable: a commit of the partition's last owner is still
         * in flight (a node that died mid-transaction leaves it open until its transaction times out),
         * or the group coordinator did not answer in time. The catch-up thread waits for it.
         */
        UNKNOWN,
        /**
         * It has applied offsets of {@code lob.commands} past the topic's end, and the writer group has committed no
         * offset past it: it is a copy of another log than the one there is now (the topic deleted and made again, an
         * embedded broker's directory deleted). Trusted, it would take each new command at an offset it has applied for
         * one applied already and drop it. It is moved aside and the partition rebuilt.
         */
        AHEAD,
        /**
         * It has applied commands of a topic of the same name that was deleted since (its topic id, recorded when it was
         * first checked, is not the topic's now): its offsets are another log's, as an {@link #AHEAD} one's. Or it is
         * another deployment's (another lob.topic.prefix on the same data directory), whose LOBs would be served, and
         * replaced, as this one's: it applied commands of another topic, or holds versions but never applied a command of
         * this topic. It is moved aside and the partition rebuilt.
         */
        OTHER_TOPIC,
        /**
         * Its commands log went back under its running task ({@code LOG-CUT}, marked by the task): it applied offsets the
         * log may now hold other commands at, though the log has grown past them since. Moved aside and rebuilt.
         */
        LOG_CUT,
        /**
         * Its topic has another partition count than when the tablespace was made (partitions were added): LOBs written
         * since may be in other partitions than their history. The task does not start; the node logs why.
         */
        PARTITIONS_CHANGED,
        /**
         * The writer group committed offsets past the topic's end: the log lost records that were committed (an unclean
         * leader election, a broker's lost disk), whatever this copy holds (a fresh or stale copy too: a partition often
         * moves because its owner died, with the leader that lost them). Neither the tablespace nor the group's offset is a
         * place to go on from (the consumer would start past the end, a catch-up cannot reach the offset, and new commands
         * at offsets a tablespace applied would be taken for applied ones): the task does not start until an operator
         * resets the group's offset ({@link #logLost}) or new commands fill the log up to it. A tablespace that applied
         * past the end is marked {@link #LOG_CUT} at the check, so that then it is moved aside and rebuilt.
         */
        LOG_LOST
    }

    /** What the operator is told when a partition's log lost records the writer group committed ({@link Verdict#LOG_LOST}). */
    private String logLost(int partition, long applied, long committed, long end) {
        TopicPartition tp = new TopicPartition(config.topics().commands(), partition);
        return "partition " + partition + ": " + tp.topic() + " ends at offset " + end + ", but the tablespace applied up to "
                + applied + " and the writer group committed " + committed + ": the log lost records that were committed (an "
                + "unclean leader election, a lost disk?). The task does not start. " + offsetReset(config, tp);
    }

    /**
     * How an operator goes on with a log that lost records the writer group committed: said by a task's check and by a
     * catch-up or replay asked to go past the log's end.
     */
    public static String offsetReset(LobStreamConfig config, TopicPartition tp) {
        return "To go on with the log there is, stop the writer nodes and reset the writer group's offset of " + tp + " to the "
                + "log's end (kafka-consumer-groups --bootstrap-server ... --group " + config.get(LobStreamConfig.APPLICATION_ID)
                + " --topic " + tp.topic() + ":" + tp.partition() + " --reset-offsets --to-latest --execute): a node then rebuilds "
                + "the partition's tablespace from what the log has (as it does once new commands fill the log up to the "
                + "group's offset)";
    }

    /**
     * How long a task's init, on its stream thread, waits for each of its questions to the cluster
     * (the committed offset, the topic, the log's end): one round trip each, normally. The committed
     * offset's answer does not wait for a commit in flight (see {@link #check}).
     */
    static final Duration CHECK_TIMEOUT = Duration.ofSeconds(2);
    /**
     * Whether {@code store} has applied every command of its partition the writer group committed,
     * by the group's stable committed offset: not the offset before a commit still in flight (the
     * last owner's), which the task's consumer would start past once it is decided, leaving the
     * commands in between unapplied here. Asked with the admin client's {@code requireStable},
     * which answers at once: a partition whose offset is not stable is left out of the answer,
     * one with no offset committed is in it with none.
     */
    public Verdict check(int partition, LobStore store) throws IOException {
        TopicPartition tp = new TopicPartition(config.topics().commands(), partition);
        OptionalLong stable = stableCommittedOffsetNow(tp);
        if (stable.isEmpty()) {
            log.info("partition {}: the writer group's committed offset of {} is not stable (a commit in flight, or no answer "
                    + "within {} ms); waiting for it on a thread of its own", partition, tp.topic(), CHECK_TIMEOUT.toMillis());
            return Verdict.UNKNOWN;
        }
        return check(partition, store, tp, stable.getAsLong(), true);
    }

    /**
     * {@link #check(int, LobStore)} against {@code committed}, the writer group's stable committed offset: first whether
     * the store is a copy of this log at all (its topic id, partition count, a log cut or lost under it), then how far.
     *
     * @param atInit a task's init, which counts the starts it refuses (a catch-up's check leaves them to the next init)
     */
    Verdict check(int partition, LobStore store, TopicPartition tp, long committed, boolean atInit) throws IOException {
        String source = tp.topic() + "-" + tp.partition();
        Optional<CommandsLog> now = topicNow(tp).map(CommandsLog::of);
        if (now.isEmpty() || now.get().partitions() <= partition) {
            return Verdict.UNKNOWN; // no answer, or a broker whose metadata is behind the partitions added (asked again)
        }
        Optional<CommandsLog> recorded = store.logId(source).map(CommandsLog::decode);
        if (recorded.isPresent() && recorded.get().otherTopicThan(now.get())) {
            log.error("partition {}: the tablespace applied commands of {} when the topic's id was {}; it is {} now (the topic "
                    + "was deleted and made again)", partition, tp.topic(), recorded.get().topicId(), now.get().topicId());
            return Verdict.OTHER_TOPIC;
        }
        if (recorded.isPresent() && recorded.get().otherPartitionCountThan(now.get())) {
            log.error("partition {}: {} has {} partitions; it had {} when this tablespace was made. A LOB's partition is its "
                    + "key's hash modulo the count, so LOBs written since may be in other partitions than their history, and "
                    + "the task does not start. Kafka cannot take partitions away: copy the commands to new topics of {} "
                    + "partitions and start the nodes on them with empty data directories, which they rebuild from the copy "
                    + "(or start anew)", partition, tp.topic(), now.get().partitions(), recorded.get().partitions(),
                    recorded.get().partitions());
            if (atInit) {
                metrics.partitionCountChanged(partition);
            }
            return Verdict.PARTITIONS_CHANGED;
        }
        long applied = store.appliedOffset(source);
        // both ways: a deployment that finds the other's copy, and one that comes back to a copy the other applied commands
        // to; not a topic a node with the wrong prefix only looked at (its check recorded the log, and it applied nothing)
        Set<String> others = new TreeSet<>();
        for (String other : store.sourcesWithLogIds()) {
            if (!other.equals(source) && store.appliedOffset(other) >= 0) {
                others.add(other);
            }
        }
        if (!others.isEmpty() || recorded.isEmpty() && applied < 0 && holdsVersions(store)) {
            log.error("partition {}: the tablespace {}: it is another deployment's (another lob.topic.prefix, or a data directory "
                    + "copied from elsewhere){}", partition, others.isEmpty()
                    ? "holds versions but never applied a command of " + tp.topic()
                    : "applied commands of " + others + " (another topic than " + tp.topic() + ")", atInit ? ", moved aside as p-"
                    + partition + ".other-topic-TIME and rebuilt. If this node's lob.topic.prefix is the wrong one, stop it, move "
                    + "the p-" + partition + " it rebuilds aside and that copy back to p-" + partition + " (unless both topics' "
                    + "commands were applied to it: then it is neither's)" : "; moved aside at the task's next start");
            return Verdict.OTHER_TOPIC;
        }
        Optional<String> cut = TablespaceDirs.logCut(store.directory(), store.copyId());
        // (a fresh copy of a partition with nothing committed has nothing to hold against the log's end: a first start)
        if (applied >= 0 || committed > 0) {
            OptionalLong end = logEndNow(tp);
            if (end.isEmpty()) {
                return Verdict.UNKNOWN;
            }
            if (committed > end.getAsLong()) {
                // the group's offset past the log's end: records it committed are gone, whatever this copy holds (a fresh or
                // stale copy too: the partition often moved because its owner died, with the leader that lost them)
                log.error(logLost(partition, applied, committed, end.getAsLong()));
                if (applied >= end.getAsLong() && cut.isEmpty()) {
                    // This copy applied commands the log no longer holds. Marked, it is moved aside and rebuilt at its next
                    // start however the hold ends: once new commands fill the log up to the group's offset (producers go
                    // on writing) as when the offset is reset, the checks below would find it current, or behind, and
                    // take the new commands at the offsets it applied for applied ones (lost, and reported applied).
                    // At once: a mark missed (the log refilled before a later check) loses commands without a word, where
                    // one made on a stale answer of the log's end (a leader cut off, until it is fenced) costs a rebuild.
                    TablespaceDirs.markLogCut(store.directory(), store.copyId(), "lob.commands ends at offset " + end.getAsLong()
                            + ", below offset " + applied + " this copy applied: the log lost records the writer group committed");
                }
                if (atInit) {
                    metrics.logLost(partition);
                }
                return Verdict.LOG_LOST;
            }
            if (applied >= 0 && (applied >= end.getAsLong() || cut.isPresent())) {
                if (cut.isPresent()) {
                    log.error("partition {}: {}; the tablespace applied {} up to offset {}, which the log may now hold other "
                            + "commands at", partition, cut.get(), tp.topic(), applied);
                    return Verdict.LOG_CUT;
                }
                log.error("partition {}: the tablespace has applied {} up to offset {}, but the topic ends at offset {}",
                        partition, tp.topic(), applied, end.getAsLong());
                return Verdict.AHEAD;
            }
        }
        CommandsLog completed = recorded.map(r -> r.completedBy(now.get())).orElse(now.get());
        if (!recorded.equals(Optional.of(completed))) {
            // a new tablespace, or one of a release before this was recorded: its offsets are taken for this topic's
            store.recordLogId(source, completed.encode());
        }
        if (current(store, applied, committed)) {
            return Verdict.CURRENT;
        }
        log.info("partition {}: the tablespace has applied {} up to offset {}, the writer group committed {}: catching up",
                partition, tp.topic(), applied, committed);
        return Verdict.BEHIND;
    }

    private static boolean holdsVersions(LobStore store) {
        StoreStats s = store.stats();
        return s.lobs() > 0 || s.historyLength() > 0 || s.pagesUploading() > 0;
    }

    /**
     * Whether a store that applied up to {@code applied} has every command before {@code committed}.
     * A catch-up that replayed up to the committed offset leaves the store current even when its last
     * records recorded no applied offset (skipped records did not, before this release):
     * replaying them again would change nothing, and asking again would never end.
     */
    private boolean current(LobStore store, long applied, long committed) {
        return committed <= Math.max(applied + 1, replayedTo.getOrDefault(store.copyId(), -1L));
    }

    /** The writer group's committed offset of {@code tp} (-1: none) if it is stable now, else empty. */
    private OptionalLong stableCommittedOffsetNow(TopicPartition tp) throws IOException {
        String group = config.get(LobStreamConfig.APPLICATION_ID);
        // the call's own timeout too: one not answered in time does not go on retrying in the shared client
        Optional<Map<TopicPartition, OffsetAndMetadata>> answer = answerNow(tp, "the committed offsets of group " + group,
                askStableOffset(admin(), group, tp, (int) CHECK_TIMEOUT.toMillis()));
        return answer.isEmpty() ? OptionalLong.empty() : stableOffsetIn(answer.get(), tp);
    }

    /** Asks for {@code group}'s committed offset of {@code tp} with {@code requireStable}: see {@link #stableOffsetIn}. */
    public static KafkaFuture<Map<TopicPartition, OffsetAndMetadata>> askStableOffset(Admin admin, String group, TopicPartition tp,
                                                                                     int timeoutMs) {
        return admin.listConsumerGroupOffsets(Map.of(group, new ListConsumerGroupOffsetsSpec().topicPartitions(List.of(tp))),
                new ListConsumerGroupOffsetsOptions().requireStable(true).timeoutMs(timeoutMs)).partitionsToOffsetAndMetadata(group);
    }

    /**
     * The stable committed offset of {@code tp} in an answer of {@link #askStableOffset}: -1 when none was committed; empty
     * when the partition was left out, its commit in flight (its error, UNSTABLE_OFFSET_COMMIT, only logged by the admin
     * client), which is not "none committed".
     */
    public static OptionalLong stableOffsetIn(Map<TopicPartition, OffsetAndMetadata> answer, TopicPartition tp) {
        if (!answer.containsKey(tp)) {
            return OptionalLong.empty();
        }
        OffsetAndMetadata o = answer.get(tp); // null: no offset committed
        return OptionalLong.of(o == null ? -1 : o.offset());
    }

    /** The end offset of {@code tp}, or empty when the broker did not answer in time. */
    private OptionalLong logEndNow(TopicPartition tp) throws IOException {
        Optional<ListOffsetsResult.ListOffsetsResultInfo> answer = answerNow(tp, "the topic's end offset",
                admin().listOffsets(Map.of(tp, OffsetSpec.latest()), new ListOffsetsOptions().timeoutMs((int) CHECK_TIMEOUT.toMillis()))
                        .partitionResult(tp));
        return answer.isEmpty() ? OptionalLong.empty() : OptionalLong.of(answer.get().offset());
    }

    /** {@code tp}'s topic (its id and partitions), or empty when the broker did not answer in time. */
    private Optional<TopicDescription> topicNow(TopicPartition tp) throws IOException {
        return answerNow(tp, "the topic's id and partitions", admin().describeTopics(List.of(tp.topic()),
                new DescribeTopicsOptions().timeoutMs((int) CHECK_TIMEOUT.toMillis())).topicNameValues().get(tp.topic()));
    }

    /**
     * What the admin client answers within {@link #CHECK_TIMEOUT}, or empty. A coordinator moving, a broker away: the
     * catch-up thread asks again until it is answered, where failing the init would fail the stream thread, and with it
     * every task the thread has.
     */
    private <T> Optional<T> answerNow(TopicPartition tp, String what, KafkaFuture<T> answer) throws IOException {
        try {
            return Optional.of(answer.get(CHECK_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS));
        } catch (TimeoutException e) {
            return Optional.empty();
        } catch (ExecutionException e) {
            log.warn("partition {}: cannot read {} now ({}); asking again on a thread of its own", tp.partition(), what,
                    e.getCause().toString());
            return Optional.empty();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while reading " + what + " of " + tp, e);
        }
    }

    private Admin admin() throws IOException {
        try {
            return admin.get();
        } catch (IllegalStateException closing) {
            throw new IOException(closing.getMessage());
        }
    }

    /** Closes the admin client: a check still waiting fails, and no other is asked. */
    @Override
    public void close() {
        admin.close();
    }
}
