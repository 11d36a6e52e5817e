package io.lobstream.app.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.lobstream.app.DataDirs;
import io.lobstream.app.bench.SizeRange;
import io.lobstream.app.demo.LoadGenerator;
import io.lobstream.app.embedded.Cluster;
import io.lobstream.app.embedded.EmbeddedCluster;
import io.lobstream.app.embedded.ShellWords;
import io.lobstream.client.LobClient;
import io.lobstream.ingest.LobNode;
import io.lobstream.ingest.WriterStreamsSettings;
import io.lobstream.purge.PurgeWorkerPool;
import io.lobstream.schema.LobSerdes;
import io.lobstream.schema.LobStreamConfig;
import io.lobstream.store.LobStore;
import io.lobstream.store.LobStoreConfig;
import io.lobstream.store.StoreStats;
import io.lobstream.store.fsck.FsckReport;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.search.Search;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;

/**
 * {@code ./lobstream demo}: the whole pipeline on the embedded default, end to end: broker,
 * registry, a node, purge workers and a load generator; then drain purge, fsck, summarise.
 */
@Command(name = "demo", mixinStandardHelpOptions = true,
        description = {"Run the whole pipeline on the embedded default: a KRaft broker, an Apicurio Registry, a writer node, "
                + "purge workers and a load generator (PUT / update / DELETE over --ids ids, values --min-size..--max-size). "
                + "After --duration it waits for purge to drain, runs fsck and prints a summary.",
                "Exit status: 0 if at least one command was acknowledged, every one sent was acknowledged and applied, none "
                        + "dead-lettered, every partition's tablespace is open, fsck is clean and history drained; 1 otherwise "
                        + "(stderr says which). With --keep-running it ends at Ctrl-C (130), and stderr says how it went."})
final class DemoCommand implements Callable<Integer> {
    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Option(names = "--duration", defaultValue = "60s", description = "How long to generate load (default: ${DEFAULT-VALUE}).")
    Duration duration;

    @Option(names = "--json", description = "End with one JSON object on the last line of stdout.")
    boolean json;

    @Option(names = "--data-dir", converter = DataDir.class, description = "Data directory (default: a new temporary directory, deleted afterwards).")
    Path dataDir;

    @Option(names = {"--ids", "--rows"}, defaultValue = "1000", description = "Distinct LOB ids, as the benches' --rows (default: ${DEFAULT-VALUE}).")
    int ids;

    @Option(names = "--min-size", defaultValue = "10k", converter = SizeRange.BytesConverter.class,
            description = "Smallest value, in bytes or e.g. 10k, 1m (default: ${DEFAULT-VALUE}).")
    int minSize;

    @Option(names = "--max-size", defaultValue = "300k", converter = SizeRange.BytesConverter.class,
            description = "Largest value, in bytes or e.g. 300k, 1m (default: ${DEFAULT-VALUE}).")
    int maxSize;

    @Option(names = "--producers", defaultValue = "4", description = "Load generator threads (default: ${DEFAULT-VALUE}).")
    int producers;

    @Option(names = "--purge-workers", defaultValue = "2", description = "Purge workers (default: ${DEFAULT-VALUE}).")
    int purgeWorkers;

    @Option(names = "--partitions", description = "Partitions = tablespaces (default: lob.topic.partitions, 8 unless -c sets it).")
    Integer partitions;

    @Option(names = "--drain-timeout", defaultValue = "120s", description = "How long to wait for purge to drain (default: ${DEFAULT-VALUE}).")
    Duration drainTimeout;

    @Option(names = "--keep-running", description = "After the summary, keep the broker, registry and node running until Ctrl-C "
            + "(e.g. to replay --verify against them).")
    boolean keepRunning;

    @Option(names = {"-c", "--config"}, paramLabel = "KEY=VALUE", description = "Any configuration key (see ./lobstream config).")
    Map<String, String> config = new HashMap<>();

    /** What the load may write to the broker's log a second, with room for machines faster than two cores' 180 MB. */
    private static final long WRITTEN_PER_SECOND_AT_MOST = 300_000_000L;

    private final Progress progress = new Progress();
    /** The node's lob.commands, as its dead-letter counter names it. */
    private String commandsTopic;

