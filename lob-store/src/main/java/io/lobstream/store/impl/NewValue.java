package io.lobstream.store.impl;

import io.lobstream.store.layout.ConcatStream;
import io.lobstream.store.layout.VersionLayout;
import io.lobstream.store.layout.VersionReader;

import java.io.InputStream;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.Optional;

/**
 * A new version's value as a write builds it: {@code length} bytes read from {@code bytes}, of
 * which only {@code [changedFrom, changedTo)} differ from the version it replaces (the base). Full
 * data pages outside that range are not written again: the new version shares them with the base.
 */
record NewValue(long length, long changedFrom, long changedTo, InputStream bytes) {

    /** A whole value: nothing is kept of the base. */
    static NewValue whole(long length, InputStream bytes) {
        return new NewValue(length, 0, length, bytes);
    }

    /**
     * {@code length} bytes at {@code offset} (at most the base's length) over the base's value. Exactly
     * {@code length} bytes are read from {@code data}: it may go on past them; if it ends sooner the
     * write fails with {@link java.io.EOFException}.
     */
    static NewValue overwrite(String lobId, Optional<VersionReader> base, long offset, InputStream data, long length) {
        long old = base.map(VersionReader::byteLength).orElse(0L);
        if (offset < 0 || offset > old || length < 0) {
            throw new IllegalArgumentException("write of " + length + " bytes at offset " + offset + " of " + lobId
                    + ": the offset must be within 0.." + old);
        }
        long end = offset + length;
        List<InputStream> parts = new ArrayList<>(3);
        if (offset > 0) {
            parts.add(base.get().stream(0, offset));
        }
        parts.add(new ExactLengthStream(data, length)); // the base's bytes after it must start at exactly offset + length
        if (end < old) {
            parts.add(base.get().stream(end, old));
        }
        return new NewValue(Math.max(old, end), offset, end, new ConcatStream(parts));
    }

    /** The base's first {@code newLength} bytes (at most its length). */
    static NewValue truncate(String lobId, VersionReader base, long newLength) {
        if (newLength < 0 || newLength > base.byteLength()) {
            throw new IllegalArgumentException("truncate " + lobId + " to " + newLength + " bytes: must be within 0.." + base.byteLength());
        }
        return new NewValue(newLength, newLength, newLength, base.stream(0, newLength));
    }

    /**
     * Data pages of this value, laid out as {@code layout}, that the base already holds byte for
     * byte: full in both, and outside the change.
     */
    BitSet sharedPages(VersionLayout layout, Optional<VersionReader> base) {
        BitSet shared = new BitSet();
        if (base.isEmpty()) {
            return shared;
        }
        VersionLayout old = VersionLayout.of(layout.pageSize(), base.get().root());
        int cap = layout.dataCapacity();
        int n = Math.min(layout.dataPages(), old.dataPages());
        for (int i = 0; i < n; i++) {
            long from = (long) i * cap;
            long to = from + cap;
            boolean untouched = to <= changedFrom || from >= changedTo || changedFrom == changedTo;
            if (untouched && layout.bytesInDataPage(i) == cap && old.bytesInDataPage(i) == cap) {
                shared.set(i);
            }
        }
        return shared;
    }
}
