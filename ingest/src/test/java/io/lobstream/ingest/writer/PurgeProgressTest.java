package io.lobstream.ingest.writer;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** What {@link AdminPurgeProgress} infers from one partition's offsets, check after check. */
class PurgeProgressTest {
    private static final long UNKNOWN = Long.MIN_VALUE;

    private final AdminPurgeProgress.PartitionProgress p = new AdminPurgeProgress.PartitionProgress();

    @Test
    void aTimeIsPublishedOncePurgeHasPassedItsEndOffsetAndTheWriterHasAppliedTheReclaims() {
        // check at 1000: 10 undo records, purge committed nothing yet
        assertThat(p.advance(1000, -1, 10, 0, -1)).isEqualTo(UNKNOWN);
        // at 2000 purge has committed 10 (and made 4 reclaim records): what was committed before 1000 is consumed, but the
        // writer has not applied those reclaims
        assertThat(p.advance(2000, 10, 15, 4, 2)).isEqualTo(UNKNOWN);
        // at 3000 the writer has applied up to 4
        assertThat(p.advance(3000, 12, 15, 6, 4)).isEqualTo(1000);
        // purge reaches 15, the end seen at 2000 and at 3000: the later counts, and the writer has applied every reclaim
        assertThat(p.advance(4000, 15, 15, 6, 6)).isEqualTo(3000);
        assertThat(p.advance(5000, 15, 15, 6, 6)).isEqualTo(4000);
    }

    @Test
    void purgeBehindByManyChecksIsStillFollowed() {
        for (int i = 0; i < 20; i++) {
            assertThat(p.advance(1000L * i, -1, 100L * i, 0, -1)).isEqualTo(UNKNOWN);
        }
        // purge reaches the end seen at check 5 (500): records committed before 5000 were consumed; no reclaim records
        assertThat(p.advance(20_000, 550, 2000, 0, -1)).isEqualTo(5000);
    }

    @Test
    void offsetsGoingBackwardsForgetWhatWasKnown() {
        p.advance(1000, -1, 10, 0, -1);
        assertThat(p.advance(2000, 10, 10, 0, -1)).isEqualTo(1000);
        // the topic was recreated: its end is now below what was seen, and the old committed offset above it
        assertThat(p.advance(3000, 10, 2, 0, -1)).isEqualTo(UNKNOWN);
        assertThat(p.advance(4000, 10, 3, 0, -1)).isEqualTo(UNKNOWN);
        // the group's offsets reset to the new topic: known again from the first check of it
        assertThat(p.advance(5000, 3, 3, 0, -1)).isEqualTo(4000);
    }

    @Test
    void aClockSetBackForgetsWhatWasKnown() {
        p.advance(1000, -1, 10, 0, -1);
        assertThat(p.advance(2000, 10, 20, 0, -1)).isEqualTo(1000);
        // the clock stepped back a minute: a time sampled before the step would pass for later than what comes after it
        assertThat(p.advance(-58_000, 10, 30, 0, -1)).isEqualTo(UNKNOWN);
        assertThat(p.advance(-57_000, 20, 30, 0, -1)).isEqualTo(UNKNOWN);
        // known again from the first check after the step, once purge passes its end
        assertThat(p.advance(-56_000, 30, 30, 0, -1)).isEqualTo(-57_000);
    }

    @Test
    void aGroupWithNoCommittedOffsetTellsNothing() {
        for (int i = 0; i < 5; i++) {
            assertThat(p.advance(1000L * i, -1, 0, 0, -1)).isEqualTo(UNKNOWN);
        }
    }
}
