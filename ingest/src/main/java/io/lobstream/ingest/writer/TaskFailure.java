package io.lobstream.ingest.writer;

import java.time.Duration;

/**
 * Why a partition's task is not running on this node though it is assigned here: it failed, or its tablespace's catch-up
 * did, and its next try waits ({@code GET /status}, {@code ./lobstream status}).
 *
 * @param partition     the partition
 * @param stage         {@code task} (the task failed: an I/O error of its tablespace, a check at its start that refuses
 *                      it, a registry that does not answer) or {@code catch-up} (the replay of lob.commands into its
 *                      tablespace failed)
 * @param failuresInARow failures in a row (of a task: none five minutes after the last, a start between them or not; of
 *                      a catch-up: until one succeeds or the task starts); each waits twice as long before the next try
 * @param lastError     the last failure's message and its causes', in one line
 * @param nextTryIn     how long until the next try; zero once it is due
 */
public record TaskFailure(int partition, String stage, int failuresInARow, String lastError, Duration nextTryIn) {
}
