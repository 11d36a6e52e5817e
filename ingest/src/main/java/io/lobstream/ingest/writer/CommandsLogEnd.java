package io.lobstream.ingest.writer;

import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;

/**
 * Where each partition of {@code lob.commands} ends now, as a read_uncommitted reader sees it: the high watermark, past
 * which a record appended to the leader waits until its replicas have it.
 *
 * <p>Why: a task expires an idle upload by the wall clock where no command came for {@code lob.upload.timeout.ms}
 * ({@link QuietPartition}), standing in for the time of the commands that did not come. That is right only if none came:
 * with chunks of the upload waiting in Kafka, unfetched (the partition's leader away while the writer was behind) or
 * fetched and not processed (the task waiting for its {@code lob.reclaim} partition), the writer would drop an upload
 * that a replay of the partition, which goes by the commands' times alone, completes.
 */
@FunctionalInterface
public interface CommandsLogEnd {
    /** Nothing is known: the wall clock never stands in. */
    CommandsLogEnd UNKNOWN = partition -> CompletableFuture.completedFuture(OptionalLong.empty());

    /**
     * Asks, without waiting, where the partition ends: completes with its end offset, or empty if the broker does not
     * answer; never exceptionally.
     */
    CompletableFuture<OptionalLong> endOffset(int partition);
}
