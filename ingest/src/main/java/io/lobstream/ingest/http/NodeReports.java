package io.lobstream.ingest.http;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.lobstream.ingest.writer.AdminPurgeProgress;
import io.lobstream.ingest.writer.JudgingSettings;
import io.lobstream.ingest.writer.TablespaceRegistry;
import io.lobstream.ingest.writer.TaskFailure;
import io.lobstream.ingest.writer.TaskRetries;
import io.lobstream.store.LobStore;
import io.lobstream.store.StoreStats;
import io.lobstream.store.TablespaceClosedException;
import io.lobstream.store.fsck.FsckReport;
import org.apache.kafka.streams.KafkaStreams;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SortedSet;
import java.util.TreeSet;
import java.util.function.Supplier;

/**
 * What a node's {@code GET /status} and {@code GET /fsck} answer, as JSON: its writer's state, its last check of the
 * cluster, the partitions catching up or waiting after a failure, and each open tablespace's figures or fsck.
 * {@link LobHttpServer} serves them.
 */
final class NodeReports {
    private static final Logger log = LoggerFactory.getLogger(NodeReports.class);
    private static final ObjectMapper JSON = new ObjectMapper();

    private final TablespaceRegistry registry;
    private final String commandsTopic;
    private volatile Supplier<? extends Collection<Integer>> catchingUp = List::of;
    private volatile Supplier<? extends Map<Integer, Long>> catchUpRemaining = Map::of;
    private volatile Supplier<? extends List<TaskFailure>> catchUpsWaiting = List::of;
    /** How the node's last check of the cluster went; null: the node does not check (lob.undo.resend.interval.ms 0). */
    private volatile Supplier<AdminPurgeProgress.ClusterAnswer> clusterAnswer = () -> null;

    NodeReports(TablespaceRegistry registry, String commandsTopic) {
        this.registry = registry;
        this.commandsTopic = commandsTopic;
    }

    /** See {@link LobHttpServer#attachCatchUps}. */
    void attachCatchUps(Supplier<? extends Collection<Integer>> catchingUp, Supplier<? extends Map<Integer, Long>> remaining,
                        Supplier<? extends List<TaskFailure>> waiting) {
        this.catchingUp = catchingUp;
        this.catchUpRemaining = remaining;
        this.catchUpsWaiting = waiting;
    }

    /** See {@link LobHttpServer#attachClusterChecks}. */
    void attachClusterChecks(Supplier<AdminPurgeProgress.ClusterAnswer> answer) {
        this.clusterAnswer = answer;
    }

    /** {@code /status}: {@code streams} null before the writer is attached. */
    ObjectNode status(KafkaStreams streams) throws IOException {
        ObjectNode root = JSON.createObjectNode();
        root.put("state", streams == null ? "NOT_STARTED" : streams.state().name());
        // Kafka Streams reads RUNNING through an outage, its clients retrying: whether the cluster answers the node now
        AdminPurgeProgress.ClusterAnswer answer = clusterAnswer.get();
        if (answer != null) {
            ObjectNode kafka = root.putObject("kafka");
            if (answer.answeredAtMillis() < 0) {
                kafka.putNull("answered_s_ago");
            } else {
                kafka.put("answered_s_ago", Math.max(0, System.currentTimeMillis() - answer.answeredAtMillis()) / 1000);
            }
            kafka.put("checked_every_s", answer.everyMs() / 1000.0);
            if (answer.lastError() != null) {
                kafka.put("error", answer.lastError());
            }
        }
        // why a node reads REBALANCING for long: a partition's tablespace replaying lob.commands before its task starts
        ArrayNode catchUps = root.putArray("catching_up");
        catchingUp.get().forEach(catchUps::add);
        ObjectNode left = root.putObject("catching_up_remaining"); // partition -> records of lob.commands still to replay
        catchUpRemaining.get().forEach((p, n) -> left.put(Integer.toString(p), n));
        // why an assigned partition is neither listed nor catching up: its task, or its catch-up, failed and waits to try again
        ArrayNode failed = root.putArray("waiting_after_failure");
        for (TaskFailure f : waitingAfterFailure()) {
            failed.addObject().put("partition", f.partition()).put("stage", f.stage()).put("failures_in_a_row", f.failuresInARow())
                    .put("next_try_in_s", (f.nextTryIn().toMillis() + 999) / 1000).put("last_error", f.lastError());
        }
        ArrayNode parts = root.putArray("partitions");
        StoreStats totals = StoreStats.empty();
        for (Map.Entry<Integer, LobStore> e : registry.all().entrySet()) {
            StoreStats stats = e.getValue().stats();
            ObjectNode p = ReportJson.stats(stats);
            p.put("partition", e.getKey());
            if (e.getValue().checking()) {
                // its ledger waits for the check's exclusive latch, which can outlast a probe's patience: said, not waited
                // for (a check that begins just after this still makes the answer wait, as before)
                p.put("checking", true);
            } else if (!putLedger(p, e.getKey(), e.getValue())) {
                continue; // closed since the snapshot (its partition moving): not this node's now, and no reason to fail the rest
            }
            // a copy rebuilt without commands retention had deleted (fsck reports it too)
            e.getValue().incompleteness().ifPresent(why -> p.put("incomplete", why));
            parts.add(p);
            totals = totals.plus(stats);
        }
        root.set("totals", ReportJson.stats(totals)); // of the partitions listed
        return root;
    }