    @Override
    public Integer call() throws Exception {
        Cluster.refuseOwnKeys(config);
        LobStreamConfig given = new LobStreamConfig(config); // an unknown key or a bad value: a usage error before anything starts
        WriterStreamsSettings.checkValues(given);
        LobSerdes.checkClasses(given);
        new LobStoreConfig(config);
        // the option wins over -c lob.topic.partitions, as every option over its key; not given, it leaves the key to -c
        int parts = partitions != null ? partitions : given.get(LobStreamConfig.PARTITIONS);
        String partitionsProblem = LobStreamConfig.PARTITIONS.problem(parts);
        if (partitionsProblem != null) { // now, not as a refused key once the broker has started
            throw new picocli.CommandLine.ParameterException(spec.commandLine(), "--partitions " + parts + ": " + partitionsProblem);
        }
        if (minSize < 0 || maxSize < minSize || ids < 1 || producers < 1 || purgeWorkers < 1 || duration.isNegative()
                || duration.isZero()) { // (--partitions: above)
            throw new picocli.CommandLine.ParameterException(spec.commandLine(), "need 0 <= --min-size <= --max-size, --ids >= 1, "
                    + "--producers >= 1, --purge-workers >= 1 (the demo drains history) and a positive --duration");
        }
        if (maxSize > given.get(LobStreamConfig.VALUE_MAX_BYTES)) { // the client refuses each such write: the run would count failures
            throw new picocli.CommandLine.ParameterException(spec.commandLine(), "--max-size " + maxSize + " is over lob.value.max.bytes ("
                    + given.get(LobStreamConfig.VALUE_MAX_BYTES) + "): the client would refuse writes that large");
        }
        boolean temporary = dataDir == null;
        Path dir = temporary ? Files.createTempDirectory("lobstream-demo-") : dataDir;
        long t0 = System.nanoTime();
        progress.say("starting the embedded broker and registry in " + dir);
        Files.createDirectories(dir); // a --data-dir that does not exist yet: the cluster would make it
        warnIfShortOfDisk(dir);
        ObjectNode summary;
        boolean ok;
        // Ctrl-C (how --keep-running ends) runs no finally block: the hook closes what started, newest first, then removes
        // a temporary directory; a signal during the cluster's start waits for it, not deleting the directory under a broker
        // (the grace: the cluster's start, up to 120 s for its registry, and the node's; the wait for the node to run is
        // not in it, a stop then closes at once)
        ShutdownHook shutdown = ShutdownHook.register("demo-shutdown", Duration.ofMinutes(4));
        if (temporary) {
            shutdown.started(() -> DataDirs.deleteTree(dir)); // closed last
        }
        try {
            EmbeddedCluster cluster = shutdown.started(EmbeddedCluster.start(dir, 0, 0, 0));
            LobStreamConfig cfg = cluster.nodeConfig(dir, parts, config);
            commandsTopic = cfg.topics().commands();
            LobStoreConfig storeCfg = new LobStoreConfig(config);
            shutdown.checkNotStopping();
            LobNode node = shutdown.started(new LobNode(cfg, storeCfg).start());
            // the purge workers close before the node (newest first): they read its tablespaces
            shutdown.checkNotStopping();
            PurgeWorkerPool purge = shutdown.started(PurgeWorkerPool.following(cfg, storeCfg, "demo", node.meters(),
                    () -> node.tablespaces().all().keySet(), purgeWorkers));
            shutdown.startEnded();
            node.awaitRunning(Duration.ofSeconds(120));
            progress.say(String.format("node running (HTTP :%d) after %.1f s, %d purge workers following its partitions; "
                    + "starting %d producers for %s", node.httpPort(), (System.nanoTime() - t0) / 1e9, purgeWorkers, producers,
                    Durations.format(duration)));
            MeterRegistry meters = node.meters();
            long acked;
            long failed;
            long loadNanos;
            // where the load's last acknowledged command of each partition is: all is applied once every tablespace
            // has applied up to there (the node's counters would count commands a reused --data-dir held from before)
            Map<Integer, Long> lastAcked = new ConcurrentHashMap<>();
            try (LobClient client = new LobClient(cfg)) {
                LoadGenerator load = new LoadGenerator(client, ids, minSize, maxSize, 0.1)
                        .onAck((where, sentNanos, bytes) -> lastAcked.merge(where.partition(), where.offset(), Math::max));
                long loadStart = System.nanoTime();
                load.start(producers);
                long end = loadStart + duration.toNanos();
                for (long now; (now = System.nanoTime()) < end; ) {
                    Thread.sleep(Math.max(1, Math.min(1000, (end - now) / 1_000_000)));
                    progress.line(line("load", load.acked(), node, meters));
                }
                load.close();
                loadNanos = System.nanoTime() - loadStart; // with the wait for the last acknowledgements: what commands/s divides by
                acked = load.acked();
                failed = load.failed();
                progress.say(String.format("load done: %d commands acknowledged (%d failed), %.1f MB", acked, load.failed(), load.bytes() / 1e6));
            }
            long deadline = System.nanoTime() + drainTimeout.toNanos();
            while (!behind(node, lastAcked).isEmpty() && System.nanoTime() < deadline) {
                Thread.sleep(200);
                progress.line(line("applying", acked, node, meters));
            }
            while (node.tablespaces().totals().historyLength() > 0 && System.nanoTime() < deadline) {
                Thread.sleep(200);
                progress.line(line("draining", acked, node, meters));
            }
            progress.line(line("drained", acked, node, meters));
            progress.end();
            purge.close();
            // compaction moves the last live versions into the holes the last reclaims left, and the
            // commits after it cut the freed tails: space is read (and fsck run) once that is over
            StoreStats st = node.tablespaces().settledTotals(Duration.ofSeconds(2), Duration.ofSeconds(20));
            FsckReport fsck = node.tablespaces().fsckAll(true);
            fsck.problems().forEach(p -> System.err.println("fsck: " + p));
            summary = new ObjectMapper().createObjectNode();
            summary.put("duration_s", Math.round(loadNanos / 1e8) / 10.0);
            summary.put("commands_acknowledged", acked);
            summary.put("commands_applied", sum(meters.find("lob_commands_applied")));
            summary.put("commands_dead_lettered", deadLetteredCommands(meters));
            summary.put("versions_reclaimed", reclaimed(meters));
            summary.put("lobs_live", st.lobs());
            summary.put("history_length", st.historyLength());
            summary.put("pages_live", st.pagesLive());
            summary.put("pages_history", st.pagesHistory());
            summary.put("pages_free", st.pagesFree());
            summary.put("pages_uploading", st.pagesUploading());
            summary.put("bytes_live", st.bytesLive());
            summary.put("tablespace_bytes", st.tablespaceBytes());
            summary.put("space_ratio", st.bytesLive() == 0 ? 0 : Math.round(1000.0 * st.tablespaceBytes() / st.bytesLive()) / 1000.0);
            summary.put("fsck_ok", fsck.ok());
            summary.put("elapsed_s", Math.round((System.nanoTime() - t0) / 1e8) / 10.0);
            List<String> behind = behind(node, lastAcked);
            if (failed > 0) {
                System.err.printf("demo: %d commands failed to send%n", failed);
            }
            if (!behind.isEmpty()) {
                System.err.printf("demo: commands acknowledged and not applied within --drain-timeout: %s%n", String.join(", ", behind));
            }
            long deadLettered = deadLetteredCommands(meters);
            if (deadLettered > 0) { // the load's commands are all valid: each dead letter is a fault (a setting, a bug)
                System.err.printf("demo: %d commands were dead-lettered; %s holds each with its reason in its headers%n",
                        deadLettered, cfg.topics().deadLetters());
            }
            if (st.historyLength() > 0) {
                System.err.printf("demo: history %d not drained within --drain-timeout%n", st.historyLength());
            }
            // the totals and fsck above are of the tablespaces open: one whose task failed is in neither
            int open = node.tablespaces().all().size();
            if (open != node.partitions()) { // the topics', which a reused --data-dir's broker keeps whatever --partitions says
                System.err.printf("demo: %d of %d partitions have their tablespace open; the others were not counted or "
                        + "checked (the node's log says why)%n", open, node.partitions());
            }
            if (acked == 0) {
                System.err.println("demo: no command was acknowledged");
            }
            ok = fsck.ok() && st.historyLength() == 0 && failed == 0 && behind.isEmpty() && deadLettered == 0
                    && open == node.partitions() && acked > 0;
            if (keepRunning) {
                printSummary(summary);
                // with the demo's own -c keys: another topic prefix, or another judging setting, and the replay would
                // find no topics, or differences that are only the settings'
                // (a secret's value shown as ***, as in every message that quotes arguments: the user types it back)
                // each pair alone: a pair with an empty value would have the next one masked as its value
                String keys = config.entrySet().stream().sorted(Map.Entry.comparingByKey())
                        .map(e -> SecretArguments.masked(List.of(e.getKey() + "=" + e.getValue())).get(0))
                        .map(kv -> " -c " + ShellWords.quote(kv)).collect(java.util.stream.Collectors.joining());
                System.err.printf("demo done%s; the broker, registry and node keep running (Ctrl-C to stop), not the purge "
                                + "workers: what you write now stays in history. Try:%n"
                                + "  ./lobstream replay --bootstrap %s --registry %s --node http://127.0.0.1:%d --partition 0 "
                                + "--data-dir REPLAY_DIR --verify%s%n", ok ? "" : " (and it FAILED: see above)", cluster.bootstrap(),
                        cluster.registryUrl(), node.httpPort(), keys);
                Thread.sleep(Long.MAX_VALUE);
            }
        } finally {
            shutdown.startEnded();
            shutdown.close(); // what started, and a temporary directory; the hook taken back
        }
        printSummary(summary);
        return ok ? 0 : 1;
    }

