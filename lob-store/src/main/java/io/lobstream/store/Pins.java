package io.lobstream.store;

import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;

/**
 * Reader pins (MVCC): which versions of which LOBs are being read. A partial update hands the
 * data pages it does not change to the new version, so a reader of an old version may be
 * reading pages that now belong to any later version of the same LOB: reclaiming version
 * {@code v} therefore waits while any version {@code <= v} of that LOB is pinned.
 */
final class Pins {
    /** lobId → version → pin count */
    private final Map<String, TreeMap<Long, Integer>> byLob = new HashMap<>();

    synchronized void pin(String lobId, long version) {
        byLob.computeIfAbsent(lobId, k -> new TreeMap<>()).merge(version, 1, Integer::sum);
    }

    /** @return true if this released the last pin of that version */
    synchronized boolean unpin(String lobId, long version) {
        TreeMap<Long, Integer> versions = byLob.get(lobId);
        Integer n = versions == null ? null : versions.get(version);
        if (n == null) {
            throw new IllegalStateException("unpin of " + lobId + "@" + version + " which is not pinned");
        }
        if (n > 1) {
            versions.put(version, n - 1);
            return false;
        }
        versions.remove(version);
        if (versions.isEmpty()) {
            byLob.remove(lobId);
        }
        return true;
    }

    /** Whether a reader may still read pages of version {@code version} of {@code lobId}. */
    synchronized boolean blocksReclaim(String lobId, long version) {
        TreeMap<Long, Integer> versions = byLob.get(lobId);
        return versions != null && versions.floorKey(version) != null;
    }
}
