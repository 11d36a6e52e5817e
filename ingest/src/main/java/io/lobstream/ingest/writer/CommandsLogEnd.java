package io.lobstream.ingest.writer;

import java.util.OptionalLong;

/**
 * Where each partition of {@code lob.commands} ends now: the offset its next record will take.
 *
 * <p>Why: a task expires an idle upload by the wall clock where no command came for {@code lob.upload.timeout.ms}
 * ({@link CommandProcessor}'s housekeeping), standing in for the time of the commands that did not come. That is right
 * only if none came: with chunks of the upload waiting in Kafka, unfetched (the partition's leader away while the writer
 * was behind) or fetched and not processed (the task waiting for its {@code lob.reclaim} partition), the writer would
 * drop an upload that a replay of the partition, which goes by the commands' own times, completes. So the wall clock
 * stands in only where the log ends right after the last record the task processed.
 */
@FunctionalInterface
public interface CommandsLogEnd {
    /** Nothing is known: the wall clock never stands in. */
    CommandsLogEnd UNKNOWN = partition -> OptionalLong.empty();

    /** The end offset of the partition (read_uncommitted), or empty when the broker did not answer in time. */
    OptionalLong endOffset(int partition);
}
