package io.lobstream.app.cli;

import org.junit.jupiter.api.Test;
import picocli.CommandLine;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code get} refuses a range it cannot send before it asks any node (none runs here). */
class GetCommandTest {
    private final CliRun cli = new CliRun();

    private int get(String id, String... options) {
        String[] all = new String[options.length + 2];
        all[0] = "get";
        all[1] = id;
        System.arraycopy(options, 0, all, 2, options.length);
        return cli.run(all);
    }

    @Test
    void aRangeThatEndsBeforeItStartsIsAUsageError() {
        assertThat(get("doc-1", "--range", "5-2")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("--range 5-2: A must not be past B").contains("Usage: lobstream get");
    }

    @Test
    void aRangeThatIsNotOneRangeIsAUsageError() {
        assertThat(get("doc-1", "--range", "0-1,5-9")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("--range must be A-B, A- or -N (one range)");
    }

    @Test
    void digitsPastALongAreComparedAsNumbers() {
        assertThat(get("doc-1", "--range", "99999999999999999999-1")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("A must not be past B");
    }
}
