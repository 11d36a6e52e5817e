package io.lobstream.app.cli;

import io.lobstream.store.config.ConfigException;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Where a command finds its node when --node is not given: $LOBSTREAM_NODE, then the node's own lob.http.* keys, then :8080. */
class NodeUrlTest {
    private static final CommandLine CLI = LobStreamCli.commandLine();

    private static String resolve(String given, Map<String, String> keys, Map<String, String> env) {
        return NodeUrl.resolve(given, keys, env::get, CLI);
    }

    @Test
    void theOptionWinsOverTheEnvironmentAndTheKeys() {
        assertThat(resolve("http://n1:9000", Map.of("lob.http.port", "8091"), Map.of(NodeUrl.ENV, "http://n2:9000")))
                .isEqualTo("http://n1:9000");
    }

    @Test
    void theEnvironmentWinsOverTheKeysAndIsReadAsTheOptionIs() {
        assertThat(resolve(null, Map.of("lob.http.port", "8091"), Map.of(NodeUrl.ENV, " node-2:8080 "))).isEqualTo("http://node-2:8080");
        assertThatThrownBy(() -> resolve(null, Map.of(), Map.of(NodeUrl.ENV, "ftp://node-2")))
                .isInstanceOf(CommandLine.ParameterException.class).hasMessageContaining("$LOBSTREAM_NODE: 'ftp://node-2' is not");
        assertThat(resolve(null, Map.of(), Map.of(NodeUrl.ENV, " "))).isEqualTo("http://127.0.0.1:8080");
    }

    @Test
    void theKeysANodeWasStartedWithNameIt() {
        assertThat(resolve(null, Map.of("lob.http.port", "8091"), Map.of())).isEqualTo("http://127.0.0.1:8091");
        assertThat(resolve(null, Map.of("lob.http.host", "0.0.0.0", "lob.http.port", "8091"), Map.of())).isEqualTo("http://127.0.0.1:8091");
        assertThat(resolve(null, Map.of("lob.http.host", "0.0.0.0", "lob.http.advertised.host", "node-1"), Map.of()))
                .isEqualTo("http://node-1:8080");
        assertThat(resolve(null, Map.of("lob.http.host", "::1", "lob.http.port", "8091"), Map.of())).isEqualTo("http://[::1]:8091");
    }

    @Test
    void withoutTheKeysOrAKnownPortItIsTheDefault() {
        assertThat(resolve(null, Map.of("bootstrap.servers", "kafka:9092"), Map.of())).isEqualTo("http://127.0.0.1:8080");
        assertThat(resolve(null, Map.of("lob.http.port", "0"), Map.of())).isEqualTo("http://127.0.0.1:8080"); // any free port: unknown here
    }

    @Test
    void aBadPortIsRefusedAsTheNodeRefusesIt() {
        assertThatThrownBy(() -> resolve(null, Map.of("lob.http.port", "80800"), Map.of())).isInstanceOf(ConfigException.class)
                .hasMessageContaining("lob.http.port");
    }

    @Test
    void aNodeSaysTheOptionsItsClientsNeedOnlyWhenTheDefaultsMissIt() {
        assertThat(NodeCommand.clientOptions("127.0.0.1:9092", "http://127.0.0.1:8081/apis/registry/v2", "http://127.0.0.1:8080")).isEmpty();
        assertThat(NodeCommand.clientOptions("127.0.0.1:19092", "http://127.0.0.1:18081/apis/registry/v2", "http://127.0.0.1:8091"))
                .isEqualTo("--bootstrap 127.0.0.1:19092 --registry http://127.0.0.1:18081/apis/registry/v2 --node http://127.0.0.1:8091 "
                        + "(or export LOBSTREAM_NODE=http://127.0.0.1:8091)");
    }
}
