package io.lobstream.store.index;

import io.lobstream.store.allocator.Extent;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;

/**
 * What the index knows of one LOB version: where its root page is and which pages it owns.
 * The page list is metadata (a few extents), never LOB bytes; it lets the writer check a
 * purge worker's ReclaimRecord against what it wrote, and lets recovery rebuild free space
 * without reading pages.
 *
 * @param cause        for a version pending purge, why it was superseded; {@code null} while current
 * @param sourceOffset for a version pending purge, the offset of the command that superseded it
 * @param reclaimRequested a reclaim arrived while a reader pinned the version: free it on unpin
 */
public record VersionEntry(String lobId, long version, long rootPage, long byteLength, int valueCrc32c,
                           List<Extent> extents, long createdAtMillis,
                           Cause cause, long sourceOffset, long supersededAtMillis, boolean reclaimRequested) {

    public enum Cause { UPDATE, DELETE }

    private static final byte FORMAT = 1;

    public VersionEntry {
        extents = List.copyOf(extents);
    }

    public static VersionEntry current(String lobId, long version, long rootPage, long byteLength, int crc, List<Extent> extents) {
        return new VersionEntry(lobId, version, rootPage, byteLength, crc, extents, System.currentTimeMillis(), null, -1, 0, false);
    }

    public VersionEntry superseded(Cause why, long bySourceOffset) {
        return new VersionEntry(lobId, version, rootPage, byteLength, valueCrc32c, extents, createdAtMillis, why, bySourceOffset,
                System.currentTimeMillis(), false);
    }

    public VersionEntry withReclaimRequested() {
        return new VersionEntry(lobId, version, rootPage, byteLength, valueCrc32c, extents, createdAtMillis, cause, sourceOffset,
                supersededAtMillis, true);
    }

    public long pageCount() {
        return Extent.totalPages(extents);
    }

    public byte[] encode() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(64 + 12 * extents.size());
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeByte(FORMAT);
            out.writeUTF(lobId);
            out.writeLong(version);
            out.writeLong(rootPage);
            out.writeLong(byteLength);
            out.writeInt(valueCrc32c);
            out.writeLong(createdAtMillis);
            out.writeByte(cause == null ? 0 : cause.ordinal() + 1);
            out.writeLong(sourceOffset);
            out.writeLong(supersededAtMillis);
            out.writeBoolean(reclaimRequested);
            out.writeInt(extents.size());
            for (Extent e : extents) {
                out.writeLong(e.firstPage());
                out.writeInt(e.pageCount());
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return bytes.toByteArray();
    }

    public static VersionEntry decode(byte[] value) {
        try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(value))) {
            byte format = in.readByte();
            if (format != FORMAT) {
                throw new IllegalStateException("unknown index entry format " + format);
            }
            String lobId = in.readUTF();
            long version = in.readLong();
            long root = in.readLong();
            long length = in.readLong();
            int crc = in.readInt();
            long created = in.readLong();
            int causeCode = in.readByte();
            long sourceOffset = in.readLong();
            long supersededAt = in.readLong();
            boolean reclaimRequested = in.readBoolean();
            int n = in.readInt();
            List<Extent> extents = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                extents.add(new Extent(in.readLong(), in.readInt()));
            }
            Cause cause = causeCode == 0 ? null : Cause.values()[causeCode - 1];
            return new VersionEntry(lobId, version, root, length, crc, extents, created, cause, sourceOffset, supersededAt, reclaimRequested);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
