package io.lobstream.ingest.writer;

import io.lobstream.store.LobStore;
import org.apache.kafka.common.TopicPartition;

import java.io.IOException;
import java.time.Duration;
import java.util.List;

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

    /**
     * Expires, before a command of an upload (a chunk, an abort) read from {@code source} at {@code timestamp}, the uploads idle for
     * {@code timeoutMs} as of the partition's latest command time ({@link CommandTime#latest}), by that time alone. The
     * writer's tasks and replay both call this, so that whether a chunk finds its upload hangs on the log, not on when a
     * task's housekeeping last ran (which expires by that time too, and by the clock): a copy rebuilt from lob.commands
     * that kept an upload the writer expired, or expired one it completed, would differ on every later command of that LOB.
     *
     * @return the ids of the uploads expired
     */
    public static List<String> expireBeforeUploadCommand(LobStore store, String source, long timestamp, long timeoutMs) throws IOException {
        return store.expireUploads(CommandTime.latest(store, source, timestamp), Long.MAX_VALUE, timeoutMs);
    }

    /** The name the tablespace records the partition's applied offsets under (as the writer's tasks and replay name it). */
    String source(int partition) {
        return new TopicPartition(commandsTopic, partition).toString();
    }
}
