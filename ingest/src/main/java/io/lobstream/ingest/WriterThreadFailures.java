package io.lobstream.ingest;

import io.lobstream.ingest.writer.TaskRetries;
import io.lobstream.store.DiskErrors;
import io.lobstream.store.TablespaceSyncFailedException;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.FencedInstanceIdException;
import org.apache.kafka.common.errors.InvalidTxnTimeoutException;
import org.apache.kafka.streams.errors.MissingSourceTopicException;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.Collections;
import java.util.Set;
import java.util.WeakHashMap;
import java.util.function.LongSupplier;

/**
 * What the node does when one of its writer's stream threads dies: replace the thread, or stop the writer (Kafka Streams
 * goes to {@code ERROR}, and the node exits 1 for its supervisor to start it again, see {@link LobNode#writerStopped()}).
 *
 * <p>A thread is replaced at once: a task that fails again and again waits at its next init ({@link TaskRetries}), not
 * here, where the thread still holds its tasks, its group membership and an open transaction. The writer stops when a
 * new thread could only fail the same way, each time after a rebalance of the whole group:
 * <ul>
 *   <li>an {@link Error} (out of memory, a native library): the JVM is in trouble, not a task;</li>
 *   <li>a source topic missing ({@link MissingSourceTopicException}) for {@link #MISSING_TOPIC_GRACE} in a row: it was
 *       deleted, or the node runs against another cluster. A node that starts again creates the topics, and sets aside
 *       the tablespaces that applied the old {@code lob.commands} (its id differs). Missing once, or for less than the
 *       grace, is a broker's metadata behind a topic just made, and the thread is replaced;</li>
 *   <li>a thread fenced as a static member ({@code FencedInstanceIdException}): another process runs with this node's
 *       {@code lob.node.id};</li>
 *   <li>a thread the cluster refuses: an ACL missing ({@code AuthorizationException}: a transactional id, the group, a
 *       topic), or a transaction timeout over the brokers' maximum ({@code InvalidTxnTimeoutException}).</li>
 * </ul>
 */
final class WriterThreadFailures implements StreamsUncaughtExceptionHandler {
    private static final Logger log = LoggerFactory.getLogger(WriterThreadFailures.class);
    static final Duration MISSING_TOPIC_GRACE = Duration.ofSeconds(30);
    /**
     * Missing-topic failures further apart are not in a row: the writer ran between them (a topic deleted fails each new
     * thread within a rebalance, well within this).
     */
    static final Duration MISSING_TOPIC_ROW_BREAK = Duration.ofMinutes(5);

    /** What {@link #handle} was given, held weakly (a Throwable's equals is its identity). */
    private static final Set<Throwable> REPORTED = Collections.synchronizedSet(Collections.newSetFromMap(new WeakHashMap<>()));

    private final StaticMembers members;
    private final LongSupplier nanoClock;
    /**
     * whether the last failure was a missing topic, since when ({@link System#nanoTime()}) they come in a row, and when the
     * last came (one {@link #MISSING_TOPIC_ROW_BREAK} after it starts a new row)
     */
    private boolean missing;
    private long missingSinceNanos;
    private long missingLastNanos;

    /** @param members the node's static members, or null when it has none */
    WriterThreadFailures(StaticMembers members, LongSupplier nanoClock) {
        this.members = members;
        this.nanoClock = nanoClock;
    }

    /**
     * Whether a writer's handler has reported {@code e}: Kafka Streams then lets it end the stream thread, where the
     * process's handler of a thread's death need not say it again. An exception that ends one otherwise (a replacement
     * thread that could not be made) was not reported.
     */
    static boolean reported(Throwable e) {
        return REPORTED.contains(e);
    }

    @Override
    public StreamThreadExceptionResponse handle(Throwable e) {
        REPORTED.add(e);
        if (TaskRetries.jvmError(e)) {
            log.error("writer thread failed on an error of the JVM; stopping the writer", e);
            return StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        }
        if (causedBy(e, FencedInstanceIdException.class)) {
            // Another process joined the group under this node's static member id (its lob.node.id) and took the member
            // over: replaced, this thread would take another member id and fence that process in turn (and its members
            // removed would be that process's), partitions moving at each turn, for ever. The newer one keeps the id.
            log.error("writer thread {} fenced: another process joined the writer group with this node's lob.node.id and took "
                    + "over its static member; stopping this writer. Two nodes must not share an id ({})",
                    Thread.currentThread().getName(), TaskRetries.messages(e));
            return StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        }
        if (causedBy(e, AuthorizationException.class) || causedBy(e, InvalidTxnTimeoutException.class)) {
            // Refused by the cluster for who this node is or what it asks, at the thread's first transaction or poll:
            // replaced, the thread gets its tasks back and is refused again, the whole group rebalancing each time
            log.error("writer thread failed: the cluster refuses it ({}): an ACL this node's principal lacks (README, "
                    + "ACLs), or a producer transaction.timeout.ms over the brokers' transaction.max.timeout.ms; a new "
                    + "thread would be refused the same way; stopping the writer", TaskRetries.messages(e));
            return StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        }
        if (missingTopicTooLong(e)) {
            log.error("writer thread failed: {}, for {} s in a row: the topic was deleted, or the node runs against another "
                            + "cluster; stopping the writer. Started again, the node creates the topics anew, and sets aside each "
                            + "tablespace that applied the old lob.commands (listed by fsck)", TaskRetries.messages(e),
                    MISSING_TOPIC_GRACE.toSeconds());
            return StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        }
        if (causedBy(e, TablespaceSyncFailedException.class)) { // a full disk too, but not "nothing was applied": the copy's fsync failed
            log.error("writer thread failed: a tablespace's sync failed ({}); the copy is set aside (p-N.sync-failed-T) and the "
                    + "partition rebuilt from lob.commands at the task's next start, which needs room for a whole copy: on a full "
                    + "disk free space, and delete set-aside copies once looked at; replacing the thread", TaskRetries.messages(e));
        } else if (DiskErrors.full(e)) {
            log.error("writer thread failed: the disk is full ({}); nothing was applied or dead-lettered, and the task "
                    + "resumes from its last commit once there is room; replacing the thread", TaskRetries.messages(e));
        } else if (TaskRetries.environmental(e) || missingTopic(e)) {
            log.error("writer thread failed: {}; replacing it (the task resumes from its last commit)", TaskRetries.messages(e));
        } else {
            log.error("writer thread failed; replacing it (the task resumes from its last commit)", e);
        }
        if (members != null) {
            members.removeWhenDead(Thread.currentThread());
        }
        return StreamThreadExceptionResponse.REPLACE_THREAD;
    }

    /** Whether {@code e} is a missing source topic that has been missing since {@link #MISSING_TOPIC_GRACE} ago or more. */
    private synchronized boolean missingTopicTooLong(Throwable e) {
        if (!missingTopic(e)) {
            missing = false;
            return false;
        }
        long now = nanoClock.getAsLong();
        if (!missing || now - missingLastNanos > MISSING_TOPIC_ROW_BREAK.toNanos()) {
            missing = true;
            missingSinceNanos = now;
        }
        missingLastNanos = now;
        return now - missingSinceNanos >= MISSING_TOPIC_GRACE.toNanos();
    }

    private static boolean missingTopic(Throwable e) {
        return causedBy(e, MissingSourceTopicException.class);
    }

    private static boolean causedBy(Throwable e, Class<? extends Throwable> kind) {
        return TaskRetries.causedBy(e, kind);
    }
}
