package io.lobstream.ingest.writer;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** What {@link AdminPurgeProgress} infers from one partition's offsets, check after check. */
class PurgeProgressTest {
    private static final long UNKNOWN = Long.MIN_VALUE;

    private final AdminPurgeProgress.PartitionProgress p = new AdminPurgeProgress.PartitionProgress();

    /** A check at {@code now} by a wall clock that keeps time with the monotonic one. */
    private long advance(long now, long purgedTo, long undoEnd, long reclaimEnd, long appliedTo) {
        return p.advance(now, now * 1_000_000, purgedTo, undoEnd, reclaimEnd, appliedTo);
    }

    @Test
    void aTimeIsPublishedOncePurgeHasPassedItsEndOffsetAndTheWriterHasAppliedTheReclaims() {
        // check at 1000: 10 undo records, purge committed nothing yet
        assertThat(advance(1000, -1, 10, 0, -1)).isEqualTo(UNKNOWN);
        // at 2000 purge has committed 10 (and made 4 reclaim records): what was committed before 1000 is consumed, but the
        // writer has not applied those reclaims
        assertThat(advance(2000, 10, 15, 4, 2)).isEqualTo(UNKNOWN);
        // at 3000 the writer has applied up to 4
        assertThat(advance(3000, 12, 15, 6, 4)).isEqualTo(1000);
        // purge reaches 15, the end seen at 2000 and at 3000: the later counts, and the writer has applied every reclaim
        assertThat(advance(4000, 15, 15, 6, 6)).isEqualTo(3000);
        assertThat(advance(5000, 15, 15, 6, 6)).isEqualTo(4000);
    }

    @Test
    void purgeBehindByManyChecksIsStillFollowed() {
        for (int i = 0; i < 20; i++) {
            assertThat(advance(1000L * i, -1, 100L * i, 0, -1)).isEqualTo(UNKNOWN);
        }
        // purge reaches the end seen at check 5 (500): records committed before 5000 were consumed; no reclaim records
        assertThat(advance(20_000, 550, 2000, 0, -1)).isEqualTo(5000);
    }

    @Test
    void offsetsGoingBackwardsForgetWhatWasKnown() {
        advance(1000, -1, 10, 0, -1);
        assertThat(advance(2000, 10, 10, 0, -1)).isEqualTo(1000);
        // the topic was recreated: its end is now below what was seen, and the old committed offset above it
        assertThat(advance(3000, 10, 2, 0, -1)).isEqualTo(UNKNOWN);
        assertThat(advance(4000, 10, 3, 0, -1)).isEqualTo(UNKNOWN);
        // the group's offsets reset to the new topic: known again from the first check of it
        assertThat(advance(5000, 3, 3, 0, -1)).isEqualTo(4000);
    }

    @Test
    void aClockSetBackForgetsWhatWasKnown() {
        advance(1000, -1, 10, 0, -1);
        assertThat(advance(31_000, 10, 20, 0, -1)).isEqualTo(1000);
        // 30 s later by the monotonic clock, the wall clock shows 10 s: it was set back 20 s, less than a check's interval,
        // and a time sampled before the step would pass for later than what comes after it
        assertThat(p.advance(41_000, 61_000_000_000L, 10, 30, 0, -1)).isEqualTo(UNKNOWN);
        assertThat(p.advance(71_000, 91_000_000_000L, 20, 30, 0, -1)).isEqualTo(UNKNOWN);
        // known again from the first check after the step, once purge passes its end
        assertThat(p.advance(101_000, 121_000_000_000L, 30, 30, 0, -1)).isEqualTo(71_000);
    }

    /** A wall clock a little behind the monotonic one (a pause between their reads, a slewed clock) is no step. */
    @Test
    void aClockALittleBehindIsNoStep() {
        advance(1000, -1, 10, 0, -1);
        assertThat(p.advance(28_000, 31_000_000_000L, 10, 20, 0, -1)).isEqualTo(1000);
    }

    @Test
    void aGroupWithNoCommittedOffsetTellsNothing() {
        for (int i = 0; i < 5; i++) {
            assertThat(advance(1000L * i, -1, 0, 0, -1)).isEqualTo(UNKNOWN);
        }
    }
}
