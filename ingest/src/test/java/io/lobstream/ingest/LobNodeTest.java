package io.lobstream.ingest;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class LobNodeTest {
    @Test
    void theIndexBudgetIsWarnedOfWhenItIsShortForThePartitions() {
        assertThat(LobNode.indexMemoryWanted(128L << 20, 8)).isEmpty();
        assertThat(LobNode.indexMemoryWanted(128L << 20, 64)).isEmpty();
        assertThat(LobNode.indexMemoryWanted(128L << 20, 128)).contains(192L << 20);
    }

    /** What the warning about a loopback address advertised to a cluster on other hosts takes for loopback. */
    @Test
    void loopbackAddressesAreKnownWithoutAResolver() {
        assertThat(List.of("127.0.0.1", "127.0.1.1", "localhost", "::1", "LocalHost")).allMatch(LobNode::isLoopback);
        assertThat(List.of("node-1", "10.0.0.7", "0.0.0.0", "fe80::1", "kafka")).noneMatch(LobNode::isLoopback);
    }
}
