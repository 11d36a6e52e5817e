package io.lobstream.app;

import io.lobstream.app.embedded.Cluster;
import io.lobstream.client.LobClient;
import io.lobstream.ingest.LobNode;
import io.lobstream.schema.LobStreamConfig;
import io.lobstream.store.fsck.FsckReport;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyQueryMetadata;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.function.Predicate;

import static org.awaitility.Awaitility.await;

/** Helpers for integration tests that run several writer nodes on one embedded cluster. */
final class Nodes {
    static final HttpClient HTTP = HttpClient.newHttpClient();

    private Nodes() {
    }

    /** The configuration of one node: its own data directory, a free HTTP port, and a static node id. */
    static LobStreamConfig config(Cluster cluster, Path dataDir, int partitions, String nodeId, int threads) {
        return config(cluster, dataDir, partitions, nodeId, threads, Map.of());
    }

    static LobStreamConfig config(Cluster cluster, Path dataDir, int partitions, String nodeId, int threads, Map<String, Object> more) {
        Map<String, Object> props = new java.util.HashMap<>(more);
        props.put(LobStreamConfig.STREAM_THREADS.name(), threads);
        props.put(LobStreamConfig.NODE_ID.name(), nodeId);
        return cluster.nodeConfig(dataDir, partitions, props);
    }

    /** Closes what a test class started, in reverse order; nodes leave the group. Any may be null. */
    static void closeAll(LobClient client, Cluster cluster, LobNode... nodes) {
        if (client != null) {
            client.close();
        }
        for (LobNode n : nodes) {
            if (n != null) {
                n.close(true);
            }
        }
        if (cluster != null) {
            cluster.close();
        }
    }

    /**
     * A node RUNNING, or closed: one that never got there ran on in the test JVM, its clients retrying a closed broker. Its
     * engine keys ({@code lob.history.max}, ...) come from {@code config}, as {@code lobstream node -c} passes them.
     */
    static LobNode start(LobStreamConfig config) throws Exception {
        LobNode node = new LobNode(config).start();
        try {
            node.awaitRunning(Duration.ofSeconds(120));
            return node;
        } catch (Exception | Error e) {
            node.close(true);
            throw e;
        }
    }

    static Set<Integer> partitions(LobNode node) {
        return new TreeSet<>(node.tablespaces().all().keySet());
    }

    /**
     * Waits until {@code a} and {@code b} split {@code partitions} between them, each with at least
     * one, and both are RUNNING (not rebalancing: which node owns what is settled).
     */
    static void awaitSplit(LobNode a, LobNode b, int partitions) {
        await().atMost(Duration.ofSeconds(120)).until(() -> {
            Set<Integer> pa = partitions(a);
            Set<Integer> pb = partitions(b);
            Set<Integer> all = new TreeSet<>(pa);
            all.addAll(pb);
            return all.size() == partitions && !pa.isEmpty() && !pb.isEmpty() && pa.size() + pb.size() == partitions
                    && a.streams().state() == KafkaStreams.State.RUNNING && b.streams().state() == KafkaStreams.State.RUNNING;
        });
    }

    static int partitionOf(LobNode node, String id) {
        KeyQueryMetadata m = node.streams().queryMetadataForKey("lob-tablespace", id, new StringSerializer());
        return m.partition();
    }

    static byte[] bytes(int n, long seed) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return b;
    }

    static URI uri(LobNode node, String id) {
        return URI.create("http://127.0.0.1:" + node.httpPort() + "/lobs/" + URLEncoder.encode(id, StandardCharsets.UTF_8).replace("+", "%20"));
    }

    static HttpResponse<byte[]> get(LobNode node, String id, String range) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(uri(node, id));
        if (range != null) {
            b.header("Range", range);
        }
        return HTTP.send(b.build(), HttpResponse.BodyHandlers.ofByteArray());
    }

    static HttpResponse<byte[]> head(LobNode node, String id, String range) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(uri(node, id)).method("HEAD", HttpRequest.BodyPublishers.noBody());
        if (range != null) {
            b.header("Range", range);
        }
        return HTTP.send(b.build(), HttpResponse.BodyHandlers.ofByteArray());
    }

    /** The partition of lob.commands a lobId's records go to (Kafka's default partitioner). */
    static int partitionOf(String lobId, int partitions) {
        return org.apache.kafka.common.utils.Utils.toPositive(
                org.apache.kafka.common.utils.Utils.murmur2(lobId.getBytes(java.nio.charset.StandardCharsets.UTF_8))) % partitions;
    }

    static FsckReport fsck(LobNode node) throws Exception {
        return node.tablespaces().fsckAll(true);
    }

    /**
     * The committed records of {@code topic} from its start, as a new consumer group reads them,
     * polled until {@code enough} holds for all read so far (at most {@code atMost}).
     */
    static List<ConsumerRecord<byte[], byte[]>> committedRecords(Cluster cluster, String topic, Duration atMost,
                                                                Predicate<List<ConsumerRecord<byte[], byte[]>>> enough) {
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap(),
                ConsumerConfig.GROUP_ID_CONFIG, "it-" + UUID.randomUUID(),
                ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest",
                ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed"), new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            c.subscribe(List.of(topic));
            List<ConsumerRecord<byte[], byte[]>> seen = new ArrayList<>();
            await().atMost(atMost).until(() -> {
                c.poll(Duration.ofMillis(200)).forEach(seen::add);
                return enough.test(seen);
            });
            return seen;
        }
    }

    /** Where {@code topic}'s partition {@code partition} ends (its high watermark). */
    static long endOffset(Cluster cluster, String topic, int partition) {
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap()),
                new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            TopicPartition tp = new TopicPartition(topic, partition);
            return c.endOffsets(List.of(tp), Duration.ofSeconds(30)).get(tp);
        }
    }

    /** The last value of header {@code name}, as text. */
    static String header(ConsumerRecord<?, ?> record, String name) {
        return new String(record.headers().lastHeader(name).value(), StandardCharsets.UTF_8);
    }
}
