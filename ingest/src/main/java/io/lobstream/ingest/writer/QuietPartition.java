package io.lobstream.ingest.writer;

import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;

/**
 * One task's evidence that no command of its partition waits in Kafka, so that the wall clock may stand in for the time
 * of the commands that did not come ({@link CommandsLogEnd} says why that needs evidence). The broker is asked without
 * waiting, from one housekeeping, and its answer is used at the next: a stream thread never blocks on it (a question
 * per quiet task, each waiting, could outlast the thread's transaction timeout while a leader is away).
 */
final class QuietPartition {
    /** A question unanswered this long is dropped and asked again (the admin client gives up well before). */
    static final long GIVE_UP_MS = 60_000;

    /** A question in flight: when it was asked, and the last record the task had processed then. */
    private record Asked(CompletableFuture<OptionalLong> end, long atMillis, long lastOffset) {
    }

    private final CommandsLogEnd logEnd;
    private final long graceMs;
    private Asked asked;

    QuietPartition(UploadExpiry uploads) {
        this.logEnd = uploads.logEnd();
        this.graceMs = uploads.graceMs();
    }

    /**
     * The time, by the wall clock, up to which every command of {@code partition} is in: when the broker last said the
     * partition ends right after {@code lastOffset}, the last record the task processed, less {@link UploadExpiry#graceMs()}.
     * Empty until such an answer is in. Asks again whenever no question is in flight, so that each housekeeping of a quiet
     * task has the answer of the one before.
     */
    OptionalLong commandsCompleteUntil(int partition, long lastOffset, long now) {
        OptionalLong until = OptionalLong.empty();
        Asked a = asked;
        if (a != null && (a.end().isDone() || now - a.atMillis() > GIVE_UP_MS)) {
            asked = null;
            OptionalLong end = a.end().isDone() && !a.end().isCompletedExceptionally() ? a.end().join() : OptionalLong.empty();
            if (a.lastOffset() == lastOffset && end.isPresent() && end.getAsLong() == lastOffset + 1) {
                until = OptionalLong.of(a.atMillis() - graceMs);
            }
        }
        if (asked == null) {
            asked = new Asked(logEnd.endOffset(partition), now, lastOffset);
        }
        return until;
    }
}
