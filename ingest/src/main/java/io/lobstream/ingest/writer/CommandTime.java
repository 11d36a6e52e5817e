package io.lobstream.ingest.writer;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.streams.processor.TimestampExtractor;

/**
 * The time a command is applied in (upload expiry, the de-duplication window): its record's
 * timestamp, the broker's on a {@code lob.commands} LobStream made. A record with none (-1, which a
 * {@code CreateTime} topic takes from a client that sends it so) gets the latest time of its
 * partition so far, not Kafka Streams' default, which fails the task on it at every try and stops
 * the partition for good. Replay reads times the same way, so a rebuilt copy decides as the writer did.
 */
public final class CommandTime implements TimestampExtractor {
    /** The time of a record without one while its partition has none yet. */
    public static final long NONE_YET = 0;

    @Override
    public long extract(ConsumerRecord<Object, Object> record, long partitionTime) {
        return of(record.timestamp(), partitionTime);
    }

    /**
     * @param partitionTime the highest time of the partition's records before this one, -1 if none
     */
    public static long of(long timestamp, long partitionTime) {
        return timestamp >= 0 ? timestamp : Math.max(partitionTime, NONE_YET);
    }
}
