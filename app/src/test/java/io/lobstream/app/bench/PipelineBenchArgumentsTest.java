package io.lobstream.app.bench;

import io.lobstream.app.cli.LobStreamCli;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

import java.io.PrintWriter;
import java.io.StringWriter;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code bench pipeline} refuses what it cannot measure before it starts a broker. */
class PipelineBenchArgumentsTest {
    private final StringWriter err = new StringWriter();

    private int bench(String... args) {
        CommandLine cli = LobStreamCli.commandLine();
        cli.setErr(new PrintWriter(err, true));
        String[] all = new String[args.length + 2];
        all[0] = "bench";
        all[1] = "pipeline";
        System.arraycopy(args, 0, all, 2, args.length);
        return cli.execute(all);
    }

    @Test
    void aValueOverTheChunkSizeIsAUsageError() {
        assertThat(bench("--blob-size", "2m")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(err.toString()).contains("over lob.chunk.size (524288 bytes)").contains("Usage: lobstream bench pipeline");
    }

    @Test
    void theChunkSizeItComparesWithIsTheOneConfigured() {
        assertThat(bench("--blob-size", "100k-300k", "-c", "lob.chunk.size=200000")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(err.toString()).contains("--blob-size 100k-300k is over lob.chunk.size (200000 bytes)");
    }

    @Test
    void aZeroDurationIsAUsageError() {
        assertThat(bench("--duration", "0s")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(err.toString()).contains("--duration >= 1s");
    }
}
