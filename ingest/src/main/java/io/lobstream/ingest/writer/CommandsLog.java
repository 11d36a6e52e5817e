package io.lobstream.ingest.writer;

import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.Uuid;

/**
 * What a tablespace records of the {@code lob.commands} it applies ({@link io.lobstream.store.LobStore#logId}), the first
 * time a task's check finds it current or behind: the topic's id, which a topic deleted and made again under its name does
 * not keep, and its partition count, which decides every LOB's partition (its key's hash modulo the count). Kept as
 * {@code ID/COUNT}.
 *
 * @param topicId    empty if not known (a broker without topic ids, before Kafka 2.8, says zero)
 * @param partitions 0 if not known
 */
record CommandsLog(String topicId, int partitions) {
    static CommandsLog of(TopicDescription topic) {
        Uuid id = topic.topicId();
        return new CommandsLog(id == null || id.equals(Uuid.ZERO_UUID) ? "" : id.toString(), topic.partitions().size());
    }

    /** What {@link #encode} wrote; an id alone (recorded before the count was) has no count. */
    static CommandsLog decode(String recorded) {
        int slash = recorded.lastIndexOf('/');
        if (slash < 0) {
            return new CommandsLog(recorded, 0);
        }
        try {
            return new CommandsLog(recorded.substring(0, slash), Integer.parseInt(recorded.substring(slash + 1)));
        } catch (NumberFormatException e) {
            return new CommandsLog(recorded.substring(0, slash), 0);
        }
    }

    String encode() {
        return topicId + "/" + partitions;
    }

    /** Whether both ids are known and differ: the topic was deleted and made again. */
    boolean otherTopicThan(CommandsLog now) {
        return !topicId.isEmpty() && !now.topicId.isEmpty() && !topicId.equals(now.topicId);
    }

    /** Whether both counts are known and differ: partitions were added, and LOBs moved away from their tablespaces. */
    boolean otherPartitionCountThan(CommandsLog now) {
        return partitions > 0 && now.partitions > 0 && partitions != now.partitions;
    }

    /** This record with what {@code now} knows and it does not; itself if nothing is added. */
    CommandsLog completedBy(CommandsLog now) {
        return new CommandsLog(topicId.isEmpty() ? now.topicId : topicId, partitions > 0 ? partitions : now.partitions);
    }
}
