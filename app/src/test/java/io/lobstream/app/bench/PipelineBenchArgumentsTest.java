package io.lobstream.app.bench;

import io.lobstream.app.cli.CliRun;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

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
        assertThat(cli.err()).contains("--duration >= 1s");
    }
}
