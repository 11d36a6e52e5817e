package io.lobstream.app.bench;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.GroupIdNotFoundException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;

/** Small read-only Kafka look-ups the benchmarks and integration tests share. */
public final class KafkaTools {
    private KafkaTools() {
    }

    /** Reads {@code topic} until it holds at least {@code count} committed records (the writer commits every lob.writer.commit.interval.ms). */
    public static List<ConsumerRecord<byte[], byte[]>> readAtLeast(String bootstrap, String topic, int count, Duration timeout)
            throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            List<ConsumerRecord<byte[], byte[]>> all = readAll(bootstrap, topic);
            if (all.size() >= count || System.nanoTime() > deadline) {
                return all;
            }
            Thread.sleep(200);
        }
    }

    /** Every committed record of {@code topic} (read_committed), from the beginning to the current end. */
    public static List<ConsumerRecord<byte[], byte[]>> readAll(String bootstrap, String topic) {
        return readAll(bootstrap, topic, IsolationLevel.READ_COMMITTED);
    }

    /** Every record of {@code topic}: with READ_UNCOMMITTED, those of open and aborted transactions too. */
    public static List<ConsumerRecord<byte[], byte[]>> readAll(String bootstrap, String topic, IsolationLevel isolation) {
        Map<String, Object> c = Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation.toString(),
                ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false,
                ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG, 4 * 1024 * 1024);
        List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(c, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            List<TopicPartition> tps = consumer.partitionsFor(topic, Duration.ofSeconds(10)).stream()
                    .map(p -> new TopicPartition(topic, p.partition())).toList();
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            Map<TopicPartition, Long> end = consumer.endOffsets(tps);
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            while (tps.stream().anyMatch(tp -> consumer.position(tp) < end.get(tp))) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("could not read " + topic + " to its end within 60 s");
                }
                consumer.poll(Duration.ofMillis(200)).forEach(out::add);
            }
        }
        return out;
    }

    /**
     * Waits until every partition of {@code topics}, created a moment ago, has a leader; a topic the
     * broker's metadata does not know yet counts as not ready.
     */
    public static void awaitLeaders(Admin admin, Collection<String> topics, Duration timeout)
            throws ExecutionException, InterruptedException, TimeoutException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!haveLeaders(admin, topics)) {
            if (System.nanoTime() > deadline) {
                throw new TimeoutException("topics " + topics + " have partitions without a leader after " + timeout.toSeconds() + " s");
            }
            Thread.sleep(100);
        }
    }

    private static boolean haveLeaders(Admin admin, Collection<String> topics) throws ExecutionException, InterruptedException {
        try {
            return admin.describeTopics(topics).allTopicNames().get().values().stream()
                    .allMatch(d -> d.partitions().stream().allMatch(p -> p.leader() != null && !p.leader().isEmpty()));
        } catch (ExecutionException e) {
            if (e.getCause() instanceof UnknownTopicOrPartitionException) {
                return false;
            }
            throw e;
        }
    }

    /** End offsets (read_committed) of every partition of {@code topic}. */
    public static Map<TopicPartition, Long> endOffsets(Admin admin, String topic, int partitions)
            throws ExecutionException, InterruptedException {
        return endOffsets(admin, topic, partitions, IsolationLevel.READ_COMMITTED);
    }

    /**
     * End offsets of every partition of {@code topic}: READ_COMMITTED gives the last stable offset,
     * READ_UNCOMMITTED the high watermark; they differ while a transaction with records is open.
     */
    public static Map<TopicPartition, Long> endOffsets(Admin admin, String topic, int partitions, IsolationLevel isolation)
            throws ExecutionException, InterruptedException {
        Map<TopicPartition, OffsetSpec> ask = new HashMap<>();
        for (int p = 0; p < partitions; p++) {
            ask.put(new TopicPartition(topic, p), OffsetSpec.latest());
        }
        Map<TopicPartition, Long> out = new HashMap<>();
        admin.listOffsets(ask, new ListOffsetsOptions(isolation)).all().get()
                .forEach((tp, info) -> out.put(tp, info.offset()));
        return out;
    }

    /** The partitions the group member with this client id owns now (empty if it is not a member). */
    public static Set<TopicPartition> owned(Admin admin, String group, String clientId) throws ExecutionException, InterruptedException {
        ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).describedGroups().get(group).get();
        Set<TopicPartition> out = new HashSet<>();
        for (MemberDescription m : d.members()) {
            if (m.clientId().equals(clientId)) {
                out.addAll(m.assignment().topicPartitions());
            }
        }
        return out;
    }

    /** Which member (by client id) owns each partition of the group now. */
    public static Map<Integer, String> owners(Admin admin, String group) throws ExecutionException, InterruptedException {
        ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).describedGroups().get(group).get();
        Map<Integer, String> out = new java.util.TreeMap<>();
        for (MemberDescription m : d.members()) {
            m.assignment().topicPartitions().forEach(tp -> out.put(tp.partition(), m.clientId()));
        }
        return out;
    }

    /** The group's committed offsets (absent partitions: none committed). */
    public static Map<TopicPartition, Long> committed(Admin admin, String group) throws ExecutionException, InterruptedException {
        Map<TopicPartition, Long> out = new HashMap<>();
        Map<TopicPartition, OffsetAndMetadata> m = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
        m.forEach((tp, om) -> {
            if (om != null) {
                out.put(tp, om.offset());
            }
        });
        return out;
    }

    /**
     * Waits until {@code group} is stable with exactly {@code members} members that between them
     * own all {@code partitions} partitions (each member at least one, when there are enough),
     * seen twice in a row: with cooperative rebalancing the group passes through stable states
     * in which revoked partitions are not yet reassigned.
     */
    public static void awaitGroup(Admin admin, String group, int members, int partitions, Duration timeout)
            throws ExecutionException, InterruptedException, TimeoutException {
        long deadline = System.nanoTime() + timeout.toNanos();
        int seen = 0;
        String last = "";
        while (seen < 2) {
            if (System.nanoTime() > deadline) {
                throw new TimeoutException("group " + group + " not stable with " + members + " members after " + timeout + ": " + last);
            }
            ConsumerGroupDescription d;
            try {
                d = admin.describeConsumerGroups(List.of(group)).describedGroups().get(group).get();
            } catch (ExecutionException e) {
                if (!(e.getCause() instanceof GroupIdNotFoundException)) {
                    throw e;
                }
                last = "no such group yet";
                Thread.sleep(100);
                continue;
            }
            Set<TopicPartition> owned = new HashSet<>();
            boolean everyOneWorks = true;
            for (MemberDescription m : d.members()) {
                owned.addAll(m.assignment().topicPartitions());
                everyOneWorks &= !m.assignment().topicPartitions().isEmpty() || members > partitions;
            }
            last = d.groupState() + ", " + d.members().size() + " members, " + owned.size() + " partitions owned";
            boolean ok = d.groupState() == GroupState.STABLE && d.members().size() == members && owned.size() == partitions && everyOneWorks;
            seen = ok ? seen + 1 : 0;
            Thread.sleep(ok ? 300 : 100);
        }
    }
}
