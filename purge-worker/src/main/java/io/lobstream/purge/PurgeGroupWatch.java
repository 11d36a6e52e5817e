package io.lobstream.purge;

import io.lobstream.schema.LobStreamConfig;
import io.lobstream.schema.LobStreamConfig.ClientKind;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.GroupIdNotFoundException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import java.util.stream.Collectors;

/**
 * Which partitions standalone purge workers ({@code lobstream purge}, members of the purge group) hold, for a node's own
 * workers to stand down from. A node's workers are no members: they assign themselves the node's partitions. The group
 * gives its members every partition whose tablespace one of them holds ({@link TablespacePartitionAssignor}), so a node's
 * worker purging beside them would read and reclaim each undo record a
 * second time (the writer ignores the second reclaim) and commit the group's offsets under theirs. So an operator scales
 * purge out by starting workers, and back in by stopping them: the node's take their partitions up again from the
 * group's offsets once no member holds them.
 *
 * <p>A member that holds a partition it cannot purge (its copy does not open, its tablespace went since it told the
 * group, or a member of an older version, given partitions by Kafka's sticky assignor) keeps it paused and commits
 * nothing for it: {@link MemberHolds} tells it from one that purges.
 */
final class PurgeGroupWatch implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(PurgeGroupWatch.class);
    /** How often the group is described: a member that joined is purged beside for about this long at most. */
    static final Duration EVERY = Duration.ofSeconds(5);
    private final Admin admin;
    private final String group;
    private final String undoTopic;
    private final ScheduledExecutorService timer;
    /** The timer thread's alone. */
    private final MemberHolds holds;
    private final Supplier<Set<Integer>> open;
    private volatile Set<Integer> standDown = Set.of();
    /** The partitions members held at the last answer (the timer thread's). */
    private Set<Integer> heldBefore = Set.of();
    /** The node's partitions the last line logged said it stood down from (the timer thread's). */
    private Set<Integer> loggedOurs = Set.of();

    /** @param open the node's open partitions: those it says it stands down from, or takes back */
    PurgeGroupWatch(LobStreamConfig config, Supplier<Set<Integer>> open) {
        this.group = config.get(LobStreamConfig.PURGE_GROUP);
        this.undoTopic = config.topics().undoHistory();
        this.open = open;
        // a member that purges commits at least once a transaction budget (longer where the user raised the timeouts)
        Duration stalled = PurgeClients.transactionBudget(config).multipliedBy(2).plus(EVERY);
        this.holds = new MemberHolds(group, stalled.compareTo(MemberHolds.STALLED) > 0 ? stalled : MemberHolds.STALLED);
        this.admin = Admin.create(config.clientConfig(ClientKind.ADMIN));
        this.timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "purge-group-watch");
            t.setDaemon(true);
            return t;
        });
        timer.scheduleWithFixedDelay(this::check, 0, EVERY.toMillis(), TimeUnit.MILLISECONDS);
    }

    /** The partitions standalone workers held and purged at the last answer (none before it, or with the cluster away). */
    Set<Integer> standDownFrom() {
        return standDown;
    }

    private void check() {
        try {
            Map<Integer, String> holders = holders();
            if (holders == null) {
                return; // a rebalance: no member has an assignment until it ends, the last answer holds
            }
            Map<Integer, Long> committed = new HashMap<>();
            Map<Integer, Long> starts = new HashMap<>();
            Map<Integer, Long> ends = new HashMap<>();
            if (!holders.isEmpty()) {
                Map<TopicPartition, OffsetAndMetadata> offsets = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata()
                        .get(EVERY.toMillis(), TimeUnit.MILLISECONDS);
                offsets.forEach((tp, o) -> {
                    if (tp.topic().equals(undoTopic) && o != null) {
                        committed.put(tp.partition(), o.offset());
                    }
                });
                offsets(holders.keySet(), OffsetSpec.earliest(), starts);
                offsets(holders.keySet(), OffsetSpec.latest(), ends);
            }
            // every held partition, not only those open now: one that opens before the next check is covered already
            Set<Integer> ours = open.get();
            Set<Integer> now = new HashSet<>(holds.standDownFrom(holders, committed, starts, ends, ours, System.nanoTime()));
            // one a member gave up since the last answer may be moving to another: the cooperative assignor takes it in one
            // rebalance and gives it in the next, and an answer in between (the group stable for a moment) finds nobody
            // holding it. Stood down from for one more check, so the node does not start purging it only to stop again
            heldBefore.stream().filter(p -> !holders.containsKey(p)).forEach(now::add);
            heldBefore = Set.copyOf(holders.keySet());
            Set<Integer> oursHeld = new TreeSet<>(now);
            oursHeld.retainAll(ours);
            if (!oursHeld.equals(loggedOurs)) { // what this node does: its partitions open and close, the members come and go
                if (oursHeld.isEmpty()) {
                    log.info("purge group {}: no standalone worker holds this node's partitions now, its purge workers purge them", group);
                } else {
                    log.info("purge group {}: standalone workers hold undo-history partitions {} of this node's, its purge workers "
                            + "stand down from them (a node whose purge they do runs with --purge-workers 0)", group, oursHeld);
                }
                loggedOurs = oursHeld;
            }
            standDown = Set.copyOf(now);
        } catch (ExecutionException e) {
            log.debug("cannot describe purge group {}: {}", group, e.getCause().toString()); // the last answer holds
        } catch (TimeoutException e) {
            log.debug("purge group {} not described within {}", group, EVERY);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            // a scheduled task that throws is never run again: the node's workers would stand down, or not, for good
            log.warn("purge group {}: its members could not be looked at: {}", group, e.toString());
        }
    }

    /** Puts the offset {@code spec} names of each of {@code partitions} of undo-history into {@code into}, as read_committed. */
    private void offsets(Set<Integer> partitions, OffsetSpec spec, Map<Integer, Long> into)
            throws ExecutionException, InterruptedException, TimeoutException {
        Map<TopicPartition, OffsetSpec> which = partitions.stream().collect(Collectors.toMap(p -> new TopicPartition(undoTopic, p), p -> spec));
        admin.listOffsets(which, new ListOffsetsOptions(IsolationLevel.READ_COMMITTED)).all()
                .get(EVERY.toMillis(), TimeUnit.MILLISECONDS).forEach((tp, info) -> into.put(tp.partition(), info.offset()));
    }

    /** Each undo-history partition that a member of the group holds, and the member; null while the group rebalances. */
    private Map<Integer, String> holders() throws ExecutionException, InterruptedException, TimeoutException {
        Map<Integer, String> holders = new HashMap<>();
        try {
            ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).describedGroups().get(group)
                    .get(EVERY.toMillis(), TimeUnit.MILLISECONDS);
            if (d.groupState() != GroupState.STABLE && d.groupState() != GroupState.EMPTY && d.groupState() != GroupState.DEAD) {
                return null; // (the classic protocol gives members' assignments only while the group is stable)
            }
            for (MemberDescription m : d.members()) {
                for (TopicPartition tp : m.assignment().topicPartitions()) {
                    if (tp.topic().equals(undoTopic)) {
                        holders.put(tp.partition(), m.consumerId());
                    }
                }
            }
        } catch (ExecutionException e) {
            if (!(e.getCause() instanceof GroupIdNotFoundException)) {
                throw e;
            }
        }
        return holders;
    }

    @Override
    public void close() {
        timer.shutdownNow();
        try {
            timer.awaitTermination(EVERY.toMillis() + 1_000, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        admin.close(Duration.ofSeconds(5));
    }
}
