package io.lobstream.app.cli;

import io.lobstream.store.config.ConfigException;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

import java.util.HashMap;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Where a command finds its node when --node is not given: the node's own lob.http.* keys given with -c, then
 * $LOBSTREAM_NODE, then those keys in the --command-config file, then :8080.
 */
class NodeUrlTest {
    private static final CommandLine CLI = LobStreamCli.commandLine();

    private static String resolve(String given, Map<String, String> typed, Map<String, String> inFile, Map<String, String> env) {
        ConfigOptions keys = new ConfigOptions();
        keys.given = new HashMap<>(typed);
        keys.file = new ConfigOptions.FileKeys(inFile);
        return NodeUrl.resolve(given, keys, env::get, CLI);
    }

    private static String resolve(Map<String, String> typed) {
        return resolve(null, typed, Map.of(), Map.of());
    }

    @Test
    void theOptionWinsOverEverythingElse() {
        assertThat(resolve("http://n1:9000", Map.of("lob.http.port", "8091"), Map.of("lob.http.port", "8092"),
                Map.of(NodeUrl.ENV, "http://n2:9000"))).isEqualTo("http://n1:9000");
    }

    @Test
    void keysOnTheCommandLineThenTheEnvironmentThenTheFile() {
        Map<String, String> env = Map.of(NodeUrl.ENV, " node-2:8080 ");
        assertThat(resolve(null, Map.of("lob.http.port", "8091"), Map.of("lob.http.port", "8092"), env)).isEqualTo("http://127.0.0.1:8091");
        assertThat(resolve(null, Map.of(), Map.of("lob.http.port", "8092"), env)).as("read as --node is").isEqualTo("http://node-2:8080");
        assertThat(resolve(null, Map.of(), Map.of("lob.http.port", "8092"), Map.of())).isEqualTo("http://127.0.0.1:8092");
        assertThat(resolve(null, Map.of(), Map.of("lob.http.port", "8092"), Map.of(NodeUrl.ENV, " "))).as("blank: not set")
                .isEqualTo("http://127.0.0.1:8092");
        assertThat(resolve(null, Map.of("lob.http.port", "8091"), Map.of("lob.http.host", "10.0.0.5"), env))
                .as("the file's host with the typed port, as the node merged them").isEqualTo("http://10.0.0.5:8091");
    }

    @Test
    void aBadEnvironmentValueIsAUsageError() {
        assertThatThrownBy(() -> resolve(null, Map.of(), Map.of(), Map.of(NodeUrl.ENV, "ftp://node-2")))
                .isInstanceOf(CommandLine.ParameterException.class).hasMessageContaining("$LOBSTREAM_NODE: 'ftp://node-2' is not");
    }

    @Test
    void theKeysNameTheNodeAsThisMachineReachesIt() {
        assertThat(resolve(Map.of("lob.http.port", "8091"))).isEqualTo("http://127.0.0.1:8091");
        assertThat(resolve(Map.of("lob.http.host", "0.0.0.0", "lob.http.port", "8091"))).isEqualTo("http://127.0.0.1:8091");
        assertThat(resolve(Map.of("lob.http.host", "0:0:0:0:0:0:0:0"))).isEqualTo("http://127.0.0.1:8080");
        assertThat(resolve(Map.of("lob.http.host", "::1", "lob.http.port", "8091"))).isEqualTo("http://[::1]:8091");
        assertThat(resolve(Map.of("lob.http.host", "10.0.0.5"))).isEqualTo("http://10.0.0.5:8080");
        // the name other nodes use (a compose service's) may not resolve here: not used
        assertThat(resolve(Map.of("lob.http.host", "0.0.0.0", "lob.http.advertised.host", "node-1"))).isEqualTo("http://127.0.0.1:8080");
    }

    @Test
    void withoutTheKeysOrAKnownPortItIsTheDefault() {
        assertThat(resolve(Map.of("bootstrap.servers", "kafka:9092"))).isEqualTo("http://127.0.0.1:8080");
        assertThat(resolve(Map.of("lob.http.port", "0"))).as("any free port: unknown here").isEqualTo("http://127.0.0.1:8080");
    }

    @Test
    void aTypedPortZeroIsNotTheFilesPort() {
        assertThat(resolve(null, Map.of("lob.http.port", "0"), Map.of("lob.http.port", "8092"), Map.of())).isEqualTo("http://127.0.0.1:8080");
    }

    /** As --node is checked: before a write is sent, not when its ETag is asked for after it was applied. */
    @Test
    void aHostNoUrlCanCarryIsAUsageError() {
        assertThatThrownBy(() -> resolve(Map.of("lob.http.host", "node_1"))).isInstanceOf(CommandLine.ParameterException.class)
                .hasMessageContaining("lob.http.host=node_1");
    }

    @Test
    void aBadPortIsRefusedAsTheNodeRefusesIt() {
        assertThatThrownBy(() -> resolve(Map.of("lob.http.port", "80800"))).isInstanceOf(ConfigException.class)
                .hasMessageContaining("lob.http.port");
    }

    @Test
    void aNodeSaysTheOptionsItsClientsNeedOnlyWhenTheDefaultsMissIt() {
        assertThat(NodeCommand.clientOptions("127.0.0.1:9092", "http://127.0.0.1:8081/apis/registry/v2", NodeUrl.local("0.0.0.0", 8080)))
                .isEmpty();
        assertThat(NodeCommand.clientOptions("127.0.0.1:19092", "http://127.0.0.1:18081/apis/registry/v2", "http://127.0.0.1:8091"))
                .isEqualTo("--bootstrap 127.0.0.1:19092 --registry http://127.0.0.1:18081/apis/registry/v2 --node http://127.0.0.1:8091 "
                        + "(or export LOBSTREAM_NODE=http://127.0.0.1:8091)");
        assertThat(NodeCommand.clientOptions("127.0.0.1:9092", "http://127.0.0.1:8081/apis/registry/v2", null)).as("no URL to offer")
                .isEmpty();
        assertThat(NodeCommand.readyHint("127.0.0.1:9092", "http://127.0.0.1:8081/apis/registry/v2", "http://127.0.0.1:8080", false)).isEmpty();
        assertThat(NodeCommand.readyHint("127.0.0.1:9092", "http://127.0.0.1:8081/apis/registry/v2", "http://127.0.0.1:8080", true))
                .isEqualTo("  commands on this machine reach it with: their defaults and the security settings it was given (-c, "
                        + "--command-config)");
        assertThat(NodeCommand.readyHint("kafka:9092", "http://127.0.0.1:8081/apis/registry/v2", "http://127.0.0.1:8080", true))
                .isEqualTo("  commands on this machine reach it with: --bootstrap kafka:9092, and the security settings it was given "
                        + "(-c, --command-config)");
        assertThat(NodeCommand.clientOptions("127.0.0.1:9092", "https://***@registry/apis/registry/v2", NodeUrl.local("::1", 8080)))
                .isEqualTo("--registry https://***@registry/apis/registry/v2 (its credentials for ***) --node http://[::1]:8080 "
                        + "(or export LOBSTREAM_NODE=http://[::1]:8080)");
    }
}
