package io.lobstream.app.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.lobstream.ingest.writer.PurgeLag;
import io.lobstream.ingest.writer.TaskRetries;
import io.lobstream.schema.LobStreamConfig;
import io.lobstream.schema.LobStreamConfig.ClientKind;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.io.PrintWriter;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/** {@code ./lobstream status}: partitions, history length, purge lag, space by state. */
@Command(name = "status", mixinStandardHelpOptions = true, description = "Show partitions, history length, purge lag and space by state.")
final class StatusCommand implements Callable<Integer> {
    private static final ObjectMapper JSON = new ObjectMapper();

    @Mixin
    ClusterOptions cluster;

    @Option(names = "--node", paramLabel = "URL", converter = NodeUrl.class, description = "A node's HTTP API (" + NodeUrl.DEFAULT_DOC + ").")
    String node;

    @Option(names = "--wait", paramLabel = "DURATION",
            description = "Wait up to this long for the node to be up and running: exit 1 if no node answers by then, 3 if one "
                    + "answers but is not running (its status is still printed).")
    Duration waitFor;

    @Option(names = "--json", description = "Print one JSON object.")
    boolean json;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        LobStreamConfig cfg = cluster.streamConfig(null); // a bad -c key or value: exit 2 before anything else
        node = NodeUrl.resolve(node, cluster.config, spec.commandLine());
        NodeHttp http = new NodeHttp(node);
        long deadline = System.nanoTime() + (waitFor == null ? 0 : waitFor.toNanos());
        ObjectNode status = null;
        while (true) {
            try {
                status = (ObjectNode) JSON.readTree(http.getText("/status", within(deadline)));
                if (waitFor == null || "RUNNING".equals(status.path("state").asText())) {
                    break;
                }
            } catch (java.io.IOException e) {
                if (System.nanoTime() - deadline > 0) {
                    if (status != null) {
                        break; // it answered before, not running: that answer, and exit 3
                    }
                    System.err.println("lobstream status: " + e.getMessage());
                    LobStreamCli.jsonError(spec.commandLine().getOut(), spec.commandLine(), e.getMessage(), 1);
                    return 1;
                }
            }
            if (System.nanoTime() - deadline > 0 && status != null) {
                break;
            }
            Thread.sleep(500);
        }
        addPurgeLag(status, cfg);
        PrintWriter out = spec.commandLine().getOut();
        if (json) {
            out.println(JSON.writeValueAsString(status));
        } else {
            print(status, out);
        }
        if (waitFor != null && !"RUNNING".equals(status.path("state").asText())) {
            // a writer stopping exits its node, which a supervisor may start again within the wait: hence waited out
            System.err.println("node at " + node + " not running after " + Durations.format(waitFor) + " (state "
                    + status.path("state").asText() + (stopping(status) ? ", as it last answered: it was stopping" : "") + ")");
            return 3;
        }
        return 0;
    }

    /** Kafka Streams' states a writer leaves only by its node's exit (and a start again). */
    private static boolean stopping(ObjectNode status) {
        return Set.of("PENDING_SHUTDOWN", "NOT_RUNNING", "PENDING_ERROR", "ERROR").contains(status.path("state").asText());
    }

    /**
     * How long one ask of {@code /status} waits: with {@code --wait}, about the wait left (a second at least; NodeHttp
     * waits twice this for a whole answer), so a node that hangs does not hold the command long past it.
     */
    private Duration within(long deadline) {
        if (waitFor == null) {
            return NodeHttp.TIMEOUT;
        }
        long left = Math.max(TimeUnit.SECONDS.toNanos(2), deadline - System.nanoTime());
        return Duration.ofNanos(Math.min(left / 2, NodeHttp.TIMEOUT.toNanos()));
    }

    /** Purge group lag per partition, as the node's {@code lob_purge_lag_records} reads it ({@link PurgeLag}). */
    private void addPurgeLag(ObjectNode status, LobStreamConfig cfg) {
        Map<String, Object> settings = cfg.clientConfig(ClientKind.ADMIN);
        settings.putIfAbsent(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 5000);
        settings.putIfAbsent(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 5000);
        try (Admin admin = Admin.create(settings)) {
            String topic = cfg.topics().undoHistory();
            int partitions = admin.describeTopics(List.of(topic)).allTopicNames().get(5, TimeUnit.SECONDS)
                    .get(topic).partitions().size();
            Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(cfg.get(LobStreamConfig.PURGE_GROUP))
                    .partitionsToOffsetAndMetadata().get(5, TimeUnit.SECONDS);
            Map<Integer, Long> lags = PurgeLag.read(admin, topic, partitions, committed, 5000);
            long total = 0;
            ObjectNode lag = status.putObject("purge_lag");
            for (int p = 0; p < partitions; p++) {
                Long l = lags.get(p);
                if (l != null) {
                    lag.put(Integer.toString(p), l);
                    total += l;
                }
            }
            status.put("purge_lag_total", total);
        } catch (Exception e) {
            // (the lag is the purge group's offsets, in Kafka: the node does not know them all)
            status.put("purge_lag_error", "cannot read the purge group's lag from Kafka at " + cfg.bootstrap() + " (give --bootstrap "
                    + "for another cluster): " + (e instanceof TimeoutException ? "no answer within 5 s" : TaskRetries.messages(e)));
        }
    }

    private static void print(JsonNode s, PrintWriter out) {
        out.printf("writer: %s%n", s.path("state").asText());
        JsonNode kafka = s.path("kafka");
        if (kafka.has("error")) { // the writer reads RUNNING through an outage: this says the cluster does not answer it
            out.printf("kafka: the node's last check of the cluster failed (%s); %s%n", kafka.path("error").asText(),
                    kafka.path("answered_s_ago").isNumber() ? "it last answered " + kafka.path("answered_s_ago").asLong() + " s ago"
                            : "it has not answered since the node started");
        }
        if (!s.path("catching_up").isEmpty()) {
            out.printf("catching up from lob.commands (their tasks start after): partitions %s%n", s.path("catching_up"));
            s.path("catching_up_remaining").properties().forEach(e ->
                    out.printf("  partition %s: %,d records left to replay%n", e.getKey(), e.getValue().asLong()));
        }
        for (JsonNode w : s.path("waiting_after_failure")) {
            out.printf("partition %s: its %s failed %d time(s) in a row; next try in %d s. Last: %s%n", w.path("partition").asText(),
                    w.path("stage").asText(), w.path("failures_in_a_row").asInt(), w.path("next_try_in_s").asLong(),
                    w.path("last_error").asText());
        }
        out.printf("%-5s %10s %14s %10s %10s %10s %10s %10s %10s%n", "part", "lobs", "bytes_live", "history", "purge_lag",
                "pg_live", "pg_history", "pg_free", "pg_upload");
        for (JsonNode p : s.path("partitions")) {
            String part = p.path("partition").asText();
            out.printf("%-5s %10d %14d %10d %10s %10d %10d %10d %10d%n", part, p.path("lobs_live").asLong(),
                    p.path("bytes_live").asLong(), p.path("history_length").asLong(),
                    s.path("purge_lag").path(part).asText("?"), p.path("pages_live").asLong(),
                    p.path("pages_history").asLong(), p.path("pages_free").asLong(), p.path("pages_uploading").asLong());
        }
        // the row sums this node's partitions; purge_lag_total is every partition's, other nodes' too
        long lag = 0;
        boolean lagKnown = true;
        for (JsonNode p : s.path("partitions")) {
            JsonNode l = s.path("purge_lag").path(p.path("partition").asText());
            lagKnown &= l.isNumber();
            lag += l.asLong();
        }
        JsonNode t = s.path("totals");
        out.printf("%-5s %10d %14d %10d %10s %10d %10d %10d %10d%n", "all", t.path("lobs_live").asLong(), t.path("bytes_live").asLong(),
                t.path("history_length").asLong(), lagKnown ? Long.toString(lag) : "?", t.path("pages_live").asLong(),
                t.path("pages_history").asLong(), t.path("pages_free").asLong(), t.path("pages_uploading").asLong());
        if (s.path("purge_lag_total").isNumber() && s.path("purge_lag_total").asLong() != lag) {
            out.println("purge lag of every partition, other nodes' too: " + s.path("purge_lag_total").asLong());
        }
        if (s.has("purge_lag_error")) {
            out.println(s.path("purge_lag_error").asText());
        }
        for (JsonNode p : s.path("partitions")) { // a copy rebuilt without commands that retention had deleted: fsck says it too
            if (p.has("incomplete")) {
                out.printf("partition %s is incomplete: %s%n", p.path("partition").asText(), p.path("incomplete").asText());
            }
        }
    }
}
