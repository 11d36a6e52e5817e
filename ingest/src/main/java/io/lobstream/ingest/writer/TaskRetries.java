package io.lobstream.ingest.writer;

import io.lobstream.schema.serde.RegistryUnavailableException;
import io.lobstream.store.DiskErrors;
import org.apache.kafka.streams.errors.LockException;

import io.lobstream.store.LaterFormatException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * When a partition's task may start again after it failed (an I/O error of its tablespace: a full
 * disk, a disk that refuses; a schema registry that does not answer; its log cut under it; a check
 * that refuses it; any other failure applying a record, or of its housekeeping). Kafka Streams replaces the failed thread at once, and the task would
 * reopen the tablespace and fail on the same command again, many times a second, each time with
 * a stack trace. The task's first retry is at once; each further failure in a row waits twice as
 * long from {@link #FIRST}, up to {@link #MAX}; a partition quiet for {@link #QUIET} starts the
 * count again. The wait is taken at the task's init ({@link LockException}, which Streams retries),
 * not on the failed thread: that thread still holds its tasks, its group membership and an open
 * transaction, which a wait there would keep from the rest of the group.
 */
public final class TaskRetries {
    static final Duration FIRST = Duration.ofSeconds(1);
    static final Duration MAX = Duration.ofSeconds(60);
    static final Duration QUIET = Duration.ofMinutes(5);
    /** How late a partition's next try may be and still be coming (see {@link #waiting}). */
    static final Duration OVERDUE = Duration.ofSeconds(30);

    private static final class Failures {
        int inARow;
        long lastNanos;
        long notBeforeNanos;
        String lastError;
        /** the task started since its last failure: it is not waiting */
        boolean startedSince;
    }

    private final Map<Integer, Failures> byPartition = new ConcurrentHashMap<>();
    /** What a failure is counted as in {@link #failures(String)}: the disk's, the registry's, or anything else. */
    public static final List<String> CAUSES = List.of("disk_full", "disk_read_only", "registry_away", "other");
    private final Map<String, LongAdder> failures = new ConcurrentHashMap<>();

    /** Records that partition {@code partition}'s task failed on {@code e} at {@code nowNanos} ({@link System#nanoTime()}); returns the wait. */
    Duration failed(int partition, Throwable e, long nowNanos) {
        failures.computeIfAbsent(cause(e), c -> new LongAdder()).increment();
        Failures f = byPartition.computeIfAbsent(partition, p -> new Failures());
        synchronized (f) {
            if (f.inARow > 0 && nowNanos - f.lastNanos > QUIET.toNanos()) {
                f.inARow = 0;
            }
            f.lastNanos = nowNanos;
            f.lastError = messages(e);
            f.startedSince = false;
            f.inARow++;
            Duration wait = waitAfter(f.inARow);
            f.notBeforeNanos = nowNanos + wait.toNanos();
            return wait;
        }
    }

    /** Task failures recorded since the node started, counted as {@code cause} (one of {@link #CAUSES}). */
    public long failures(String cause) {
        LongAdder n = failures.get(cause);
        return n == null ? 0 : n.sum();
    }

    static String cause(Throwable e) {
        return DiskErrors.full(e) ? "disk_full" : DiskErrors.readOnly(e) ? "disk_read_only"
                : registryAway(e) ? "registry_away" : "other";
    }

    /** @throws LockException if partition {@code partition}'s task must wait still */
    void awaitRetry(int partition, long nowNanos) {
        Failures f = byPartition.get(partition);
        if (f == null) {
            return;
        }
        synchronized (f) {
            long left = f.notBeforeNanos - nowNanos;
            if (left > 0) {
                throw new LockException("partition " + partition + ": its task failed " + f.inARow + " times in a row (logged); it "
                        + "starts again in " + Math.max(1, Duration.ofNanos(left).toSeconds()) + " s");
            }
        }
    }

    /**
     * Records that partition {@code partition}'s task got past its start: it runs, or its tablespace is being caught up.
     * Its failures in a row still count: a task that fails on its first command after each start must wait longer each
     * time too.
     */
    void started(int partition) {
        Failures f = byPartition.get(partition);
        if (f != null) {
            synchronized (f) {
                f.startedSince = true;
            }
        }
    }

    /**
     * The partitions whose task failed and has not started since, unless their next try is {@link #OVERDUE}: Streams tries
     * a waiting task's init again and again, so a try that late is not coming (the partition went to another node, which
     * therefore stays listed here until then).
     */
    public List<TaskFailure> waiting(long nowNanos) {
        List<TaskFailure> waiting = new ArrayList<>();
        byPartition.forEach((partition, f) -> {
            synchronized (f) {
                if (f.inARow > 0 && !f.startedSince && nowNanos - f.notBeforeNanos <= OVERDUE.toNanos()) {
                    waiting.add(new TaskFailure(partition, "task", f.inARow, f.lastError,
                            Duration.ofNanos(Math.max(0, f.notBeforeNanos - nowNanos))));
                }
            }
        });
        return waiting;
    }

    static Duration waitAfter(int failuresInARow) {
        return failuresInARow <= 1 ? Duration.ZERO : doubled(FIRST, failuresInARow - 2, MAX);
    }

    /** {@code first} doubled {@code times} times, at most {@code max}. */
    static Duration doubled(Duration first, int times, Duration max) {
        Duration wait = first.multipliedBy(1L << Math.min(times, 30));
        return wait.compareTo(max) > 0 ? max : wait;
    }

    /**
     * The messages of {@code e} and its causes, in one line: the path and page of a full disk are in a cause. One without a
     * message is named by its class; a wrapper whose message is its cause's {@code toString()} (an ExecutionException) is
     * left out, or the cause would be said twice, the second time with its class's full name, and so is a cause whose
     * message the line holds already. A URL's user and password (a registry's {@code https://user:secret@host}, as a
     * client's exception may quote it) are masked: the line goes to {@code /status} and logs.
     */
    public static String messages(Throwable e) {
        return USER_INFO.matcher(unmasked(e)).replaceAll("$1***@");
    }

    /**
     * A URL's user information: from {@code ://} to the last {@code @} before a blank (a password may hold an unescaped
     * {@code @} or {@code /}); a path with an {@code @} is masked with it, the safe way to be wrong with a secret.
     */
    private static final java.util.regex.Pattern USER_INFO = java.util.regex.Pattern.compile("(://)\\S*@");

    private static String unmasked(Throwable e) {
        StringBuilder b = new StringBuilder();
        for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
            // a file the JDK refused names only its path ("/d/tablespaces/p-3/lob.pages"): say what is wrong with it
            String m = t instanceof java.nio.file.FileSystemException fs ? DiskErrors.fileProblem(fs) : t.getMessage();
            if ((t.getCause() != null && t.getCause() != t && t.getCause().toString().equals(m)) || (m != null && b.indexOf(m) >= 0)) {
                continue; // said already: by the wrapper that quotes it, or as the end of the message before
            }
            b.append(b.isEmpty() ? "" : ": ").append(m != null ? m : t.getClass().getSimpleName());
        }
        return b.toString();
    }

    /**
     * Whether {@code e} is the environment's failure, not a bug: an I/O error (the disk's; its path and page are in the
     * messages) or a schema registry that did not answer. Its messages say all a stack trace would.
     */
    public static boolean environmental(Throwable e) {
        return causedBy(e, IOException.class) || causedBy(e, UncheckedIOException.class) || causedBy(e, RegistryUnavailableException.class);
    }

    /**
     * Whether {@code e} or a cause of it is an {@link Error}: out of memory, a native library that did not load, a stack
     * overflow. The JVM's trouble, not a task's: a thread replaced would meet it again.
     */
    public static boolean jvmError(Throwable e) {
        return causedBy(e, Error.class);
    }

    /** Whether {@code e} or a cause of it is a tablespace or index of a later release's format: sound, but not this one's to read. */
    public static boolean laterFormat(Throwable e) {
        return causedBy(e, LaterFormatException.class);
    }

    /** Whether {@code e} or a cause of it is the schema registry not answering. */
    public static boolean registryAway(Throwable e) {
        return causedBy(e, RegistryUnavailableException.class);
    }

    /** Whether {@code e} or a cause of it is a {@code kind}. */
    public static boolean causedBy(Throwable e, Class<? extends Throwable> kind) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (kind.isInstance(t)) {
                return true;
            }
        }
        return false;
    }
}
