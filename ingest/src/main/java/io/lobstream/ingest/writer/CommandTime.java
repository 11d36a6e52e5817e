package io.lobstream.ingest.writer;

import io.lobstream.store.LobStore;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.streams.processor.TimestampExtractor;

import java.io.IOException;

/**
 * The time of a command's record: its timestamp, the broker's on a {@code lob.commands} LobStream
 * made; what upload expiry and the de-duplication window go by is the latest of these on its
 * partition so far ({@link #latest}). A record with none (-1, which a
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

    /**
     * The time a command at {@code timestamp} from {@code source} is judged in, where the de-duplication window ends and
     * uploads are idle until: the latest command time of its partition so far, its own included, as its tablespace
     * recorded them ({@link LobStore#latestTime}). Not the command's own: times can go back (a leader change to a broker
     * whose clock is behind, producers' clocks on a CreateTime topic), and the writer forgets ids and expires uploads by the
     * latest time, between commands too; judged by its own time, a command would find ids or uploads a replay still has and
     * the writer no longer does.
     */
    public static long latest(LobStore store, String source, long timestamp) throws IOException {
        if (timestamp < 0) { // (of() gives none: a window or an idle time from here would wrap around)
            throw new IllegalArgumentException("a command's time must not be negative: " + timestamp);
        }
        return Math.max(store.latestTime(source), timestamp);
    }
}
