package io.lobstream.schema;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.common.errors.PolicyViolationException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.record.TimestampType;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Creates the four topics if they are missing and checks that they are co-partitioned: a
 * tablespace is one partition of each, so differing partition counts would mix LOBs up. Topics
 * are created with {@code lob.topic.partitions} partitions, or as many as one of them that exists.
 */
public final class TopicSetup {
    private static final String TIMESTAMP_TYPE = TopicConfig.MESSAGE_TIMESTAMP_TYPE_CONFIG;
    private static final String MAX_MESSAGE_BYTES = TopicConfig.MAX_MESSAGE_BYTES_CONFIG;
    private static final String LOG_APPEND_TIME = TimestampType.LOG_APPEND_TIME.name;
    private static final String MIN_INSYNC_REPLICAS = TopicConfig.MIN_IN_SYNC_REPLICAS_CONFIG;

    private TopicSetup() {
    }

    /**
     * @return the partition count shared by all four topics
     */
    public static int ensureTopics(Admin admin, LobStreamConfig config) throws InterruptedException, ExecutionException {
        // a broker that has just started (or just created a topic) may answer UnknownTopicOrPartition
        // until its metadata has caught up: try again for a while
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (true) {
            try {
                return ensureTopicsOnce(admin, config);
            } catch (ExecutionException e) {
                if (!(e.getCause() instanceof org.apache.kafka.common.errors.UnknownTopicOrPartitionException)
                        || System.nanoTime() > deadline) {
                    throw e;
                }
                Thread.sleep(200);
            }
        }
    }

    private static int ensureTopicsOnce(Admin admin, LobStreamConfig config) throws InterruptedException, ExecutionException {
        Topics topics = config.topics();
        Set<String> present = new HashSet<>(admin.listTopics().names().get());
        present.retainAll(topics.all());
        // A topic that exists decides the count of those created now (lob.commands first: it holds the data). A producer
        // run before any node, on a broker that creates topics on first use, makes lob.commands with the broker's
        // num.partitions; the others then match it, and the commands already sent are kept.
        int partitions = config.get(LobStreamConfig.PARTITIONS);
        boolean decided = false; // by a topic that exists, or one created here
        for (String t : topics.all()) {
            if (present.contains(t)) {
                partitions = partitionsOf(admin, t);
                decided = true;
                break;
            }
        }
        int replication = config.get(LobStreamConfig.REPLICATION);
        Optional<Short> rf = replication < 1 ? Optional.empty() : Optional.of((short) replication); // empty: the broker's default
        for (String t : topics.all()) {
            if (present.contains(t)) {
                continue;
            }
            // three replicas or more: acknowledged by two at least, as README's topics made by hand (the brokers' default
            // is 1, and a leader alone then acknowledges while its followers lag: losing it loses what it acknowledged)
            Map<String, String> replicated = replication >= 3 ? Map.of(MIN_INSYNC_REPLICAS, "2") : Map.of();
            Map<String, String> settings = new HashMap<>(replicated);
            if (t.equals(topics.deadLetters())) {
                // kept as long as the commands: replay asks it whether the writer dead-lettered a command it cannot decode,
                // and a client whether its write was; and a letter keeps its command's timestamp, so a time limit would
                // delete at once the letters of a writer far behind
                settings.putAll(Map.of("retention.ms", Long.toString(config.get(LobStreamConfig.COMMANDS_RETENTION_MS)),
                        "retention.bytes", "-1", "cleanup.policy", "delete"));
            }
            boolean pageLists = t.equals(topics.undoHistory()) || t.equals(topics.reclaim());
            if (pageLists) {
                settings.put(MAX_MESSAGE_BYTES, Integer.toString(Topics.PAGE_LIST_RECORD_MAX_BYTES));
            }
            if (t.equals(topics.commands())) {
                // the redo log: replay and the rebuild of a moved partition read it from the beginning, so neither time
                // nor size may delete from it (a broker's log.retention.bytes would). Stamped by the broker: upload expiry
                // and the de-duplication window are measured in the commands' time, which must not be a producer's clock
                long retention = config.get(LobStreamConfig.COMMANDS_RETENTION_MS);
                settings.putAll(Map.of("retention.ms", Long.toString(retention), "retention.bytes", "-1", "cleanup.policy", "delete",
                        TIMESTAMP_TYPE, LOG_APPEND_TIME));
            }
            boolean created;
            try {
                created = create(admin, new NewTopic(t, Optional.of(partitions), rf).configs(settings));
            } catch (ExecutionException e) {
                boolean refusedLimit = e.getCause() instanceof PolicyViolationException || e.getCause() instanceof InvalidConfigurationException;
                if (refusedLimit && pageLists) {
                    // a cluster that caps max.message.bytes (a create-topic policy, a managed service): the broker's limit
                    // takes page lists of values up to a GiB or two, and topicProblems says what is short
                    created = create(admin, new NewTopic(t, Optional.of(partitions), rf).configs(replicated));
                } else {
                    throw e;
                }
            }
            if (!created && !decided) {
                // it existed after all: made a moment ago (the listing above did not show it yet) or by another node
                // meanwhile. Its count decides, as if it had been listed: not the configured one, for the topics after it
                partitions = partitionsOf(admin, t);
            }
            decided = true;
        }
        Map<String, TopicDescription> described = admin.describeTopics(topics.all()).allTopicNames().get();
        int commands = described.get(topics.commands()).partitions().size();
        for (TopicDescription d : described.values()) {
            if (d.partitions().size() != commands) {
                throw new IllegalStateException("topics are not co-partitioned: " + topics.commands() + " has " + commands
                        + " partitions but " + d.name() + " has " + d.partitions().size() + ". Partition p of each topic is "
                        + "tablespace p, so all four need one count, and it is fixed for good (a LOB's partition is its key's "
                        + "hash modulo the count). Delete the topics that differ (they are created again) or recreate them all "
                        + "with " + commands + " partitions.");
            }
        }
        return commands;
    }

