package io.lobstream.ingest.writer;

import org.apache.kafka.streams.errors.ProcessorStateException;
import org.apache.kafka.streams.errors.TaskCorruptedException;
import org.apache.kafka.streams.processor.TaskId;

import java.util.Set;

/**
 * A writer task that failed while it ran (a record's apply or a punctuation: an I/O error of its tablespace, a registry
 * that does not answer, a log that went back under it). Thrown as a {@link TaskCorruptedException}, it closes that task
 * alone: Kafka Streams commits the thread's other tasks, closes this one dirty and starts it again from its last commit
 * (whose init waits as {@link TaskRetries} says), where any other exception ends the stream thread, and with it every
 * task the thread runs: their partitions answered 503 until they opened again, and moved on other nodes too.
 */
public final class TaskFailedException extends TaskCorruptedException {
    public TaskFailedException(TaskId task, RuntimeException cause) {
        super(Set.of(task), new ProcessorStateException("task " + task + " failed: " + TaskRetries.messages(cause), cause));
    }
}
