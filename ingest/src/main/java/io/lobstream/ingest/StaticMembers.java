package io.lobstream.ingest;

import io.lobstream.schema.LobStreamConfig;
import io.lobstream.schema.LobStreamConfig.ClientKind;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.MemberToRemove;
import org.apache.kafka.clients.admin.RemoveMembersFromConsumerGroupOptions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Takes static members the node no longer runs out of the writer group. Kafka Streams replaces a
 * failed thread with one of a new index, so a new {@code group.instance.id}
 * ({@code <lob.node.id>-<index>}), and a static member does not leave the group when its consumer
 * closes: the dead thread's partitions stayed assigned to it, unprocessed, for the whole session
 * timeout ({@code lob.writer.session.timeout.ms}, 45 s). The same after a restart: the node numbers
 * its threads from 1 again, and the member of a replacement thread ({@code <id>-3} of a two-thread
 * node) would never come back. Removed as {@code kafka-consumer-groups --delete --members} would
 * ({@code Admin.removeMembersFromConsumerGroup}), their partitions move at once.
 */
final class StaticMembers {
    private static final Logger log = LoggerFactory.getLogger(StaticMembers.class);
    private static final Pattern THREAD_INDEX = Pattern.compile("-StreamThread-(\\d+)$");
    /** How long the dead thread may take to close its clients (its transaction is aborted first). */
    private static final Duration DEATH_WAIT = Duration.ofSeconds(60);

    private final LobStreamConfig config;
    private final String nodeId;
    private final Supplier<Set<String>> runningThreads;
    private final Set<Thread> removing = ConcurrentHashMap.newKeySet();
    /** The members of replaced threads whose end a removal is waiting for, with those threads. */
    private final Map<String, Thread> awaitingDeath = new ConcurrentHashMap<>();
    private volatile boolean closed;

    /**
     * @param runningThreads the names of the node's stream threads not dead (Kafka Streams gives a dead one's index to the
     *                       next, so a name may come back on another thread)
     */
    StaticMembers(LobStreamConfig config, String nodeId, Supplier<Set<String>> runningThreads) {
        this.config = config;
        this.nodeId = nodeId;
        this.runningThreads = runningThreads;
    }

