package io.lobstream.app.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.MissingNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.lobstream.app.DataDirs;
import io.lobstream.ingest.http.LobHttpServer;
import io.lobstream.ingest.http.StreamedResponse;
import io.lobstream.ingest.replay.PartitionReplayer;
import io.lobstream.ingest.writer.JudgingSettings;
import io.lobstream.ingest.writer.TaskRetries;
import io.lobstream.schema.LobStreamConfig;
import io.lobstream.schema.LobStreamConfig.ClientKind;
import io.lobstream.store.LobReadHandle;
import io.lobstream.store.LobStore;
import io.lobstream.store.fsck.FsckReport;
import io.lobstream.store.index.VersionEntry;
import io.lobstream.store.tablespace.InUseFile;
import io.lobstream.store.tablespace.TablespaceDirs;
import org.apache.kafka.clients.admin.Admin;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.channels.FileLock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.DigestInputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import static java.nio.file.StandardOpenOption.CREATE;
import static java.nio.file.StandardOpenOption.WRITE;

/**
 * {@code ./lobstream replay --partition P --data-dir D [--verify]}: rebuilds one partition's
 * tablespace offline from {@code lob.commands}, the redo log, and with --verify compares every
 * live value with what the running node serves.
 */
@Command(name = "replay", mixinStandardHelpOptions = true,
        description = {"Rebuild one partition's tablespace in --data-dir from lob.commands (from the beginning), applying every "
                + "command as the writer does; then fsck it. With --verify, compare the sha256 of every live value with the "
                + "running node's (--node) and report differences.",
                "Exit status: 0 if fsck is clean and (with --verify) nothing differs; 1 otherwise, or on a failure (the "
                        + "copy, fsck clean, is kept all the same when only --verify failed); 2 for a bad argument."})
final class ReplayCommand implements Callable<Integer> {
    /** How long, waits added up, values the node answers 503 for without a Retry-After are asked again: a rebalance's length. */
    private static final Duration REBALANCE_WAIT = Duration.ofSeconds(60);

    @Mixin
    ClusterOptions cluster;

    @Option(names = "--partition", required = true, description = "The partition to replay.")
    int partition;

    @Option(names = "--data-dir", converter = DataDir.class, required = true, description = "The data directory to build the tablespace in, as D/tablespaces/p-N (which must not exist), and on which no node runs.")
    Path dataDir;

    @Option(names = "--verify", description = "Compare every live value with the node's.")
    boolean verify;

    @Option(names = "--node", paramLabel = "URL", converter = NodeUrl.class, description = "A node's HTTP API, for --verify (" + NodeUrl.DEFAULT_DOC + ").")
    String node;

