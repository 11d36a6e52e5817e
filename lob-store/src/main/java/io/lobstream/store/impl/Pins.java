package io.lobstream.store.impl;

import io.lobstream.store.index.VersionEntry;

import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.LongSupplier;

/**
 * Reader pins (MVCC): which versions of which LOBs are being read. A partial update hands the
 * data pages it does not change to the new version, so a reader of an old version may be
 * reading pages that now belong to any later version of the same LOB: reclaiming version
 * {@code v} therefore waits while any version {@code <= v} of that LOB is pinned.
 *
 * <p>A pin holds purge back for {@code leaseMillis} at most ({@code lob.read.pin.max.ms}): a
 * reader that takes longer no longer blocks reclaims, so one slow client cannot grow a LOB's
 * history without bound. Its reads then fail on a reused page (pages carry the LOB and version
 * they belong to), never return another value's bytes.
 */
final class Pins {
    /** lobId → version → its pins, oldest first */
    private final Map<String, TreeMap<Long, ArrayDeque<Pin>>> byLob = new HashMap<>();
    private final long leaseMillis;
    private final LongSupplier clock;

    /** @param leaseMillis how long a pin blocks reclaims; 0 = for as long as it is held */
    Pins(long leaseMillis, LongSupplier clock) {
        this.leaseMillis = leaseMillis;
        this.clock = clock;
    }

    /** One reader's pin of {@code entry}, taken at {@code at} (ms): what its {@link #unpin} gives back. */
    record Pin(VersionEntry entry, long at) {
    }

    synchronized Pin pin(VersionEntry entry) {
        Pin pin = new Pin(entry, clock.getAsLong());
        byLob.computeIfAbsent(entry.lobId(), k -> new TreeMap<>()).computeIfAbsent(entry.version(), v -> new ArrayDeque<>()).addLast(pin);
        return pin;
    }

    /** @return true if this released the last pin of that version */
    synchronized boolean unpin(Pin pin) {
        String lobId = pin.entry().lobId();
        long version = pin.entry().version();
        TreeMap<Long, ArrayDeque<Pin>> versions = byLob.get(lobId);
        ArrayDeque<Pin> pins = versions == null ? null : versions.get(version);
        // this reader's own: had a reader that leaves taken an older reader's, the one still reading would be timed
        // from the newer pin, and hold purge back past its lease
        if (pins == null || !pins.removeFirstOccurrence(pin)) {
            throw new IllegalStateException("unpin of " + lobId + "@" + version + " which is not pinned");
        }
        if (!pins.isEmpty()) {
            return false;
        }
        versions.remove(version);
        if (versions.isEmpty()) {
            byLob.remove(lobId);
        }
        return true;
    }

    /** Whether a reader holds a pin on version {@code version} of {@code lobId}, or an earlier one, lease or not. */
    synchronized boolean pinned(String lobId, long version) {
        TreeMap<Long, ArrayDeque<Pin>> versions = byLob.get(lobId);
        return versions != null && versions.floorKey(version) != null;
    }

    /**
     * Whether a reader's pin keeps {@code pending}'s pages from being freed now. A relocation's old
     * copy waits for every pin, lease or not: a move adds no history, so a slow reader keeps its copy
     * until it lets go. A superseded or deleted version waits only for pins within their lease
     * ({@link #blocksReclaim}), so one stuck reader cannot hold history back for ever.
     */
    synchronized boolean holds(VersionEntry pending) {
        return pending.cause() == VersionEntry.Cause.RELOCATE
                ? pinned(pending.lobId(), pending.version())
                : blocksReclaim(pending.lobId(), pending.version());
    }

    /** Whether a reader may still read pages of version {@code version} of {@code lobId}, within its lease. */
    synchronized boolean blocksReclaim(String lobId, long version) {
        TreeMap<Long, ArrayDeque<Pin>> versions = byLob.get(lobId);
        if (versions == null) {
            return false;
        }
        long since = leaseMillis <= 0 ? Long.MIN_VALUE : clock.getAsLong() - leaseMillis;
        for (ArrayDeque<Pin> pins : versions.headMap(version, true).values()) {
            if (pins.peekLast().at() > since) {
                return true;
            }
        }
        return false;
    }
}
