package io.lobstream.store.index;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Command ids are forgotten in rounds of bounded scans, each going on from where the last stopped: a window of millions
 * of ids was read whole at every housekeeping, on the writer's stream thread.
 */
class LobIndexForgetTest {
    @TempDir
    Path dir;

    @Test
    void idsAreForgottenInRoundsOfBoundedScans() throws Exception {
        try (LobIndex index = LobIndex.open(dir)) {
            try (LobIndex.Batch b = index.newBatch()) {
                for (int i = 0; i < 10; i++) {
                    b.putCommand("c" + i, i, 0); // ids in key order, c0 the oldest
                }
                index.write(b);
            }
            assertThat(index.forgetCommandsBefore(5, Long.MIN_VALUE, 3)).as("c0-c2 read").isEqualTo(3);
            assertThat(index.forgetCommandsBefore(5, Long.MIN_VALUE, 3)).as("c3-c5 read").isEqualTo(2);
            assertThat(index.forgetCommandsBefore(5, Long.MIN_VALUE, 3)).as("c6-c8 read").isZero();
            assertThat(index.forgetCommandsBefore(8, Long.MIN_VALUE, 3)).as("c9 read, then the round ends").isZero();
            assertThat(index.commandApplied("c5")).as("not read since it was due").isPresent();
            assertThat(index.forgetCommandsBefore(8, Long.MIN_VALUE, 3)).as("a new round: c5-c7").isEqualTo(3);
            for (int i = 0; i < 10; i++) {
                assertThat(index.commandApplied("c" + i).isPresent()).as("c" + i).isEqualTo(i >= 8);
            }
            assertThat(index.forgetCommandsBefore(Long.MAX_VALUE, Long.MIN_VALUE)).as("unbounded: the rest at once").isEqualTo(2);
        }
    }

    /**
     * An idle partition's limit stands still (its latest command time less the window): once a whole pass found nothing
     * older, its rounds read nothing, where they read the same ids every housekeeping for ever. An id put, or a higher
     * limit, makes them read again.
     */
    @Test
    void anIdlePartitionsRoundsReadNothingOnceAPassFoundNothingOlder() throws Exception {
        try (LobIndex index = LobIndex.open(dir)) {
            try (LobIndex.Batch b = index.newBatch()) {
                for (int i = 0; i < 10; i++) {
                    b.putCommand("c" + i, 100 + i, 0);
                }
                index.write(b);
            }
            assertThat(index.forgetCommandsBefore(50, Long.MIN_VALUE, 4)).isZero();
            assertThat(index.forgetCommandsBefore(50, Long.MIN_VALUE, 4)).isZero();
            assertThat(index.forgetCommandsBefore(50, Long.MIN_VALUE, 4)).as("the pass ends").isZero();
            long read = index.forgetReads();
            assertThat(read).isEqualTo(10);
            for (int i = 0; i < 5; i++) {
                assertThat(index.forgetCommandsBefore(50, Long.MIN_VALUE, 4)).isZero();
                assertThat(index.forgetCommandsBefore(40, Long.MIN_VALUE)).as("a lower limit").isZero();
            }
            assertThat(index.forgetReads()).as("idle: nothing read").isEqualTo(read);

            try (LobIndex.Batch b = index.newBatch()) {
                index.write(b.putCommand("a-late-one", 7, 0)); // an old command time: a record that waited in the log
            }
            assertThat(index.forgetCommandsBefore(50, Long.MIN_VALUE)).as("an id put: read again").isEqualTo(1);
            assertThat(index.commandApplied("a-late-one")).isEmpty();
            assertThat(index.forgetCommandsBefore(105, Long.MIN_VALUE)).as("a higher limit: read again").isEqualTo(5);
            for (int i = 0; i < 10; i++) {
                assertThat(index.commandApplied("c" + i).isPresent()).as("c" + i).isEqualTo(i >= 5);
            }
        }
    }

    /**
     * An id put in a batch not yet written when a pass ends was not read by it: counted once written, not when put, so
     * that the floor the pass leaves does not cover it, and the next round reads it.
     */
    @Test
    void anIdWrittenAfterAPassEndedIsReadByTheNextRound() throws Exception {
        try (LobIndex index = LobIndex.open(dir)) {
            try (LobIndex.Batch b = index.newBatch()) {
                index.write(b.putCommand("c0", 100, 0));
            }
            try (LobIndex.Batch late = index.newBatch()) {
                late.putCommand("late", 7, 0); // put, not yet written
                assertThat(index.forgetCommandsBefore(50, Long.MIN_VALUE)).as("the pass ends: c0 is newer").isZero();
                index.write(late);
            }
            assertThat(index.forgetCommandsBefore(50, Long.MIN_VALUE)).as("read, though the limit did not move").isEqualTo(1);
            assertThat(index.commandApplied("late")).isEmpty();
        }
    }

    /** A partition that records more ids between two calls than a round reads gets longer rounds, or its ids would pile up. */
    @Test
    void aRoundReadsTwiceTheIdsPutSinceTheLastCall() throws Exception {
        int ids = LobIndex.FORGET_SCAN_MAX * 5 / 2;
        try (LobIndex index = LobIndex.open(dir)) {
            for (int done = 0; done < ids; ) {
                try (LobIndex.Batch b = index.newBatch()) {
                    for (int i = 0; i < 10_000 && done < ids; i++, done++) {
                        b.putCommand("c" + (1_000_000 + done), 0, 0);
                    }
                    index.write(b);
                }
            }
            assertThat(index.forgetCommandsBefore(1, Long.MIN_VALUE)).isEqualTo(ids);
        }
    }
}
