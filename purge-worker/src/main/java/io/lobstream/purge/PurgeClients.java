package io.lobstream.purge;

import io.lobstream.schema.LobSerdes;
import io.lobstream.schema.LobStreamConfig;
import io.lobstream.schema.LobStreamConfig.ClientKind;
import io.lobstream.schema.Topics;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * A purge worker's Kafka clients: a consumer of the undo-history topic in the purge group, and the transactional
 * producers of its reclaim records, with the settings exactly-once depends on put over the user's.
 */
final class PurgeClients {
    /** Kafka's default transaction.timeout.ms (ProducerConfig names no constant for it). */
    private static final long KAFKA_TRANSACTION_TIMEOUT_MS = 60_000;
    /** Kafka's default max.poll.interval.ms. */
    private static final long KAFKA_MAX_POLL_INTERVAL_MS = 300_000;

    private PurgeClients() {
    }

    /**
     * @param held what the worker's data directory holds, which its subscription tells the group; null for a worker that
     *             follows a node (it assigns itself partitions, and never joins the group's assignment)
     */
    static KafkaConsumer<String, byte[]> consumer(LobStreamConfig config, String workerId, HeldTablespaces held) {
        // the user's client settings (e.g. session.timeout.ms, security), so a deployment can
        // tune failure detection; the settings exactly-once depends on are put after, and win
        Map<String, Object> c = config.clientConfig(ClientKind.CONSUMER);
        c.put(ConsumerConfig.GROUP_ID_CONFIG, config.get(LobStreamConfig.PURGE_GROUP));
        c.put(ConsumerConfig.CLIENT_ID_CONFIG, "purge-" + workerId);
        c.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        // a worker started before the first node, on a broker that creates topics, would make lob.undo-history with the
        // broker's partition count; the node then takes that count for every topic, and lob.topic.partitions is lost
        c.put(ConsumerConfig.ALLOW_AUTO_CREATE_TOPICS_CONFIG, false);
        // the second only while workers of an older version, which name it alone, are in the group: the group takes the
        // first that every member names
        c.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG,
                List.of(TablespacePartitionAssignor.class.getName(), CooperativeStickyAssignor.class.getName()));
        if (held != null) {
            c.put(TablespacePartitionAssignor.HELD_CONFIG, held);
        }
        c.putIfAbsent(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 500);
        return new KafkaConsumer<>(c, new StringDeserializer(), new ByteArrayDeserializer());
    }

    /**
     * Named after the group (lobstream-purge-&lt;id&gt; by default): deployments that share a cluster under their own
     * groups do not fence each other's workers of the same id.
     */
    static String transactionalId(LobStreamConfig config, String workerId) {
        return config.get(LobStreamConfig.PURGE_GROUP) + "-" + workerId;
    }

    /**
     * The timeout taken for one a config provider sets: under Kafka's defaults and most settings; one resolving below it
     * makes the budget, half of this, overrun half of that setting, not the whole.
     */
    static final long UNRESOLVED_MS = 10_000;

    /**
     * How long a worker's transaction purges before it commits what it has: half the shorter of the consumer's
     * max.poll.interval.ms (past it the group drops a subscribed member, and its offsets are refused) and the producers'
     * transaction.timeout.ms. The reclaims are sent only at the commit, so scans no longer run the coordinator's clock
     * down; the second is kept as a bound on one transaction's work, so a slow disk never holds a poll's worth of
     * reclaims back longer than Kafka would hold a transaction open.
     */
    static Duration transactionBudget(LobStreamConfig config) {
        long transaction = millis(config.clientConfig(ClientKind.PRODUCER).get(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG),
                KAFKA_TRANSACTION_TIMEOUT_MS);
        long poll = millis(config.clientConfig(ClientKind.CONSUMER).get(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG),
                KAFKA_MAX_POLL_INTERVAL_MS);
        return Duration.ofMillis(Math.min(transaction, poll) / 2);
    }

    /**
     * A value in milliseconds as set: Kafka's default if unset, and {@link #UNRESOLVED_MS} if a config provider names it
     * ({@code ${env:POLL}}), which only the client resolves: the budget is then kept short (more commits), where a parse
     * of the reference failed the worker's start, and with it the node's.
     */
    static long millis(Object set, long kafkaDefault) {
        if (set == null) {
            return kafkaDefault;
        }
        try {
            return Long.parseLong(set.toString().trim()); // as Kafka reads it ("+5000" too)
        } catch (NumberFormatException reference) {
            return UNRESOLVED_MS;
        }
    }

    /** Makes the worker's transactional producers: the first, and one for each that failed for good. */
    static Supplier<Producer<String, Object>> producers(LobStreamConfig config, String workerId) {
        Map<String, Object> p = config.clientConfig(ClientKind.PRODUCER);
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId(config, workerId));
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        // as the README says: a plain acks=1 given for other tools (-c, @FILE) made the producer refuse to start, so the
        // node failed after its broker and writer were up
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.putIfAbsent(ProducerConfig.LINGER_MS_CONFIG, 5);
        p.putIfAbsent(ProducerConfig.MAX_REQUEST_SIZE_CONFIG, Topics.PAGE_LIST_RECORD_MAX_BYTES); // a reclaim lists every page freed
        return () -> LobSerdes.producer(p, new StringSerializer(), config);
    }
}
