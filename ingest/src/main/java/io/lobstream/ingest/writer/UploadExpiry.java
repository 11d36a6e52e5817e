package io.lobstream.ingest.writer;

import org.apache.kafka.common.TopicPartition;

import java.time.Duration;

/**
 * How the writer's tasks expire the chunked uploads whose producer stopped.
 *
 * @param timeoutMs     {@code lob.upload.timeout.ms}: idle this long, in the time of the commands, an upload is dropped
 * @param commandsTopic the topic of the commands, whose partitions' ends say whether the wall clock may stand in
 * @param logEnd        where those partitions end now
 */
public record UploadExpiry(long timeoutMs, String commandsTopic, CommandsLogEnd logEnd) {
    /**
     * Taken off the wall clock where it stands in for the commands' time ({@link QuietPartition}): a record the leader
     * appended is not under the high watermark until its replicas have it (within {@code replica.lag.time.max.ms}, 30 s by
     * default), and the broker's clock, which stamps the commands, may be behind the writer's. At most the timeout, so
     * that a short one (tests have 5 s) does not wait six times as long.
     */
    static final Duration GRACE = Duration.ofSeconds(30);

    long graceMs() {
        return Math.min(GRACE.toMillis(), timeoutMs);
    }

    /** The name the tablespace records the partition's applied offsets under (as the writer's tasks and replay name it). */
    String source(int partition) {
        return new TopicPartition(commandsTopic, partition).toString();
    }
}