    private static int partitionsOf(Admin admin, String topic) throws InterruptedException, ExecutionException {
        return admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).partitions().size();
    }

    /** @return false if the topic existed already */
    private static boolean create(Admin admin, NewTopic topic) throws InterruptedException, ExecutionException {
        try {
            admin.createTopics(List.of(topic)).all().get();
            return true;
        } catch (ExecutionException e) {
            if (e.getCause() instanceof TopicAuthorizationException refused) {
                // the broker's "Authorization failed." names neither the topic nor the right
                throw new ExecutionException(new TopicAuthorizationException("creating " + topic.name() + " refused ("
                        + refused.getMessage() + "): grant this principal Create on it, or make it by hand (README: Your own "
                        + "Kafka cluster), or Describe if it exists"));
            }
            if (!(e.getCause() instanceof TopicExistsException)) { // another node created it meanwhile: checked below
                throw e;
            }
            return false;
        }
    }

    /**
     * What is wrong with the four topics' configuration. A topic LobStream did not create (by hand,
     * by a broker on a producer's first send, or an older LobStream) keeps the broker's defaults: 7
     * days of retention, the producers' timestamps, records of at most 1 MiB. Empty when
     * {@code lob.commands}, the redo log, keeps at least what {@code lob.commands.retention.ms}
     * asks, no size or compaction deletes from it, and the broker stamps its records; when
     * {@code lob.commands.dlq} keeps its letters as long; and when {@code lob.undo-history} and
     * {@code lob.reclaim} take records of
     * {@link Topics#PAGE_LIST_RECORD_MAX_BYTES}; and when no topic has one replica on a cluster of several brokers, a
     * {@code min.insync.replicas} above its replicas, or 1 with three replicas or more. Needs DescribeConfigs and Describe
     * on the topics.
     */
    public static List<String> topicProblems(Admin admin, LobStreamConfig config) throws InterruptedException {
        Topics topics = config.topics();
        List<String> problems = new ArrayList<>();
        Map<String, Config> configs = new HashMap<>();
        List<ConfigResource> resources = topics.all().stream().map(t -> new ConfigResource(ConfigResource.Type.TOPIC, t)).toList();
        Map<ConfigResource, KafkaFuture<Config>> described = admin.describeConfigs(resources).values();
        List<String> unreadable = new ArrayList<>();
        Throwable why = null;
        for (ConfigResource r : resources) {
            try {
                configs.put(r.name(), described.get(r).get());
            } catch (ExecutionException failed) { // one topic's: a principal with DescribeConfigs on some topics only
                unreadable.add(r.name());
                why = failed.getCause();
            }
        }
        if (!unreadable.isEmpty()) {
            problems.add("cannot read the configuration of " + unreadable + " (" + why + "); not checked");
        }
        String topic = topics.commands();
        Config c = configs.get(topic);
        String everyCommand = "replay and the rebuild of a partition need every command";
        if (c != null) {
            keepsWhatCommandsNeed(problems, config, topic, c, everyCommand);
            expect(problems, config, topic, TIMESTAMP_TYPE, value(c, TIMESTAMP_TYPE), LOG_APPEND_TIME, LOG_APPEND_TIME.equals(value(c, TIMESTAMP_TYPE)),
                    "upload expiry and the de-duplication window are measured in the commands' time; with CreateTime a producer's "
                            + "clock sets it, and one that runs ahead expires other producers' uploads");
        }
        if (configs.containsKey(topics.deadLetters())) {
            keepsWhatCommandsNeed(problems, config, topics.deadLetters(), configs.get(topics.deadLetters()),
                    "replay and applied() read the letters of commands as old as any, and a letter keeps its command's timestamp");
        }
        for (String pageLists : List.of(topics.undoHistory(), topics.reclaim())) {
            if (configs.containsKey(pageLists)) {
                String max = value(configs.get(pageLists), MAX_MESSAGE_BYTES);
                expect(problems, config, pageLists, MAX_MESSAGE_BYTES, max, Integer.toString(Topics.PAGE_LIST_RECORD_MAX_BYTES),
                        max != null && Long.parseLong(max) >= Topics.PAGE_LIST_RECORD_MAX_BYTES,
                        "its records list a superseded version's pages, one extent per page at worst: past 1 MiB for a value "
                                + "over about 2 GiB written into a tablespace of holes, which the broker would refuse to the "
                                + "writer or purge worker sending it, at every try");
            }
        }
        replicationProblems(admin, config, configs, problems);
        return problems;
    }

    /**
     * Adds what in the topics' replication loses acknowledged records or refuses every write: one replica on a cluster of
     * several brokers (Kafka's default.replication.factor is 1: a broker lost loses its partitions, and lob.commands is the
     * only copy a rebuild has), a min.insync.replicas above the replicas (every acks=all send fails, NotEnoughReplicas), or
     * 1 with three replicas or more (a leader alone acknowledges while its followers lag, and losing it loses that).
     */
    private static void replicationProblems(Admin admin, LobStreamConfig config, Map<String, Config> configs, List<String> problems)
            throws InterruptedException {
        Topics topics = config.topics();
        Map<String, TopicDescription> described;
        int brokers;
        try {
            described = admin.describeTopics(topics.all()).allTopicNames().get();
            brokers = admin.describeCluster().nodes().get().size();
        } catch (ExecutionException e) {
            problems.add("cannot read the topics' replication (" + e.getCause() + "); not checked");
            return;
        }
        for (String t : topics.all()) {
            TopicDescription d = described.get(t);
            int replicas = d == null ? 0 : d.partitions().stream().mapToInt(p -> p.replicas().size()).min().orElse(0);
            String isr = configs.containsKey(t) ? value(configs.get(t), MIN_INSYNC_REPLICAS) : null;
            if (isr != null && replicas > 0 && Integer.parseInt(isr) > replicas) { // first: the node cannot write at all
                expect(problems, config, t, MIN_INSYNC_REPLICAS, isr, Integer.toString(Math.max(1, replicas - 1)), false,
                        "above its " + replicas + " replicas: every write to it fails with NotEnoughReplicas");
            }
            if (replicas == 1 && brokers > 1) {
                problems.add(t + " has 1 replica on a cluster of " + brokers + " brokers: a broker lost loses its partitions' records"
                        + (t.equals(topics.commands()) ? ", acknowledged writes that no rebuild or replay can have again" : "")
                        + ". Raise it with kafka-reassign-partitions.sh; " + LobStreamConfig.REPLICATION.name()
                        + "=3 makes the topics a node creates with three");
            } else if (isr != null && replicas >= 3) {
                expect(problems, config, t, MIN_INSYNC_REPLICAS, isr, "2", Integer.parseInt(isr) >= 2,
                        "with " + replicas + " replicas a leader alone acknowledges while its followers lag, and losing it loses what "
                                + "it acknowledged");
            }
        }
    }

    /**
     * {@code topic}'s {@code cleanup.policy} if it compacts (compact, or compact,delete): compaction keeps only the newest
     * record of each LOB, and the log's start does not move to say so. Empty if it does not. Needs DescribeConfigs.
     */
    public static Optional<String> compaction(Admin admin, String topic, Duration timeout)
            throws InterruptedException, ExecutionException, TimeoutException {
        ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        String policy = value(admin.describeConfigs(List.of(r)).values().get(r).get(timeout.toMillis(), TimeUnit.MILLISECONDS),
                "cleanup.policy");
        return policy != null && policy.contains("compact") ? Optional.of(policy) : Optional.empty();
    }

    /**
     * Adds to {@code problems} what in {@code c}, {@code topic}'s configuration, keeps less than lob.commands.retention.ms,
     * or compacts: a compacted topic keeps only the newest record of each LOB, and its start does not move to say so.
     */
    private static void keepsWhatCommandsNeed(List<String> problems, LobStreamConfig config, String topic, Config c, String why) {
        long wantedMs = config.get(LobStreamConfig.COMMANDS_RETENTION_MS);
        String ms = value(c, "retention.ms");
        boolean keepsLess = ms == null || (Long.parseLong(ms) >= 0 && (wantedMs < 0 || Long.parseLong(ms) < wantedMs));
        expect(problems, config, topic, "retention.ms", ms, Long.toString(wantedMs), !keepsLess,
                LobStreamConfig.COMMANDS_RETENTION_MS.name() + " is " + wantedMs + "; " + why);
        expect(problems, config, topic, "retention.bytes", value(c, "retention.bytes"), "-1", "-1".equals(value(c, "retention.bytes")),
                "a size limit deletes the oldest records; " + why);
        expect(problems, config, topic, "cleanup.policy", value(c, "cleanup.policy"), "delete", "delete".equals(value(c, "cleanup.policy")),
                "compaction keeps only the newest record of each LOB; " + why);
    }

    private static String value(Config c, String key) {
        ConfigEntry e = c.get(key);
        return e == null ? null : e.value();
    }

    /** Adds to {@code problems}, unless {@code ok}, that {@code topic} has {@code key=value}, why not, and the line that fixes it. */
    private static void expect(List<String> problems, LobStreamConfig config, String topic, String key, String value, String wanted,
                               boolean ok, String why) {
        if (!ok) {
            problems.add(topic + " has " + key + "=" + value + ", not " + wanted + " (" + why + "): kafka-configs.sh "
                    + "--bootstrap-server " + config.bootstrap() + " --alter --entity-type topics --entity-name " + topic
                    + " --add-config " + key + "=" + wanted);
        }
    }
}
