package io.lobstream.schema;

import java.util.List;

/**
 * The topics of one LobStream deployment. All four are co-partitioned (same partition count,
 * keyed by lobId with the default partitioner), so partition p of each belongs to tablespace p.
 *
 * @param prefix configurable prefix, {@code lob.} by default
 */
public record Topics(String prefix) {
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
