package io.lobstream.ingest;

import io.lobstream.app.embedded.EmbeddedKafka;
import io.lobstream.schema.LobStreamConfig;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * What a closing node does with the static member of a replaced stream thread whose end it is
 * still waiting for: one that stays in the group keeps it (a quick restart gets the partitions
 * back), one that leaves takes it out at once. The member here is a plain consumer's, left in the
 * group as a stream thread's would be, and the dying thread one that does not end.
 */
class StaticMembersIT {
    private static final String TOPIC = "static-members-it";

    @TempDir
    static Path dir;
    static EmbeddedKafka kafka;
    static Admin admin;
    private final CountDownLatch end = new CountDownLatch(1);
    private Thread dying;

    @BeforeAll
    static void start() throws Exception {
        int[] ports = EmbeddedKafka.freePorts(2);
        kafka = new EmbeddedKafka(dir, ports[0], ports[1]).start();
        admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrap()));
        admin.createTopics(List.of(new NewTopic(TOPIC, 1, (short) 1))).all().get(60, TimeUnit.SECONDS);
    }

    @AfterAll
    static void stop() {
        if (admin != null) {
            admin.close();
        }
        if (kafka != null) {
            kafka.close();
        }
    }

    @AfterEach
    void endTheDyingThread() {
        end.countDown();
    }

    @Test
    void aNodeThatLeavesRemovesTheMemberOfAThreadStillDying() throws Exception {
        StaticMembers members = membersOf("leaving", "leaving-7");
        members.close(true);
        assertThat(instanceIds("leaving")).doesNotContain("leaving-7");
    }

    /** Checked once the dying thread has ended and the removal that waited for it is over: before, it could not fail. */
    @Test
    void aNodeThatStaysKeepsIt() throws Exception {
        StaticMembers members = membersOf("staying", "staying-7");
        Thread removal = removalOf("staying-7");
        members.close(false);
        end.countDown();
        dying.join(10_000);
        removal.join(30_000);
        assertThat(dying.isAlive() || removal.isAlive()).as("both ended: the removal could have run").isFalse();
        assertThat(instanceIds("staying")).contains("staying-7");
    }

    /**
     * Once the dying thread has ended and a thread started since runs under its name (its index given again), the member
     * is that thread's: it leaves with the node, not before. Checked once the removal that waited has run: closing the node
     * straight after the thread's end raced it (a closed StaticMembers removes nothing), and the test could not fail.
     */
    @Test
    void aNodeThatLeavesKeepsTheMemberAThreadStartedSinceRunsAs() throws Exception {
        StaticMembers members = membersOf("reused", "reused-7", Set.of("reused-StreamThread-7"));
        Thread removal = removalOf("reused-7");
        end.countDown();
        dying.join(10_000);
        removal.join(30_000);
        assertThat(dying.isAlive() || removal.isAlive()).as("both ended: the removal could have run").isFalse();
        assertThat(instanceIds("reused")).contains("reused-7");
        members.close(true);
        assertThat(instanceIds("reused")).contains("reused-7");
    }

    /** The thread that removes {@code instanceId}'s member once its dying stream thread has ended. */
    private static Thread removalOf(String instanceId) {
        return Thread.getAllStackTraces().keySet().stream().filter(t -> t.getName().equals("lob-remove-member-" + instanceId))
                .findFirst().orElseThrow(() -> new AssertionError("no removal waits for the dying thread"));
    }

    /** While the dying thread lives it is listed among the node's threads (not dead yet): its member goes all the same. */
    @Test
    void aDyingThreadStillListedDoesNotKeepItsMember() throws Exception {
        StaticMembers members = membersOf("listed", "listed-7", Set.of("listed-StreamThread-7"));
        members.close(true);
        assertThat(instanceIds("listed")).doesNotContain("listed-7");
    }

    /**
     * Node {@code nodeId}'s StaticMembers, waiting for the end of its stream thread 7, whose member
     * {@code instanceId} is in the node's writer group (a group of the test's own, named after the node).
     */
    private StaticMembers membersOf(String nodeId, String instanceId) throws Exception {
        return membersOf(nodeId, instanceId, Set.of());
    }

    /** The same, {@code running} the names of the node's stream threads that run. */
    private StaticMembers membersOf(String nodeId, String instanceId, Set<String> running) throws Exception {
        join(nodeId, instanceId);
        StaticMembers members = new StaticMembers(new LobStreamConfig(Map.of(LobStreamConfig.BOOTSTRAP.name(), kafka.bootstrap(),
                LobStreamConfig.APPLICATION_ID.name(), nodeId)), nodeId, () -> running);
        dying = new Thread(() -> {
            try {
                end.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, nodeId + "-StreamThread-7");
        dying.setDaemon(true);
        dying.start();
        members.removeWhenDead(dying);
        return members;
    }

    /** A static member that stays in the group after its consumer closed, as a dead stream thread's does. */
    private static void join(String group, String instanceId) {
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrap(),
                ConsumerConfig.GROUP_ID_CONFIG, group, ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, instanceId,
                ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 45_000, ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic"), // as Kafka Streams'
                new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            c.subscribe(List.of(TOPIC));
            await().atMost(Duration.ofSeconds(60)).until(() -> {
                c.poll(Duration.ofMillis(100));
                return !c.assignment().isEmpty();
            });
        }
        await().atMost(Duration.ofSeconds(30)).until(() -> instanceIds(group).contains(instanceId));
    }

    private static List<String> instanceIds(String group) throws Exception {
        return admin.describeConsumerGroups(List.of(group)).describedGroups().get(group).get(30, TimeUnit.SECONDS).members().stream()
                .map(MemberDescription::groupInstanceId).flatMap(Optional::stream).toList();
    }
}
