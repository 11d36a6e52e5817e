package io.lobstream.app.bench;

import io.lobstream.app.cli.CliRun;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code bench pipeline} refuses what it cannot measure before it starts a broker. */
class PipelineBenchArgumentsTest {
    private final CliRun cli = new CliRun();

    private int bench(String... args) {
        String[] all = new String[args.length + 2];
        all[0] = "bench";
        all[1] = "pipeline";
        System.arraycopy(args, 0, all, 2, args.length);
        return cli.run(all);
    }

    @Test
    void aValueOverTheChunkSizeIsAUsageError() {
        assertThat(bench("--blob-size", "2m")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("over lob.chunk.size (524288 bytes)").contains("Usage: lobstream bench pipeline");
    }

    @Test
    void theChunkSizeItComparesWithIsTheOneConfigured() {
        assertThat(bench("--blob-size", "100k-300k", "-c", "lob.chunk.size=200000")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("--blob-size 100k-300k is over lob.chunk.size (200000 bytes)");
    }

    @Test
    void aZeroDurationIsAUsageError() {
        assertThat(bench("--duration", "0s")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("--duration >= 2s");
    }

    /** Accepted, these ran the raw and e2e phases for minutes, then failed, or gave a ratio of NaN printed as 0. */
    @Test
    void aZeroDrainTimeoutOrAnEmptyValueIsAUsageError() {
        assertThat(bench("--drain-timeout", "0s")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("--drain-timeout >= 1s");
        assertThat(bench("--blob-size", "0")).isEqualTo(CommandLine.ExitCode.USAGE); // (the same usage line: the exit code says it)
    }

    /** bench history drained for no time at all: it waited for nothing, then failed its check, exit 1. */
    @Test
    void benchHistoryRefusesNoDrainTimeAsAUsageError() {
        assertThat(cli.run("bench", "history", "--drain-timeout", "0s")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("--drain-timeout >= 1s").contains("Usage: lobstream bench history");
    }

    /** The key lost to --partitions' default without a word: 8 tablespaces were measured where 4 were asked. */
    @Test
    void partitionsNotGivenAreTheConfiguredOnes() {
        BenchOptions options = new BenchOptions();
        assertThat(options.partitions(null, null)).isEqualTo(8);
        options.config.put("lob.topic.partitions", "4");
        assertThat(options.partitions(null, null)).isEqualTo(4);
        assertThat(options.partitions(null, 2)).isEqualTo(2); // the option wins, as in the demo
    }

    /** A key that sets what a bench's own option sets (which sets it always) was dropped without a word. */
    @Test
    void aKeyThatAnOptionSetsIsAUsageError() {
        assertThat(cli.run("bench", "engine", "-c", "lob.page.size=8192")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("-c lob.page.size is not taken: this bench sets it with --page-size");
        assertThat(cli.run("bench", "purge", "-c", "lob.purge.prefetch=false")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("-c lob.purge.prefetch is not taken: this bench sets it with --prefetch");
    }

    /** The engine bench, without Kafka, ran as if a pipeline's key or a range of page sizes had not been given. */
    @Test
    void theEngineBenchRefusesWhatItWouldNotUse() {
        assertThat(cli.run("bench", "engine", "-c", "lob.writer.threads=8")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("-c lob.writer.threads is not taken: bench engine runs the engine alone");
        assertThat(cli.run("bench", "engine", "--page-size", "4k-64k")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("--page-size takes one size, not a range: 4k-64k");
        assertThat(cli.run("bench", "engine", "--page-size", "3k")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("--page-size 3k: a power of two from 4 KiB to 64 KiB").contains("Usage: lobstream bench engine");
        assertThat(cli.run("bench", "engine", "--switches", "all-on,matrix")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("--switches matrix runs every set: it is not combined with others");
    }

    /** An output that cannot be written was found after the run, and its JSON lost with it. */
    @Test
    void anOutputThatCannotBeWrittenIsAUsageErrorBeforeTheRun(@TempDir Path dir) throws Exception {
        assertThat(bench("--csv", dir.toString())).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("--csv " + dir + " is a directory");
        Files.writeString(dir.resolve("file"), "x");
        assertThat(bench("--chart", dir.resolve("file/c.png").toString())).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("is under a file, not a directory");
    }

    /**
     * bench purge on a kept run's --data-dir copied that run's undo records into its window (wrong figures, then a failed
     * check on the reclaims); bench engine began a killed run's set on its history. bench pipeline measures its own commands.
     */
    @Test
    void aDataDirHoldingAnotherRunsFilesIsAUsageErrorForTheBenchesOfFreshState(@TempDir Path dir) throws Exception {
        Files.createDirectories(dir.resolve("kept/kafka"));
        for (String bench : new String[]{"engine", "purge", "history"}) {
            assertThat(cli.run("bench", bench, "--data-dir", dir.resolve("kept").toString())).as(bench).isEqualTo(CommandLine.ExitCode.USAGE);
            assertThat(cli.err()).contains("--data-dir " + dir.resolve("kept") + " is not empty (it holds kafka)");
        }
    }
}
