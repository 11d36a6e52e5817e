package io.lobstream.app.cli;

import org.junit.jupiter.api.Test;
import picocli.CommandLine;

import java.io.PrintWriter;
import java.io.StringWriter;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code get} refuses a range it cannot send before it asks any node (none runs here). */
class GetCommandTest {
    private final StringWriter err = new StringWriter();

    private int get(String... args) {
        CommandLine cli = LobStreamCli.commandLine();
        cli.setErr(new PrintWriter(err, true));
        String[] all = new String[args.length + 1];
        all[0] = "get";
        System.arraycopy(args, 0, all, 1, args.length);
        return cli.execute(all);
    }

    @Test
    void aRangeThatEndsBeforeItStartsIsAUsageError() {
        assertThat(get("doc-1", "--range", "5-2")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(err.toString()).contains("--range 5-2: A must not be past B").contains("Usage: lobstream get");
    }

    @Test
    void aRangeThatIsNotOneRangeIsAUsageError() {
        assertThat(get("doc-1", "--range", "0-1,5-9")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(err.toString()).contains("--range must be A-B, A- or -N (one range)");
    }

    @Test
    void digitsPastALongAreComparedAsNumbers() {
        assertThat(get("doc-1", "--range", "99999999999999999999-1")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(err.toString()).contains("A must not be past B");
    }
}