    /** A partition's applied offset and judging settings into {@code p}; false if its tablespace closed meanwhile. */
    private boolean putLedger(ObjectNode p, int partition, LobStore store) throws IOException {
        try {
            // the last command applied: a producer that knows its record's offset can wait for it
            p.put("applied_offset", store.appliedOffset(commandsTopic + "-" + partition));
            // what its commands were judged by: replay --verify compares its own settings with them
            ObjectNode judged = p.putObject("judged_by");
            JudgingSettings.recordedIn(store).forEach(judged::put);
            Map<String, Long> changed = JudgingSettings.changedIn(store);
            if (!changed.isEmpty()) {
                changed.forEach(p.putObject("judged_by_since_offset")::put);
            }
            return true;
        } catch (TablespaceClosedException moving) {
            return false;
        } catch (IOException | UncheckedIOException unreadable) {
            // one tablespace's index failing a read (a disk error) would otherwise fail the whole answer, and with it the
            // waiting_after_failure an operator reads /status for
            p.remove(List.of("applied_offset", "judged_by", "judged_by_since_offset")); // what was read before: instead of it
            p.put("error", TaskRetries.messages(unreadable));
            return true;
        }
    }

    /** Why partition {@code partition}, assigned here, is not open, if this node knows: a catch-up, a wait after failures. */
    Optional<String> whyNotOpen(int partition) {
        if (catchingUp.get().contains(partition)) {
            return Optional.of("is being caught up from lob.commands here (GET /status: catching_up)");
        }
        return waitingAfterFailure().stream().filter(f -> f.partition() == partition).findFirst()
                .map(f -> "waits to start again after its " + f.stage() + " failed, next try "
                        + (f.nextTryIn().isZero() ? "due now" : "in " + (f.nextTryIn().toMillis() + 999) / 1000 + " s")
                        + " (GET /status: waiting_after_failure)");
    }

    /** The partitions whose task, or catch-up, failed here and waits to try again. */
    private List<TaskFailure> waitingAfterFailure() {
        List<TaskFailure> waiting = new ArrayList<>(registry.waitingTasks());
        waiting.addAll(catchUpsWaiting.get());
        waiting.sort(Comparator.comparingInt(TaskFailure::partition));
        return waiting;
    }

    /**
     * fsck of the tablespaces open here ({@code data}: every data page read and checked too, not under the exclusive
     * latch), with the partitions assigned here but not open, which were not checked.
     */
    ObjectNode fsck(boolean data) throws IOException {
        // fsck_ok says only that what was checked is clean, as lobstream fsck's does: partitions assigned here whose
        // tablespace was not open, before or after (catching up, or waiting after a failure), were not checked
        SortedSet<Integer> notOpen = notOpenHere();
        SortedSet<Integer> checked = new TreeSet<>();
        FsckReport total = FsckReport.empty();
        ObjectNode root = JSON.createObjectNode();
        ArrayNode parts = root.putArray("partitions");
        for (Map.Entry<Integer, LobStore> e : registry.all().entrySet()) {
            FsckReport r;
            try {
                // data=true reads every value: not under the exclusive latch, which would hold the writer back for as long
                r = data ? e.getValue().fsckOnline() : e.getValue().fsck(false);
            } catch (TablespaceClosedException moving) {
                continue; // closed since the snapshot (its partition moving), as in status: not this node's now
            } catch (IOException | RuntimeException unreadable) {
                // an index entry that does not decode, a RocksDB or file error: this partition's problem, the others
                // still checked and reported (as lobstream fsck does)
                log.error("fsck of {}: cannot be checked", e.getValue().name(), unreadable);
                r = FsckReport.empty().withProblem(e.getValue().name() + ": cannot be checked: " + unreadable);
            }
            checked.add(e.getKey());
            total = total.plus(r);
            ObjectNode p = ReportJson.fsck(r);
            p.put("partition", e.getKey());
            parts.add(p);
        }
        root.setAll(ReportJson.fsck(total));
        notOpen.addAll(notOpenHere());
        notOpen.removeAll(checked);
        ArrayNode notChecked = root.putArray("not_open");
        notOpen.forEach(notChecked::add);
        root.put("complete", notOpen.isEmpty());
        return root;
    }

    /** The partitions assigned here whose tablespace is not open: catching up, or waiting to try again after a failure. */
    private SortedSet<Integer> notOpenHere() {
        SortedSet<Integer> notOpen = new TreeSet<>(catchingUp.get());
        waitingAfterFailure().forEach(f -> notOpen.add(f.partition()));
        return notOpen;
    }
}
