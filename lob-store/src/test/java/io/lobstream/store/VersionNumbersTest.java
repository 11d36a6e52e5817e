package io.lobstream.store;

import io.lobstream.store.index.LobIndex;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

class VersionNumbersTest {
    @TempDir
    Path dir;

    /**
     * Nothing is written when a number is issued, only when a block is reserved (synced), and nothing
     * at close: each reopen here sees what a reopen after a crash would, and starts past the last
     * reservation.
     */
    @Test
    void aNumberIsNeverIssuedTwiceAcrossReopens() throws Exception {
        long last = 0;
        for (int open = 0; open < 3; open++) {
            try (LobIndex index = LobIndex.open(dir)) {
                VersionNumbers versions = new VersionNumbers(index, 0);
                for (int i = 0; i < 100_000; i++) { // past half a block: a second reservation in this open
                    long v = versions.next();
                    assertThat(v).isGreaterThan(last);
                    last = v;
                }
            }
        }
    }

    @Test
    void startsPastTheHighestVersionTheIndexNames() throws Exception {
        try (LobIndex index = LobIndex.open(dir)) {
            assertThat(new VersionNumbers(index, 5_000_000).next()).isGreaterThan(5_000_000);
        }
    }
}