    /**
     * Stops the removals not yet asked for: a node that is closing keeps its members, so that a
     * restart within the session timeout gets its partitions back. (One already sent to the group
     * coordinator goes through.) A node that leaves the group ({@code leaving}, scale-in) removes now
     * the members of replaced threads whose end it was waiting for: Kafka Streams' leave takes out
     * only the members of the threads it runs, and these would hold their partitions for the
     * session timeout.
     */
    void close(boolean leaving) {
        closed = true;
        removing.forEach(Thread::interrupt);
        // not a member whose dying thread has ended and whose index a thread started since runs under: that thread is the
        // member now, and leaves with the node (while the dying thread lives, no other thread is given its index)
        Set<String> running = runningThreads.get();
        List<String> dead = awaitingDeath.entrySet().stream()
                .filter(e -> e.getValue().isAlive() || !running.contains(e.getValue().getName())).map(Map.Entry::getKey).toList();
        if (leaving && !dead.isEmpty()) {
            try {
                removeNow(dead, "of replaced stream threads, as the node leaves the group");
            } catch (java.util.concurrent.ExecutionException e) {
                if (!(e.getCause() instanceof org.apache.kafka.common.errors.UnknownMemberIdException)) { // else gone already
                    log.warn("could not remove static members {} of replaced stream threads ({}); they leave after the session "
                            + "timeout", dead, e.getCause().toString());
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt(); // the rest of the close sees it
            } catch (Exception e) {
                log.warn("could not remove static members {} of replaced stream threads ({}); they leave after the session timeout",
                        dead, e.toString());
            }
        }
    }

    /**
     * At start, with {@code threads} stream threads: removes this node's members of a higher index,
     * left by threads that replaced failed ones before the node last stopped.
     */
    void removeLeftOver(int threads) {
        inBackground("lob-remove-left-members", () -> {
            String group = config.get(LobStreamConfig.APPLICATION_ID);
            List<String> stale;
            try (Admin admin = admin()) {
                stale = admin.describeConsumerGroups(List.of(group)).describedGroups().get(group).get(30, TimeUnit.SECONDS)
                        .members().stream().map(MemberDescription::groupInstanceId).flatMap(java.util.Optional::stream)
                        .filter(id -> id.startsWith(nodeId + "-") && index(id.substring(nodeId.length() + 1)) > threads).toList();
            }
            for (String id : stale) {
                remove(id, "left by a stream thread that replaced a failed one before the node stopped, or a thread of "
                        + "another process running with this lob.node.id now (two nodes must not share one)");
            }
        });
    }

    /**
     * Once {@code dying} (a stream thread Kafka Streams is replacing) has ended, removes its member from
     * the group, on a thread of its own. Only then, and only while no thread runs under its name:
     * removed while a thread runs as that member, the member would have to rejoin.
     */
    void removeWhenDead(Thread dying) {
        Matcher m = THREAD_INDEX.matcher(dying.getName());
        if (!m.find()) {
            log.warn("cannot tell the index of stream thread {}; its static member leaves the group after the session timeout",
                    dying.getName());
            return;
        }
        String instanceId = nodeId + "-" + m.group(1);
        awaitingDeath.put(instanceId, dying);
        inBackground("lob-remove-member-" + instanceId, () -> {
            try {
                dying.join(DEATH_WAIT.toMillis());
                if (dying.isAlive()) {
                    log.warn("stream thread {} has not ended within {} s; its static member {} leaves the group after the session "
                            + "timeout", dying.getName(), DEATH_WAIT.toSeconds(), instanceId);
                } else if (!runningThreads.get().contains(dying.getName())) {
                    remove(instanceId, "of the replaced stream thread");
                } // else Kafka Streams gave its index to a thread started since, which joins under the same member id
            } finally {
                if (!closed) {
                    awaitingDeath.remove(instanceId); // closing: close() decides, whatever this thread got to
                }
            }
        });
    }

    private interface Removal {
        void run() throws Exception;
    }

    private void inBackground(String name, Removal removal) {
        Thread t = new Thread(() -> {
            try {
                if (!closed) {
                    removal.run();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (java.util.concurrent.ExecutionException e) {
                if (!(e.getCause() instanceof org.apache.kafka.common.errors.GroupIdNotFoundException)) { // the first start: no group
                    log.warn("could not look for or remove static members of this node in the writer group ({}); they leave after "
                            + "the session timeout", e.getCause().toString());
                }
            } catch (Exception e) {
                log.warn("could not look for or remove static members of this node in the writer group ({}); they leave after the "
                        + "session timeout", e.toString());
            } finally {
                removing.remove(Thread.currentThread());
            }
        }, name);
        t.setDaemon(true);
        removing.add(t);
        t.start();
    }

    private void remove(String instanceId, String what) throws Exception {
        if (!closed) {
            removeNow(List.of(instanceId), what);
        }
    }

    private void removeNow(List<String> instanceIds, String what) throws Exception {
        String group = config.get(LobStreamConfig.APPLICATION_ID);
        try (Admin admin = admin()) {
            // the request's own timeout, not only the wait's: the admin's close waits for a request still pending
            admin.removeMembersFromConsumerGroup(group, new RemoveMembersFromConsumerGroupOptions(
                    instanceIds.stream().map(MemberToRemove::new).toList()).timeoutMs(30_000)).all().get(35, TimeUnit.SECONDS);
        }
        log.info("removed static members {} ({}) from group {}: their partitions move now", instanceIds, what, group);
    }

    private Admin admin() {
        return Admin.create(config.clientConfig(ClientKind.ADMIN));
    }

    private static int index(String suffix) {
        try {
            return Integer.parseInt(suffix);
        } catch (NumberFormatException e) {
            return -1; // another node's id that starts with this one's and a dash: not ours
        }
    }
}