    @Option(names = "--json", description = "End with one JSON object on the last line of stdout.")
    boolean json;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        if (partition < 0) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--partition must be >= 0");
        }
        Path dir = TablespaceDirs.partitionDir(dataDir, partition);
        refuseExisting(dir);
        LobStreamConfig cfg = cluster.streamConfig(dataDir.toString()); // first: a misspelt -c key is a usage error, whatever else fails
        if (verify) {
            node = NodeUrl.resolve(node, cluster.config, spec.commandLine()); // (the node matters to --verify alone)
        }
        refuseRunningNode();
        if (verify) {
            requireNode(); // now, not after a replay of hours whose copy a second run could not verify again
        }
        BrokerCheck.requireAnswer(cfg, BrokerCheck.WAIT, cfg.topics().commands()); // a topic not there: named
        int partitions = partitionCount(cfg);
        if (partition >= partitions) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--partition " + partition + ": " + cfg.topics().commands()
                    + " has " + partitions + " partitions (0.." + (partitions - 1) + ")");
        }
        ObjectNode out = new ObjectMapper().createObjectNode().put("partition", partition);
        Files.createDirectories(dir.getParent());
        boolean ok;
        try (FileChannel lockFile = FileChannel.open(TablespaceDirs.replayLock(dir), CREATE, WRITE);
             FileLock lock = DataDirs.tryLock(lockFile)) {
            if (lock == null) { // not a bad argument: the same command runs once that replay ends
                throw new IllegalStateException("another replay of partition " + partition + " is building into " + dataDir + " now");
            }
            refuseExisting(dir); // a replay that ran while this one waited for the broker
            ok = replayInto(cfg, TablespaceDirs.replayStaging(dir), dir, out);
        }
        if (json) {
            spec.commandLine().getOut().println(out);
        }
        return ok ? 0 : 1;
    }

    private void refuseExisting(Path dir) {
        if (Files.exists(dir)) {
            // never "remove it": it may be a running node's
            throw new CommandLine.ParameterException(spec.commandLine(), dir + " exists: replay builds a new tablespace and "
                    + "never replaces one (this may be a node's): choose another --data-dir");
        }
    }

    /**
     * Refuses a data directory a node runs on. The node's tasks open their p-N in place: a partition that came to it while
     * the replay ran would have its copy made at the p-N the replay moves its own to at the end, and the move would fail
     * after hours of replay. A running node rewrites node.in-use every few seconds; one younger than a minute is watched
     * for two writes' time (a node stopped just now: waited for, then replayed into). A node that has written no file yet
     * is not seen (see {@link InUseFile#nodeRunning}).
     */
    private void refuseRunningNode() throws IOException, InterruptedException {
        if (InUseFile.nodeRunning(dataDir, InUseFile.WRITTEN_EVERY.multipliedBy(2))) {
            // not a bad argument, as another replay's lock: the same command runs once that node has stopped
            throw new IllegalStateException("a node runs on " + dataDir + " (it rewrites " + dataDir.resolve("tablespaces")
                    .resolve(InUseFile.NAME) + "): replay builds into a data directory of its own; choose another --data-dir, "
                    + "or stop that node first");
        }
    }

    /** Fails with the reason if no node answers at --node (NodeUrl refused what is no HTTP URL, with usage). */
    private void requireNode() throws IOException, InterruptedException {
        new NodeHttp(node).getText("/status");
    }

    /**
     * Builds the tablespace in {@code staging} and moves it to {@code dir} once it is replayed and
     * checked. A replay stopped half way (Ctrl-C ends the JVM without running this method's
     * clean-up; a kill, the same) leaves only {@code staging}, which no node or fsck takes for a
     * tablespace and which the next replay removes: the caller holds the lock file, which the
     * OS lets go of when a process ends however it ends, so no other replay is writing there.
     */
    private boolean replayInto(LobStreamConfig cfg, Path staging, Path dir, ObjectNode out) throws Exception {
        if (Files.exists(staging)) {
            err().println("removing " + staging + ", left by a replay that was stopped");
            DataDirs.deleteTree(staging);
        }
        boolean ok;
        boolean done = false;
        try (LobStore store = LobStore.open(staging, cluster.storeConfig(), null, "replay-p" + partition)) {
            long t0 = System.nanoTime();
            PartitionReplayer.Result r = new PartitionReplayer(cfg).replay(partition, store);
            out.put("records", r.records()).put("applied", r.applied()).put("rejected", r.rejected()).put("end_offset", r.endOffset())
                    .put("seconds", Math.round((System.nanoTime() - t0) / 1e7) / 100.0);
            FsckReport fsck = store.fsck(true);
            out.put("lobs", fsck.lobs()).put("fsck_ok", fsck.ok());
            err().printf("replayed partition %d: %d records, %d applied, %d rejected; %d LOBs; fsck %s%n", partition, r.records(),
                    r.applied(), r.rejected(), fsck.lobs(), fsck.ok() ? "clean" : "PROBLEMS " + fsck.problems());
            ok = fsck.ok();
            if (!ok) {
                ArrayNode problems = out.putArray("fsck_problems");
                fsck.problems().forEach(problems::add);
            }
            done = true;
            if (verify) {
                try {
                    ok &= verifyAgainstNode(store, cfg.topics().commands() + "-" + partition, JudgingSettings.of(cfg), out);
                } catch (IOException e) { // the node gone mid-comparison: the replay's own figures are still reported
                    out.put("verify_error", TaskRetries.messages(e));
                    err().println("replay: --verify could not finish: " + TaskRetries.messages(e) + (fsck.ok() ? "; the copy is kept "
                            + "at " + dir + " (fsck clean): a replay into another --data-dir compares again" : ""));
                    ok = false;
                }
            }
        } finally {
            if (done && !out.path("fsck_ok").asBoolean()) {
                // not a tablespace a node should open: kept aside for a look (each failed replay's copy: it may differ from
                // the one before), the next replay's place left free
                Path failed = dir.resolveSibling(dir.getFileName() + ".replay-failed-" + System.currentTimeMillis());
                Files.move(staging, failed, StandardCopyOption.ATOMIC_MOVE);
                TablespaceDirs.syncDirectory(dir.getParent());
                out.put("kept_at", failed.toString());
                err().println("fsck found problems in the replayed copy: kept at " + failed + ", not at " + dir);
            } else if (done) {
                // replayed and checked (whatever --verify finds or throws); the store is closed here, and its index holds no path
                Files.move(staging, dir, StandardCopyOption.ATOMIC_MOVE);
                TablespaceDirs.syncDirectory(dir.getParent()); // the move survives a power loss, as the exit status says
            } else {
                DataDirs.deleteTree(staging); // half a tablespace: removed, so the command can simply run again
            }
        }
        return ok;
    }

    /** Progress and findings: through picocli, so that whoever runs the command (a test too) reads them where it set. */
    private PrintWriter err() {
        return spec.commandLine().getErr();
    }

    /** Partitions of lob.commands; fails with the reason when the cluster or the topic cannot be reached. */
    private static int partitionCount(LobStreamConfig cfg) throws Exception {
        try (Admin admin = Admin.create(cfg.clientConfig(ClientKind.ADMIN))) {
            String topic = cfg.topics().commands();
            return admin.describeTopics(List.of(topic)).allTopicNames().get(30, TimeUnit.SECONDS).get(topic).partitions().size();
        } catch (ExecutionException e) {
            throw new IOException("cannot describe the commands topic on " + cfg.bootstrap() + ": " + TaskRetries.messages(e.getCause()), e);
        } catch (TimeoutException e) {
            throw new IOException("cannot describe the commands topic on " + cfg.bootstrap() + ": no answer within 30 s", e);
        }
    }

    private boolean verifyAgainstNode(LobStore store, String source, JudgingSettings settings, ObjectNode out) throws Exception {
        NodeHttp http = new NodeHttp(node);
        List<VersionEntry> live = new ArrayList<>();
        store.forEachCurrent(live::add);
        ArrayNode differences = out.putArray("differences");
        JsonNode before = partitionStatus(http);
        String owner = null; // host:port of the node that served the partition, if --node forwarded the reads to it
        long[] waitLeftMs = {REBALANCE_WAIT.toMillis()};
        if (before.isMissingNode() && !live.isEmpty()) {
            // --node forwards the partition's reads: the offset the comparison begins at is the owner's, or a lagging owner
            // that caught up by the end would pass its older values for differences
            try (StreamedResponse r = askWaitingOutRebalance(http, "HEAD", live.get(0).lobId(), waitLeftMs)) { // the owner's name alone
                owner = r.header(LobHttpServer.SERVED_BY).orElse(null);
            }
            if (owner != null) {
                try {
                    before = partitionStatus(new NodeHttp("http://" + owner));
                } catch (IOException unreachable) {
                    // not from here: said with the count at the end, where the owner is asked again
                }
            }
        }
        long nodeAppliedBefore = before.path("applied_offset").asLong(-1); // -1: not known (an owner not reachable, or checked)
        long lastSaid = System.nanoTime();
        int compared = 0;
        for (VersionEntry e : live) {
            if (System.nanoTime() - lastSaid > 5_000_000_000L) { // a GET per value: a large partition takes long
                lastSaid = System.nanoTime();
                err().printf("verified %d of %d values%n", compared, live.size());
                err().flush();
            }
            compared++;
            String mine;
            try (LobReadHandle h = store.open(e.lobId()).orElseThrow(); InputStream in = h.stream(0, h.length())) {
                mine = sha256(in, h.length());
            }
            mine += attributes(e.attributes().contentType(), e.attributes().metadata());
            String theirs;
            try (StreamedResponse r = askWaitingOutRebalance(http, "GET", e.lobId(), waitLeftMs)) {
                theirs = r.statusCode() == 200 ? nodeSha256(r) + attributes(r) : "HTTP " + r.statusCode() + ": " + errorText(r);
                owner = r.header(LobHttpServer.SERVED_BY).orElse(owner);
            }
            if (!mine.equals(theirs)) {
                // "sha256 content-type {metadata}" on each side
                differences.addObject().put("lob_id", e.lobId()).put("replayed", mine).put("node", theirs);
                err().printf("DIFFERS %s: replayed %s, node %s%n", e.lobId(), mine, theirs);
            }
        }
        // the node's count: a value the node has and the replay has not is found only so
        JsonNode status = partitionStatus(http);
        String ownerUnreachable = null;
        if (status.isMissingNode() && owner != null) {
            try {
                // at the owner's advertised host and port, over plain HTTP, as the nodes forward to each other
                status = partitionStatus(new NodeHttp("http://" + owner));
            } catch (IOException unreachable) {
                // not from here (an advertised name only the nodes resolve): the count and settings go uncompared, and the
                // report is printed all the same, not lost with an exit after the whole comparison
                ownerUnreachable = unreachable.getMessage();
            }
        }
        long nodeLobs = status.path("lobs_live").asLong(-1);
        long nodeApplied = status.path("applied_offset").asLong(-1);
        long replayApplied = store.appliedOffset(source);
        out.put("verified", live.size()).put("node_lobs", nodeLobs).put("replay_applied_offset", replayApplied)
                .put("node_applied_offset", nodeApplied);
        boolean movedMeanwhile = nodeAppliedBefore >= 0 && nodeAppliedBefore != nodeApplied;
        if (nodeApplied >= 0 && (nodeApplied != replayApplied || movedMeanwhile)) {
            // writes since the replay's end, or during the comparison: a difference may be one of them, and a missing one
            // may hide (a LOB deleted while compared)
            String why = "the node applied partition " + partition + " up to offset " + nodeApplied
                    + (movedMeanwhile ? " (" + nodeAppliedBefore + " when the comparison began)" : "")
                    + ", the replay up to " + replayApplied + ": verify again while no command comes to the partition";
            differences.addObject().put("applied_offset", why);
            err().println("NOT COMPARABLE " + why);
        }
        boolean checkedAtEnd = status.path("checking").asBoolean(false);
        if (checkedAtEnd || before.path("checking").asBoolean(false)) {
            String why = "the node's partition " + partition + (checkedAtEnd
                    ? " stayed under an fsck: its applied offset and settings were not compared"
                    : " was under an fsck when the comparison began: whether it applied commands during it is not known")
                    + "; verify again once the check ends";
            differences.addObject().put("checking", why);
            err().println("NOT COMPARABLE " + why);
        }
        String unreadable = status.path("error").asText(null);
        if (unreadable != null) {
            String why = "the node could not read its partition " + partition + "'s index (" + unreadable + "): its applied "
                    + "offset and settings were not compared";
            differences.addObject().put("error", why);
            err().println("NOT COMPARABLE " + why);
        }
        if (checkedAtEnd || unreadable != null) {
            out.putArray("notes");
        } else {
            // judged by other settings than the node's copy, the replay may differ from it for that reason alone
            compareSettings(settings, status, differences, out.putArray("notes"));
        }
        String ownerSaid = owner == null ? "" : ownerUnreachable == null ? " and neither does " + owner
                : "; its owner, " + owner + ", does not answer from here (" + ownerUnreachable + ")";
        String countDiffers = nodeLobs < 0 ? "replayed " + live.size() + ", not compared: " + node + " does not hold partition "
                + partition + ownerSaid + "; name the node that does with --node"
                : nodeLobs != live.size() ? "replayed " + live.size() + ", node " + nodeLobs : null;
        if (countDiffers != null) {
            differences.addObject().put("lob_count", countDiffers);
            err().println("DIFFERS the count of live LOBs: " + countDiffers);
        }
        err().printf("verified %d values against %s: %d differences%n", live.size(), node, differences.size());
        out.put("verify_ok", differences.isEmpty());
        return differences.isEmpty();
    }

    /**
     * Judged by other settings than those the node's copy was judged by ({@code judged_by} in its /status), the replay may
     * differ from it for that reason alone: a difference. Settings the copy did not record, or changed at some offset (it
     * judged the commands before by other values, as no replay does), are noted, as what was not compared.
     */
    private void compareSettings(JudgingSettings settings, JsonNode status, ArrayNode differences, ArrayNode notes) {
        if (status.isMissingNode()) {
            return; // the node does not hold the partition: the count differs, and says so
        }
        settings.byKey().forEach((key, value) -> {
            JsonNode theirs = status.path("judged_by").path(key);
            JsonNode since = status.path("judged_by_since_offset").path(key);
            String note = null;
            if (!theirs.isNumber()) {
                note = key + " not compared: the node's copy recorded none (an older node or copy, with no command applied since)";
            } else if (theirs.asLong() != value) {
                String why = key + " is " + value + " here and was " + theirs.asLong() + " for the node's copy: give replay the node's "
                        + "value with -c " + key + "=" + theirs.asLong();
                differences.addObject().put("setting", why);
                err().println("NOT COMPARABLE " + why);
            } else if (since.isNumber()) {
                note = key + " changed on the node's copy at offset " + since.asLong() + ": it judged the commands before by another "
                        + "value, so a difference around that offset may come from the change";
            }
            if (note != null) {
                notes.add(note);
                err().println("NOTE " + note);
            }
        });
    }

    /**
     * A value's content type and metadata, as text to compare beside its sha256. Keys in lower case and
     * values stripped: HTTP may change the case of a header's name, and drops the spaces around its value.
     */
    private static String attributes(String contentType, Map<String, String> metadata) {
        Map<String, String> meta = new TreeMap<>();
        metadata.forEach((k, v) -> meta.put(k.toLowerCase(Locale.ROOT), v.strip()));
        return " " + (contentType == null ? "application/octet-stream" : contentType.strip()) + (meta.isEmpty() ? "" : " " + meta);
    }

    private static String attributes(StreamedResponse r) {
        Map<String, String> meta = new TreeMap<>();
        for (String name : r.headerNames()) {
            if (name.regionMatches(true, 0, LobHttpServer.META, 0, LobHttpServer.META.length())) {
                meta.put(name.substring(LobHttpServer.META.length()), r.header(name).orElse(""));
            }
        }
        return attributes(r.header("Content-Type").orElse(null), meta);
    }

    /**
     * The node's {@code /status} entry of the partition, missing if it does not hold it; asked again each second, for up to
     * {@link #REBALANCE_WAIT}, while an fsck of it leaves out its applied offset and settings ({@code "checking": true}).
     */
    private JsonNode partitionStatus(NodeHttp http) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + REBALANCE_WAIT.toNanos();
        while (true) {
            JsonNode found = MissingNode.getInstance();
            for (JsonNode p : new ObjectMapper().readTree(http.getText("/status")).path("partitions")) {
                if (p.path("partition").asInt(-1) == partition) {
                    found = p;
                }
            }
            if (!found.path("checking").asBoolean(false) || System.nanoTime() - deadline >= 0) {
                return found;
            }
            Thread.sleep(1000);
        }
    }

    /**
     * A 503 without a Retry-After (partitions being assigned, the partition moving or opening, caught up or waiting after a
     * failure on its owner) asked again each second
     * while {@code waitLeftMs[0]}, shared by the whole comparison, lasts: a rebalance during it is not a difference, a
     * partition that stays away is (one with a Retry-After, {@link NodeHttp#ask} waits out itself).
     */
    private static StreamedResponse askWaitingOutRebalance(NodeHttp http, String method, String lobId, long[] waitLeftMs)
            throws IOException, InterruptedException {
        while (true) {
            StreamedResponse r = http.ask(method, lobId, null);
            if (r.statusCode() != 503 || r.header("Retry-After").isPresent() || waitLeftMs[0] <= 0) {
                return r;
            }
            r.close();
            Thread.sleep(1000);
            waitLeftMs[0] -= 1000;
        }
    }

    /**
     * The sha256 of the node's value, or why there is none. A node whose read fails mid-value (a damaged page) can only close
     * the connection, and JDK 17's HttpURLConnection ends a body cut short of its Content-Length as if it were whole: hashed
     * as it came, damage on the node's disk would read as a value the replay made differently.
     */
    private static String nodeSha256(StreamedResponse r) {
        try {
            return sha256(r.body(), r.contentLength().orElse(-1));
        } catch (IOException e) {
            return "no value: " + e.getMessage();
        }
    }

    /** The start of an error answer's text: the node's reason (a damaged page names its tablespace and page). */
    private static String errorText(StreamedResponse r) throws IOException {
        return new String(r.body().readNBytes(500), StandardCharsets.UTF_8).strip();
    }

    /** The sha256 of {@code in}'s bytes, which must be {@code length} of them (-1: any number). */
    private static String sha256(InputStream in, long length) throws IOException {
        try {
            MessageDigest md = MessageDigest.getInstance("SHA-256");
            try (DigestInputStream d = new DigestInputStream(in, md)) {
                GetCommand.transfer(d, OutputStream.nullOutputStream(), length);
            }
            return HexFormat.of().formatHex(md.digest());
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