    /**
     * The partitions whose tablespace has not applied up to the last command the load had acknowledged there, each with
     * how far it is: none once the load is applied (a dead-lettered command counts, as the writer records it as applied).
     */
    private List<String> behind(LobNode node, Map<Integer, Long> lastAcked) {
        List<String> behind = new ArrayList<>();
        new TreeMap<>(lastAcked).forEach((partition, last) -> {
            String source = commandsTopic + "-" + partition;
            String at;
            try {
                Optional<LobStore> store = node.tablespaces().get(partition);
                long applied = store.isPresent() ? store.get().appliedOffset(source) : Long.MIN_VALUE;
                at = applied >= last ? null : store.isPresent() ? "at offset " + applied : "not open";
            } catch (IOException | RuntimeException e) { // closed as it was asked (a task moving): asked again at the next look
                at = "not open (" + e.getMessage() + ")";
            }
            if (at != null) {
                behind.add("partition " + partition + " " + at + " of " + last);
            }
        });
        return behind;
    }

    /** Commands dead-lettered: not the reclaims the writer dead-lettered too. */
    private long deadLetteredCommands(MeterRegistry meters) {
        return sum(meters.find("lob_commands_dead_lettered").tag("topic", commandsTopic));
    }

    private static long reclaimed(MeterRegistry meters) {
        return sum(meters.find("lob_reclaims").tag("outcome", "applied"));
    }

