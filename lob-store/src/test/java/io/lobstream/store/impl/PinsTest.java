package io.lobstream.store.impl;

import io.lobstream.store.index.VersionEntry;
import org.junit.jupiter.api.Test;

import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

/** Reader pins against a clock the test moves. */
class PinsTest {
    private final AtomicLong now = new AtomicLong(1_000);

    @Test
    void aPinBlocksReclaimOfItsVersionAndLaterOnesForItsLeaseOnly() {
        Pins pins = new Pins(100, now::get);
        Pins.Pin first = pins.pin(entry("a", 5));
        assertThat(pins.blocksReclaim("a", 4)).as("an earlier version: not read through this pin").isFalse();
        assertThat(pins.blocksReclaim("a", 5)).isTrue();
        assertThat(pins.blocksReclaim("a", 9)).as("a later version may own pages it reads").isTrue();
        assertThat(pins.blocksReclaim("b", 5)).isFalse();
        now.addAndGet(99);
        assertThat(pins.blocksReclaim("a", 5)).as("the lease's last millisecond").isTrue();
        now.incrementAndGet();
        assertThat(pins.blocksReclaim("a", 5)).as("its end").isFalse();
        assertThat(pins.pinned("a", 5)).as("still held, for a move, which adds no history").isTrue();
        Pins.Pin second = pins.pin(entry("a", 5)); // a second reader of the same version: its own lease
        assertThat(pins.blocksReclaim("a", 5)).isTrue();
        assertThat(pins.unpin(first)).as("one of two").isFalse();
        assertThat(pins.unpin(second)).as("the last").isTrue();
        assertThat(pins.pinned("a", 5)).isFalse();
    }

    /**
     * The reader that leaves gives back its own pin: it gave back the oldest, and a reader still reading was then timed
     * from the newer pin, holding purge back for up to twice its lease.
     */
    @Test
    void aReaderThatLeavesGivesBackItsOwnPinNotAnOldersLease() {
        Pins pins = new Pins(100, now::get);
        pins.pin(entry("a", 5)); // still reading
        now.addAndGet(90);
        Pins.Pin late = pins.pin(entry("a", 5));
        now.addAndGet(5);
        assertThat(pins.unpin(late)).isFalse();
        now.addAndGet(5);
        assertThat(pins.blocksReclaim("a", 5)).as("the first reader's lease ended at 100 ms").isFalse();
        assertThat(pins.pinned("a", 5)).isTrue();
    }

    @Test
    void withoutALeaseAPinBlocksForAsLongAsItIsHeld() {
        Pins pins = new Pins(0, now::get);
        pins.pin(entry("a", 1));
        now.addAndGet(Long.MAX_VALUE / 2);
        assertThat(pins.blocksReclaim("a", 1)).isTrue();
    }

    private static VersionEntry entry(String lobId, long version) {
        return VersionEntry.current(lobId, version, 1, 10, 0, java.util.List.of());
    }
}
