package io.lobstream.app.cli;

import io.lobstream.app.embedded.EmbeddedKafka;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/** The commands that talk to Kafka say so at once, in one line, when no broker answers. */
class BrokerCheckTest {
    private final CliRun cli = new CliRun();
    private final String nobody;

    BrokerCheckTest() throws Exception {
        nobody = "127.0.0.1:" + EmbeddedKafka.freePort(); // free: nothing listens there
    }

    private int run(String... args) {
        return cli.run(args);
    }

    @Test
    void aWriteCommandWithoutABrokerFailsWithWhatToDo(@TempDir Path dir) throws Exception {
        Path file = Files.write(dir.resolve("value"), new byte[100]);
        assertThat(run("put", "doc-1", file.toString(), "--bootstrap", nobody, "--timeout", "1s")).isEqualTo(CommandLine.ExitCode.SOFTWARE);
        assertThat(cli.err()).startsWith("lobstream put: no Kafka broker answers at " + nobody + " within 1s: start a node first");
    }

    @Test
    void bootstrapServerIsBootstrapAsKafkasToolsSpellIt(@TempDir Path dir) throws Exception {
        Path file = Files.write(dir.resolve("value"), new byte[100]);
        assertThat(run("put", "doc-1", file.toString(), "--bootstrap-server", nobody, "--timeout", "1s")).isEqualTo(CommandLine.ExitCode.SOFTWARE);
        assertThat(cli.err()).startsWith("lobstream put: no Kafka broker answers at " + nobody + " within 1s");
    }

    @Test
    void aTimeoutUnderASecondStillGivesTheBrokerASecond(@TempDir Path dir) throws Exception { // (0s is a usage error)
        Path file = Files.write(dir.resolve("value"), new byte[100]);
        assertThat(run("put", "doc-1", file.toString(), "--bootstrap", nobody, "--timeout", "1ms")).isEqualTo(CommandLine.ExitCode.SOFTWARE);
        assertThat(cli.err()).contains("no Kafka broker answers at " + nobody + " within 1s");
    }

    @Test
    void replayWithoutABrokerFailsBeforeItMakesATablespace(@TempDir Path dir) {
        assertThat(run("replay", "--partition", "0", "--data-dir", dir.toString(), "--bootstrap", nobody))
                .isEqualTo(CommandLine.ExitCode.SOFTWARE);
        assertThat(cli.err()).contains("no Kafka broker answers at " + nobody);
        assertThat(dir.resolve("tablespaces")).doesNotExist();
    }
}
