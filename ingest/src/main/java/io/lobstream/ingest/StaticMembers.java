package io.lobstream.ingest;

import io.lobstream.schema.LobStreamConfig;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.MemberToRemove;
import org.apache.kafka.clients.admin.RemoveMembersFromConsumerGroupOptions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Takes the static member of a replaced stream thread out of the writer group. Kafka Streams
 * replaces a failed thread with one of a new index, so a new {@code group.instance.id}
 * ({@code <lob.node.id>-<index>}), and a static member does not leave the group when its consumer
 * closes: the dead thread's partitions stayed assigned to it, unprocessed, for the whole session
 * timeout ({@code lob.writer.session.timeout.ms}, 45 s). Kafka Streams' own
 * {@code removeStreamThread} removes the member this way; its thread replacement does not.
 */
final class StaticMembers {
    private static final Logger log = LoggerFactory.getLogger(StaticMembers.class);
    private static final Pattern THREAD_INDEX = Pattern.compile("-StreamThread-(\\d+)$");
    /** How long the dead thread may take to close its clients (its transaction is aborted first). */
    private static final Duration DEATH_WAIT = Duration.ofSeconds(60);

    private final LobStreamConfig config;
    private final String nodeId;
    private final Set<Thread> removing = ConcurrentHashMap.newKeySet();
    private volatile boolean closed;

    StaticMembers(LobStreamConfig config, String nodeId) {
        this.config = config;
        this.nodeId = nodeId;
    }

    /**
     * Stops the removals not yet done: a node that is closing keeps its members, so that a restart
     * within the session timeout gets its partitions back.
     */
    void close() {
        closed = true;
        removing.forEach(Thread::interrupt);
    }

    /**
     * Once {@code dying} (a stream thread Kafka Streams is replacing) has ended, removes its member from
     * the group, on a thread of its own. Only then: removed while the thread still runs, the member could
     * rejoin.
     */
    void removeWhenDead(Thread dying) {
        Matcher m = THREAD_INDEX.matcher(dying.getName());
        if (!m.find()) {
            log.warn("cannot tell the index of stream thread {}; its static member leaves the group after the session timeout",
                    dying.getName());
            return;
        }
        String instanceId = nodeId + "-" + m.group(1);
        Thread t = new Thread(() -> {
            try {
                dying.join(DEATH_WAIT.toMillis());
                if (dying.isAlive() || closed) {
                    log.warn("stream thread {} {}; its static member {} leaves the group after the session timeout", dying.getName(),
                            closed ? "ended as the node closes" : "has not ended within " + DEATH_WAIT.toSeconds() + " s", instanceId);
                    return;
                }
                if (Thread.getAllStackTraces().keySet().stream().anyMatch(other -> other != dying && other.getName().equals(dying.getName()))) {
                    return; // Kafka Streams gave its index to a thread started since, which joined under the same member id
                }
                String group = config.get(LobStreamConfig.APPLICATION_ID);
                try (Admin admin = Admin.create(config.clientConfig(AdminClientConfig.configNames()))) {
                    admin.removeMembersFromConsumerGroup(group,
                            new RemoveMembersFromConsumerGroupOptions(List.of(new MemberToRemove(instanceId)))).all().get(30, TimeUnit.SECONDS);
                }
                log.info("removed static member {} of the replaced stream thread from group {}: its partitions move now", instanceId, group);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (Exception e) {
                // UNKNOWN_MEMBER_ID: it had left already
                log.warn("could not remove static member {} of the replaced stream thread ({}); its partitions move after the session "
                        + "timeout", instanceId, e.toString());
            } finally {
                removing.remove(Thread.currentThread());
            }
        }, "lob-remove-member-" + instanceId);
        t.setDaemon(true);
        removing.add(t);
        if (closed) {
            return;
        }
        t.start();
    }
}
