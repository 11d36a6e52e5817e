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
 * @param extents      the pages this version owns
 * @param retained     for a version pending purge, pages its root and index pages still reference but that now
 *                     belong to the version that superseded it (a partial update shares unchanged data pages);
 *                     purge frees the version's pages minus these
 * @param valueCrc32c  the whole value's CRC32C, or 0 for a version made by a partial update (see {@code RootPage})
 * @param attributes   its content type and user metadata
 */
public record VersionEntry(String lobId, long version, long rootPage, long byteLength, int valueCrc32c,
                           List<Extent> extents, long createdAtMillis,
                           Cause cause, long sourceOffset, long supersededAtMillis, boolean reclaimRequested,
                           List<Extent> retained, Attributes attributes) {

    /**
     * Why a version was superseded. {@code RELOCATE}: compaction moved its bytes to a new version; the
     * engine frees it itself, no undo record is written, and it is not history (not waiting for purge).
     */
    public enum Cause { UPDATE, DELETE, RELOCATE }

    /** 1: no retained pages; 2: adds them; 3: adds the attributes (written only when there are any). All are read. */
    private static final byte FORMAT = 3;

    public VersionEntry {
        extents = List.copyOf(extents);
        retained = List.copyOf(retained);
        attributes = attributes == null ? Attributes.NONE : attributes;
    }

    public static VersionEntry current(String lobId, long version, long rootPage, long byteLength, int crc, List<Extent> extents,
                                       Attributes attributes) {
        return new VersionEntry(lobId, version, rootPage, byteLength, crc, extents, System.currentTimeMillis(), null, -1, 0, false,
                List.of(), attributes);
    }

    public static VersionEntry current(String lobId, long version, long rootPage, long byteLength, int crc, List<Extent> extents) {
        return current(lobId, version, rootPage, byteLength, crc, extents, Attributes.NONE);
    }

    public VersionEntry superseded(Cause why, long bySourceOffset) {
        return superseded(why, bySourceOffset, List.of());
    }

    /** This version, pending purge, with {@code shared} pages handed over to its successor. */
    public VersionEntry superseded(Cause why, long bySourceOffset, List<Extent> shared) {
        List<Extent> owned = shared.isEmpty() ? extents : Extent.subtract(extents, shared);
        return new VersionEntry(lobId, version, rootPage, byteLength, valueCrc32c, owned, createdAtMillis, why, bySourceOffset,
                System.currentTimeMillis(), false, Extent.coalesce(shared), attributes);
    }

    public VersionEntry withReclaimRequested() {
        return new VersionEntry(lobId, version, rootPage, byteLength, valueCrc32c, extents, createdAtMillis, cause, sourceOffset,
                supersededAtMillis, true, retained, attributes);
    }

    public long pageCount() {
        return Extent.totalPages(extents);
    }

    public byte[] encode() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(64 + 12 * extents.size());
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            // format 2 while there is nothing of format 3's: a tablespace without attributes stays readable by the release before
            out.writeByte(attributes.equals(Attributes.NONE) ? 2 : FORMAT);
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
            ExtentCodec.write(out, extents);
            ExtentCodec.write(out, retained);
            if (!attributes.equals(Attributes.NONE)) {
                attributes.write(out);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return bytes.toByteArray();
    }

    public static VersionEntry decode(byte[] value) {
        try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(value))) {
            byte format = in.readByte();
            if (format < 1 || format > FORMAT) {
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
            List<Extent> extents = ExtentCodec.read(in);
            List<Extent> retained = format == 1 ? List.of() : ExtentCodec.read(in);
            Attributes attributes = format < 3 ? Attributes.NONE : Attributes.read(in);
            Cause cause = causeCode == 0 ? null : Cause.values()[causeCode - 1];
            return new VersionEntry(lobId, version, root, length, crc, extents, created, cause, sourceOffset, supersededAt, reclaimRequested,
                    retained, attributes);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
