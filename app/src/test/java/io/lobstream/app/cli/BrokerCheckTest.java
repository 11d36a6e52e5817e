package io.lobstream.app.cli;

import io.lobstream.app.embedded.EmbeddedKafka;
import io.lobstream.schema.LobStreamConfig;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

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

    /** What a purge worker warns on (another lob.topic.prefix than the nodes' purges nothing), and only what a broker said. */
    @Test
    void noTopicIsSaidOnlyWhenABrokerSaysSo(@TempDir Path dir) throws Exception {
        LobStreamConfig nobodys = new LobStreamConfig(Map.of(LobStreamConfig.BOOTSTRAP.name(), nobody));
        assertThat(BrokerCheck.saysNoTopic(nobodys, "lob.undo-history", Duration.ofSeconds(1))).as("nobody could say").isFalse();
        int[] ports = EmbeddedKafka.freePorts(2);
        try (EmbeddedKafka kafka = new EmbeddedKafka(dir, ports[0], ports[1]).start();
             Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrap()))) {
            admin.createTopics(List.of(new NewTopic("lob.undo-history", 1, (short) 1))).all().get();
            LobStreamConfig config = new LobStreamConfig(Map.of(LobStreamConfig.BOOTSTRAP.name(), kafka.bootstrap()));
            assertThat(BrokerCheck.saysNoTopic(config, "lob.undo-history", Duration.ofSeconds(10))).isFalse();
            assertThat(BrokerCheck.saysNoTopic(config, "other.undo-history", Duration.ofSeconds(10))).isTrue();
        }
    }
}
