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
    /** A question in flight: when it was asked, and the last record the task had processed then. */
    private record Asked(CompletableFuture<OptionalLong> end, long atMillis, long lastOffset) {
    }

    private final UploadExpiry uploads;
    private Asked asked;

    QuietPartition(UploadExpiry uploads) {
        this.uploads = uploads;
    }

    /**
     * The time, by the wall clock, up to which every command of {@code partition} is in: when the broker last said the
     * partition ends right after {@code lastOffset}, the last record the task processed, less {@link UploadExpiry#graceMs()}.
     * Empty until such an answer is in; asks again whenever none is in flight.
     */
    OptionalLong commandsIn(int partition, long lastOffset, long now) {
        Asked a = asked;
        if (a != null && a.end().isDone()) {
            asked = null;
            if (a.lastOffset() == lastOffset && a.end().join().orElse(-1) == lastOffset + 1) {
                return OptionalLong.of(a.atMillis() - uploads.graceMs());
            }
        }
        if (asked == null) {
            asked = new Asked(uploads.logEnd().endOffset(partition), now, lastOffset);
        }
        return OptionalLong.empty();
    }
}
