package io.lobstream.schema;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.errors.TopicExistsException;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;

/**
 * Creates the four topics if they are missing and checks that they are co-partitioned: a
 * tablespace is one partition of each, so differing partition counts would mix LOBs up.
 */
public final class TopicSetup {
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
        int partitions = config.get(LobStreamConfig.PARTITIONS);
        short rf = config.get(LobStreamConfig.REPLICATION).shortValue();
        List<NewTopic> wanted = new ArrayList<>();
        for (String t : topics.all()) {
            NewTopic topic = new NewTopic(t, partitions, rf);
            if (t.equals(topics.commands())) {
                // the redo log: replay and the rebuild of a moved partition read it from the beginning
                long retention = config.get(LobStreamConfig.COMMANDS_RETENTION_MS);
                topic.configs(Map.of("retention.ms", Long.toString(retention), "cleanup.policy", "delete"));
            }
            wanted.add(topic);
        }
        try {
            admin.createTopics(wanted).all().get();
        } catch (ExecutionException e) {
            if (!(e.getCause() instanceof TopicExistsException)) {
                throw e;
            }
            // some exist already; create any that do not, one by one
            for (NewTopic t : wanted) {
                try {
                    admin.createTopics(List.of(t)).all().get();
                } catch (ExecutionException e2) {
                    if (!(e2.getCause() instanceof TopicExistsException)) {
                        throw e2;
                    }
                }
            }
        }
        Map<String, TopicDescription> described = admin.describeTopics(topics.all()).allTopicNames().get();
        int commands = described.get(topics.commands()).partitions().size();
        for (TopicDescription d : described.values()) {
            if (d.partitions().size() != commands) {
                throw new IllegalStateException("topics are not co-partitioned: " + topics.commands() + " has " + commands
                        + " partitions but " + d.name() + " has " + d.partitions().size());
            }
        }
        return commands;
    }
}
