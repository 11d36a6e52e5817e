package io.lobstream.app.cli;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The launcher's class-data training runs without any network and succeeds: were it to fail, the
 * launcher would only run the client commands without an archive, so nothing else would say so.
 */
class ClassDataTrainingTest {
    private final CliRun cli = new CliRun();

    @Test
    void loadsTheClientCommandsClassesWithNoBrokerNodeOrRegistry() {
        assertThat(cli.run("train-class-data")).as(cli::err).isZero();
    }

    @Test
    void isNotListedInTheUsage() {
        assertThat(LobStreamCli.commandLine().getUsageMessage()).contains("put").doesNotContain("train-class-data");
    }
}
