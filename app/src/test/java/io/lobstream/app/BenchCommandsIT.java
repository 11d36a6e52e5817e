package io.lobstream.app;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.lobstream.app.cli.LobStreamCli;
import io.lobstream.app.embedded.EmbeddedRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The demo and the two benchmark commands that issues 4 and 5 ask to show, run as a user runs them
 * (the CLI in a JVM of its own, with its embedded broker, registry and node) but small and short:
 * they finish, exit 0 and end with the JSON keys the README and the issues name. Only that is
 * asserted, never a figure's size: a benchmark's figures belong to a quiet machine, not to CI.
 */
class BenchCommandsIT {
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path dir;

    @Test
    void benchPipelineEndsWithTheIssuesKeys() throws Exception {
        JsonNode j = run("pipeline", "bench", "pipeline", "--workload", "update", "--rows", "40", "--blob-size", "64k", "--producers", "2",
                "--duration", "2s", "--warmup", "2s", "--partitions", "2", "--purge-workers", "1", "--json",
                "--data-dir", dir.resolve("pipeline-data").toString());
        assertThat(j.fieldNames()).toIterable()
                .contains("tps", "mb_per_s", "p99_apply_ms", "raw_kafka_mb_per_s", "ratio_vs_raw_kafka", "kafka_e2e_mb_per_s", "ratio_vs_kafka_e2e",
                        "raw_kafka_measured_again");
        assertThat(j.get("tps").asDouble()).isPositive();
        assertThat(j.get("raw_kafka_mb_per_s").asDouble()).isPositive();
        // a raw figure on fresh memory (measured again or not: a 2 s warm-up rarely fills the page cache) makes no ratio
        assertThat(j.get("ratio_vs_raw_kafka").isNull()).isEqualTo(!j.get("raw_kafka_page_cache_full").asBoolean());
        if (!j.get("ratio_vs_raw_kafka").isNull()) {
            assertThat(j.get("ratio_vs_raw_kafka").asDouble()).isPositive();
        }
        assertThat(j.get("history_length_end").asLong()).isZero();
        assertThat(j.get("commands_dead_lettered").asLong()).isZero();
    }

    @Test
    void benchHistoryEndsWithTheIssuesKeys() throws Exception {
        JsonNode j = run("history", "bench", "history", "--rows", "40", "--blob-size", "64k", "--threads", "2", "--duration", "3s",
                "--warmup", "1s", "--partitions", "2", "--purge-workers", "1", "--json", "--data-dir", dir.resolve("history-data").toString());
        assertThat(j.fieldNames()).toIterable()
                .contains("updates_per_s", "history_p99_seconds", "drain_seconds", "space_ratio_end", "history_length_end");
        assertThat(j.get("updates_per_s").asDouble()).isPositive();
        assertThat(j.get("history_length_end").asLong()).isZero();
    }

    /** The README's first command, short: exit 0, fsck clean, history drained, and nothing left behind, directory or process. */
    @Test
    void theDemoEndsCleanAndLeavesNothingBehind() throws Exception {
        JsonNode j = run("demo", "demo", "--duration", "5s", "--ids", "50", "--max-size", "65536", "--producers", "2", "--partitions", "2",
                "--purge-workers", "1", "--json");
        assertThat(j.fieldNames()).toIterable().contains("commands_acknowledged", "commands_applied", "commands_dead_lettered",
                "versions_reclaimed", "lobs_live", "history_length", "pages_live", "pages_history", "pages_free", "bytes_live",
                "tablespace_bytes", "space_ratio", "fsck_ok", "duration_s", "elapsed_s");
        assertThat(j.get("fsck_ok").asBoolean()).isTrue();
        assertThat(j.get("history_length").asLong()).isZero();
        assertThat(j.get("commands_applied").asLong()).isPositive();
        assertThat(j.get("commands_dead_lettered").asLong()).isZero();
        Path tmp = dir.resolve("demo.tmp"); // the demo JVM's java.io.tmpdir, where its temporary data directory was
        try (var left = Files.list(tmp)) {
            assertThat(left.map(p -> p.getFileName().toString())).noneMatch(n -> n.startsWith("lobstream-demo-"));
        }
        java.util.regex.Matcher registry = java.util.regex.Pattern.compile("Apicurio Registry on http://127\\.0\\.0\\.1:(\\d+)")
                .matcher(Files.readString(dir.resolve("demo.err")));
        assertThat(registry.find()).as("the demo logs its registry's port").isTrue();
        String port = "-Dquarkus.http.port=" + registry.group(1);
        assertThat(ProcessHandle.allProcesses().map(h -> h.info().commandLine().orElse("")))
                .as("the registry stopped with the demo").noneMatch(c -> c.contains(port));
    }

    /** This JVM's classpath without the test classes, whose logback-test.xml would log to stdout, where the JSON goes. */
    private static String mainClasspath() {
        return Arrays.stream(System.getProperty("java.class.path").split(File.pathSeparator))
                .filter(e -> !Path.of(e).endsWith("test-classes"))
                .collect(Collectors.joining(File.pathSeparator));
    }

    /** Runs {@code lobstream ARGS} in a child JVM on {@link #mainClasspath()} and returns the JSON object on its last line of stdout. */
    private JsonNode run(String name, String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx1g",
                "-Djava.io.tmpdir=" + Files.createDirectories(dir.resolve(name + ".tmp"))));
        String registryHome = System.getProperty(EmbeddedRegistry.HOME_PROPERTY); // set by the build: where it unpacked the registry
        if (registryHome != null) {
            cmd.add("-D" + EmbeddedRegistry.HOME_PROPERTY + "=" + registryHome);
        }
        cmd.addAll(List.of("-cp", mainClasspath(), LobStreamCli.class.getName()));
        cmd.addAll(List.of(args));
        Path out = dir.resolve(name + ".out");
        Path err = dir.resolve(name + ".err");
        Process p = new ProcessBuilder(cmd).redirectOutput(out.toFile()).redirectError(err.toFile()).start();
        try {
            boolean exited = p.waitFor(6, TimeUnit.MINUTES);
            assertThat(exited).as("bench %s finished within 6 minutes; stderr:%n%s", name, Files.readString(err)).isTrue();
            assertThat(p.exitValue()).as("exit code of bench %s; stderr:%n%s", name, Files.readString(err)).isZero();
        } finally {
            p.descendants().forEach(ProcessHandle::destroyForcibly);
            p.destroyForcibly();
        }
        List<String> lines = Files.readAllLines(out);
        assertThat(lines).as("stdout of bench %s", name).isNotEmpty();
        return JSON.readTree(lines.get(lines.size() - 1));
    }
}
