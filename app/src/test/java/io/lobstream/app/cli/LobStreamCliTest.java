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
}
