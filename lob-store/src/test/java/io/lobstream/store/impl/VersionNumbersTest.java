package io.lobstream.store.impl;

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

    /** A flush's frontier: every number issued is below it, and those whose pages are still being written are named. */
    @Test
    void theFrontierNamesTheNumbersNotSettled() throws Exception {
        try (LobIndex index = LobIndex.open(dir)) {
            VersionNumbers versions = new VersionNumbers(index, 0, java.util.List.of(-7L), walSync -> walSync.sync());
            long a = versions.next();
            long b = versions.next();
            versions.settled(a);
            SyncedFrontier frontier = versions.frontier();
            assertThat(frontier.issuedBelow()).isEqualTo(b + 1);
            assertThat(frontier.unsettled()).containsExactly(-7L, b);
            assertThat(frontier.uncovered(a)).isFalse();
            assertThat(frontier.uncovered(b)).isTrue();
            assertThat(frontier.uncovered(b + 1)).isTrue();

            index.syncWalWith(frontier.put(index.newBatch()));
            SyncedFrontier read = SyncedFrontier.read(index, "t").orElseThrow();
            assertThat(read.issuedBelow()).isEqualTo(frontier.issuedBelow());
            assertThat(read.unsettled()).containsExactly(frontier.unsettled());
        }
    }
}