    /**
     * lob.commands keeps every command (the redo log replay reads from its beginning), and the load is not throttled: about
     * 180 MB a second on two cores. A temporary directory on tmpfs, or a small root disk, fills; the broker then halts the
     * JVM, and the directory stays. Said before, with what to do.
     */
    private void warnIfShortOfDisk(Path dir) throws IOException {
        long need = duration.toSeconds() * WRITTEN_PER_SECOND_AT_MOST;
        long free = Files.getFileStore(dir).getUsableSpace();
        if (free < need) {
            progress.say(String.format(java.util.Locale.ROOT, "warning: %s has %.1f GB free, and the demo may write up to about "
                    + "%.1f GB of commands there in %d s: give a --data-dir on a larger disk, or a shorter --duration", dir,
                    free / 1e9, need / 1e9, duration.toSeconds()));
        }
    }

    /** The sum of the counters {@code search} finds. */
    private static long sum(Search search) {
        return (long) search.counters().stream().mapToDouble(Counter::count).sum();
    }

    private String line(String phase, long commands, LobNode node, MeterRegistry meters) {
        StoreStats st = node.tablespaces().totals();
        // under 80 columns: a terminal's live line that wraps is drawn again on a new row at each update
        return String.format("%-8s sent %6d applied %6d reclaimed %6d history %5d space %5.2f", phase, commands,
                sum(meters.find("lob_commands_applied")), reclaimed(meters), st.historyLength(),
                st.bytesLive() == 0 ? 0.0 : (double) st.tablespaceBytes() / st.bytesLive());
    }

    private void printSummary(ObjectNode s) throws IOException {
        if (json) {
            System.out.println(new ObjectMapper().writeValueAsString(s));
            return;
        }
        System.out.println("LobStream demo summary");
        s.properties().forEach(e -> System.out.printf("  %-24s %s%n", e.getKey(), e.getValue()));
    }

    /** A live progress line on a terminal; a line every 5 s otherwise. Always on stderr. */
    private static final class Progress {
        private final boolean tty = ProgressBar.stderrIsATerminal();
        private long lastPrinted;

        void line(String s) {
            if (tty) {
                System.err.print("\r" + s);
                System.err.flush();
            } else if (System.nanoTime() - lastPrinted > 5_000_000_000L) {
                System.err.println(s);
                lastPrinted = System.nanoTime();
            }
        }

        void end() {
            if (tty) {
                System.err.println();
            }
        }

        void say(String s) {
            System.err.println(s);
        }
    }
}
