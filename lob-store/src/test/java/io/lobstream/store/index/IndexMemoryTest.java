package io.lobstream.store.index;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/** The indexes of a process share one memory budget: their memtables together stay within half of it. */
class IndexMemoryTest {
    @TempDir
    Path dir;

    @Test
    void theMemtablesOfManyIndexesTogetherStayWithinHalfTheBudget() throws Exception {
        IndexMemory memory = IndexMemory.unshared(16L << 20); // memtables: 8 MiB for all four
        List<LobIndex> indexes = new ArrayList<>();
        try {
            for (int i = 0; i < 4; i++) {
                indexes.add(LobIndex.open(dir.resolve("i" + i), memory));
            }
            // about 3 MiB into each: under one column family's 4 MiB write buffer, so alone none would flush; 12 MiB together
            for (int n = 0; n < 2 * 1024; n++) {
                for (LobIndex index : indexes) {
                    try (LobIndex.Batch b = index.newBatch()) {
                        for (int k = 0; k < 16; k++) {
                            b.putCommand("command-" + n + "-" + k + "-" + "x".repeat(24), n, n * 31L + k);
                        }
                        index.write(b);
                    }
                }
            }
            // the flushes the budget asks for run in the background
            await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> {
                long total = 0;
                for (LobIndex index : indexes) {
                    total += index.memtableBytes();
                }
                assertThat(total).as("memtable bytes of four indexes").isLessThanOrEqualTo(9L << 20);
            });
            assertThat(memory.usedBytes()).as("the cache holds the memtables' charge").isGreaterThan(0);
        } finally {
            indexes.forEach(LobIndex::close);
        }
    }
}
