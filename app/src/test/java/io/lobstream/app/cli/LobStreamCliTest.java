package io.lobstream.app.cli;

import org.junit.jupiter.api.Test;
import picocli.CommandLine;

import static org.assertj.core.api.Assertions.assertThat;

/** What {@code ./lobstream} says when it is not given what it needs. */
class LobStreamCliTest {
    private final CliRun cli = new CliRun();

    @Test
    void noCommandIsAUsageError() {
        assertThat(cli.run()).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("a command is required").contains("Usage: lobstream");
    }

    @Test
    void aMisspeltKeyIsAUsageErrorBeforeAnythingIsTried() {
        // no broker listens on port 1: the key is refused before anything connects
        assertThat(cli.run("delete", "doc", "--bootstrap", "127.0.0.1:1", "-c", "lob.writer.thread=4")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("lobstream delete: unknown configuration key lob.writer.thread (./lobstream config lists them)");
    }

    @Test
    void aMisspeltKeyStopsANodeOrADemoBeforeItStartsAnything() {
        assertThat(cli.run("node", "--bootstrap", "127.0.0.1:1", "-c", "lob.writer.thread=4")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("unknown configuration key lob.writer.thread");
        // no broker, registry or node is started for it: this returns at once
        assertThat(cli.run("demo", "-c", "lob.purge.prefetch.windw=4")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("unknown configuration key lob.purge.prefetch.windw");
    }

    @Test
    void anIdTheIndexCannotHoldIsAUsageError() {
        assertThat(cli.run("delete", "x".repeat(70_000), "--bootstrap", "127.0.0.1:1")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("the LOB id of 70000 bytes: at most 65535");
    }

    @Test
    void aValueAKeyDoesNotTakeIsAUsageError() {
        assertThat(cli.run("delete", "doc", "--bootstrap", "127.0.0.1:1", "-c", "lob.chunk.size=big")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("lobstream delete: ").contains("lob.chunk.size");
    }
}
