package io.lobstream.ingest.writer;

/**
 * How a writer task expires the chunked uploads whose producer stopped.
 *
 * @param timeoutMs     {@code lob.upload.timeout.ms}: idle this long, in the time of the commands, an upload is dropped
 * @param commandsTopic the topic of the commands, whose partitions' ends say whether the wall clock may stand in
 * @param logEnd        where those partitions end now
 */
public record UploadExpiry(long timeoutMs, String commandsTopic, CommandsLogEnd logEnd) {
    /**
     * Whether the commands' partition {@code partition} ends right after {@code lastOffset}, the last record its task
     * processed: nothing waits in Kafka, fetched or not, so where no command came for the timeout the wall clock may
     * stand in for their time. Not when the broker does not answer.
     */
    boolean nothingAfter(int partition, long lastOffset) {
        return logEnd.endOffset(partition).orElse(Long.MAX_VALUE) <= lastOffset + 1;
    }

    /** The name the tablespace records the partition's applied offsets under. */
    String source(int partition) {
        return commandsTopic + "-" + partition;
    }
}
