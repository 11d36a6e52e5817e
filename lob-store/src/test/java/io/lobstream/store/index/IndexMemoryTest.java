package io.lobstream.store.index;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

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

    /**
     * A memtable is charged to the budget a whole arena block at a time, from its first entry: at RocksDB's default (an
     * eighth of the 4 MiB write buffer) the column families a few commands touch in each of 64 tablespaces took 79 MB of
     * the 64 MiB, and every write then flushed a memtable of a few KB (156 SST files of 12,800 tiny writes). With 64 KiB
     * blocks they take 23 MB and nothing flushes.
     */
    @Test
    void manyTablespacesWithFewWritesEachFlushNothing() throws Exception {
        IndexMemory memory = IndexMemory.unshared(IndexMemory.DEFAULT_BYTES);
        List<LobIndex> indexes = new ArrayList<>();
        try {
            for (int i = 0; i < 64; i++) {
                indexes.add(LobIndex.open(dir.resolve("i" + i), memory));
            }
            for (int n = 0; n < 200; n++) {
                for (LobIndex index : indexes) {
                    try (LobIndex.Batch b = index.newBatch()) {
                        b.putCommand("command-" + n + "-" + "x".repeat(24), n, n * 31L);
                        b.putMeta("m" + n % 5, new byte[]{1, 2, 3});
                        index.write(b);
                    }
                }
            }
            Thread.sleep(1_000); // a flush the budget asked for runs in the background
            try (Stream<Path> files = Files.walk(dir)) {
                assertThat(files.filter(f -> f.toString().endsWith(".sst"))).as("memtables flushed").isEmpty();
            }
            long memtables = 0;
            for (LobIndex index : indexes) {
                memtables += index.memtableBytes();
            }
            assertThat(memtables).isLessThan(IndexMemory.DEFAULT_BYTES / 4);
        } finally {
            indexes.forEach(LobIndex::close);
        }
    }
}
