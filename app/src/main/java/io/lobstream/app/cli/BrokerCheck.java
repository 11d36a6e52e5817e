package io.lobstream.app.cli;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import io.lobstream.schema.LobStreamConfig;
import io.lobstream.schema.LobStreamConfig.ClientKind;
import org.apache.kafka.clients.NetworkClient;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.clients.admin.DescribeTopicsOptions;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutionException;

/**
 * Fails fast, saying what to do, when no Kafka broker answers. A client command run before its
 * node is up (the node runs the embedded broker it talks to) would otherwise wait out the Kafka
 * clients' own timeouts, 30–60 s, behind a reconnect warning every second, and end with "Timeout
 * expired while fetching topic metadata".
 */
final class BrokerCheck {
    /** A running broker answers in milliseconds; one that a node is starting, within seconds. */
    static final Duration WAIT = Duration.ofSeconds(10);
    /** The shortest wait: a deadline already past would fail against a running broker. */
    static final Duration MIN_WAIT = Duration.ofSeconds(1);

    private BrokerCheck() {
    }

    /**
     * Returns once a broker of {@code config}'s bootstrap servers has answered, or throws within
     * {@code within} (at least {@link #MIN_WAIT}).
     */
    static void requireAnswer(LobStreamConfig config, Duration within) throws InterruptedException {
        requireAnswer(config, within, null);
    }

    /**
     * As {@link #requireAnswer(LobStreamConfig, Duration)}, and then that {@code topic} exists, if not null: a producer
     * sending to a topic the broker does not have (one that does not create topics on first use) waits out its
     * max.block.ms, 60 s, and then names no cause.
     */
    static void requireAnswer(LobStreamConfig config, Duration within, String topic) throws InterruptedException {
        Duration wait = within.compareTo(MIN_WAIT) < 0 ? MIN_WAIT : within;
        try {
            quietly(config, admin -> {
                admin.describeCluster(new DescribeClusterOptions().timeoutMs((int) wait.toMillis())).nodes().get();
                if (topic != null) {
                    requireTopic(admin, config, topic, wait);
                }
                return null;
            });
        } catch (ExecutionException e) {
            if (e.getCause() instanceof org.apache.kafka.common.errors.TimeoutException) {
                throw new IllegalStateException("no Kafka broker answers at " + config.bootstrap() + " within " + Durations.format(wait)
                        + ": start a node first (./lobstream node runs the embedded broker) or give --bootstrap", e.getCause());
            }
            // a broker answered and refused (authentication, TLS, authorization): say what it said
            throw new IllegalStateException("the Kafka cluster at " + config.bootstrap() + " refused: " + e.getCause().getMessage(), e.getCause());
        }
    }

    /**
     * Whether a broker of {@code config}'s answers, within {@code within}, that it has no {@code topic}. False when it has
     * it, and when nobody could say (no broker answered, describing it not allowed): for a process that may start before
     * the node that makes its topics, and only warns.
     */
    static boolean saysNoTopic(LobStreamConfig config, String topic, Duration within) throws InterruptedException {
        try {
            return quietly(config, admin -> {
                admin.describeTopics(List.of(topic), new DescribeTopicsOptions().timeoutMs((int) within.toMillis())).allTopicNames().get();
                return false;
            });
        } catch (ExecutionException e) {
            return e.getCause() instanceof UnknownTopicOrPartitionException;
        }
    }

    private interface AdminCall<T> {
        T call(Admin admin) throws ExecutionException, InterruptedException;
    }

    /**
     * {@code call} with an admin client, without the warning each failed connection attempt logs (the caller says it
     * once). Synchronized: it lowers a logger of the whole JVM while it runs, and each caller must restore what it found.
     */
    private static synchronized <T> T quietly(LobStreamConfig config, AdminCall<T> call) throws ExecutionException, InterruptedException {
        Logger network = (Logger) LoggerFactory.getLogger(NetworkClient.class);
        Level level = network.getLevel();
        network.setLevel(Level.ERROR);
        try (Admin admin = Admin.create(config.clientConfig(ClientKind.ADMIN))) {
            return call.call(admin);
        } finally {
            network.setLevel(level);
        }
    }

    private static void requireTopic(Admin admin, LobStreamConfig config, String topic, Duration wait) throws InterruptedException {
        try {
            admin.describeTopics(List.of(topic), new DescribeTopicsOptions().timeoutMs((int) wait.toMillis())).allTopicNames().get();
        } catch (ExecutionException e) {
            if (e.getCause() instanceof UnknownTopicOrPartitionException) {
                throw new IllegalStateException("no topic " + topic + " on " + config.bootstrap()
                        + ": has a writer node run against this cluster (it creates the topics)?", e.getCause());
            }
            // anything else (not allowed to describe it, say): the send finds out, and says so itself
        }
    }
}
