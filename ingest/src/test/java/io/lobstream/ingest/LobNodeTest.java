package io.lobstream.ingest;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class LobNodeTest {
    @Test
    void theIndexBudgetIsWarnedOfWhenItIsShortForThePartitions() {
        assertThat(LobNode.indexMemoryWanted(128L << 20, 8)).isEmpty();
        assertThat(LobNode.indexMemoryWanted(128L << 20, 64)).isEmpty();
        assertThat(LobNode.indexMemoryWanted(128L << 20, 128)).contains(192L << 20);
    }
}
