package io.lobstream.schema;

import org.apache.kafka.common.utils.Utils;

import java.util.List;

/**
 * The topics of one LobStream deployment. All four are co-partitioned (same partition count, keyed
 * by lobId), so partition p of each belongs to tablespace p: a command goes to its key's partition
 * by the default partitioner; undo records, reclaims and dead letters go to the partition numbered
 * as the tablespace's (or command's) they come from.
 *
 * @param prefix configurable prefix, {@code lob.} by default
 */
public record Topics(String prefix) {
    /**
     * The largest record on {@link #undoHistory()} and {@link #reclaim()}, their topics'
     * {@code max.message.bytes} and their producers' {@code max.request.size}. Their records list a
     * superseded version's pages: one extent per page at worst (a value written into a tablespace of
     * one-page holes), up to 7 bytes each. 16 MiB holds 2.4 million, more than the 1.85 million
     * pages of the longest value 16 KiB pages address; Kafka's default, 1 MiB, holds a 2 GiB value's.
     */
    public static final int PAGE_LIST_RECORD_MAX_BYTES = 16 << 20;
    /** The most one extent takes in those lists: Avro varints of a page number below 2^41 and a count. */
    public static final int EXTENT_MAX_BYTES = 7;

    /**
     * The partition of a record keyed {@code key} in a topic of {@code partitions}, as Kafka's default partitioner picks
     * it: a LOB's commands, undo records, reclaims and tablespace. Fixed for as long as the count is, which is why the
     * count is fixed for good.
     */
    public static int partitionOf(byte[] key, int partitions) {
        return Utils.toPositive(Utils.murmur2(key)) % partitions;
    }

    /** LobCommand records from producers. */
    public String commands() {
        return prefix + "commands";
    }

    /** UndoRecords: one per superseded or deleted version; purge workers consume it. */
    public String undoHistory() {
        return prefix + "undo-history";
    }

    /** ReclaimRecords: pages found by purge, applied by the writer that owns the partition. */
    public String reclaim() {
        return prefix + "reclaim";
    }

    /** Commands the writer could not apply, with the reason in headers. */
    public String deadLetters() {
        return prefix + "commands.dlq";
    }

    public List<String> all() {
        return List.of(commands(), undoHistory(), reclaim(), deadLetters());
    }
}
