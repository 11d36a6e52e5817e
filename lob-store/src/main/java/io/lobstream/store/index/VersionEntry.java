package io.lobstream.store.index;

import io.lobstream.store.allocator.Extent;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
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
 * @param valueCrc32c  the whole value's CRC32C, or 0 for a version that shares pages with its base (a partial update
 *                     that shares none has one; see {@code RootPage})
 * @param attributes   its content type and user metadata
 * @param baseVersion  for a version that shares pages (made by a partial update), the version it was made from, whose
 *                     {@code retained} pages are the ones it shares; 0 for one that shares none, or when not recorded
 *                     (before this field existed). Every other data page the version wrote itself: that is what tells a
 *                     page a power loss took from the same LOB's older page at that place ({@code TornWrites})
 * @param originVersion the version a command made these bytes as: the version itself, but for a compaction move, which
 *                     keeps the moved version's. The HTTP {@code ETag} names it, so a move, which changes no byte,
 *                     leaves the ETags clients keep valid; and as moves issue no origin, a copy restored from a backup
 *                     reissues only numbers no ETag named (its commands since the backup rename it, see
 *                     {@code LobStore#renewCopyId})
 */
public record VersionEntry(String lobId, long version, long rootPage, long byteLength, int valueCrc32c,
                           List<Extent> extents, long createdAtMillis,
                           Cause cause, long sourceOffset, long supersededAtMillis, boolean reclaimRequested,
                           List<Extent> retained, Attributes attributes, long baseVersion, long originVersion) {

    /**
     * Why a version was superseded. {@code RELOCATE}: compaction moved its bytes to a new version; the
     * engine frees it itself, no undo record is written, and it is not history (not waiting for purge).
     */
    public enum Cause { UPDATE, DELETE, RELOCATE }

    /**
     * 1: no retained pages; 2: adds them; 3: adds the attributes (written only when there are any, a base version or an
     * origin).
     * All are read. The base version trails format 3, written only when there is one or an origin follows: the release
     * before reads the fields it knows and ignores it, so a tablespace stays readable by it (and an entry it rewrites loses
     * the base). The origin version comes after it, written only when it is not the version (a move's): releases before
     * read none and take the version (an ETag that changes with a move, as theirs did). Neither field has a tag: a later
     * field must come after the origin, and with both always written.
     */
    private static final byte FORMAT = 3;

    public VersionEntry {
        extents = List.copyOf(extents);
        retained = List.copyOf(retained);
        attributes = attributes == null ? Attributes.NONE : attributes;
    }

    public static VersionEntry current(String lobId, long version, long rootPage, long byteLength, int crc, List<Extent> extents,
                                       Attributes attributes) {
        return new VersionEntry(lobId, version, rootPage, byteLength, crc, extents, System.currentTimeMillis(), null, -1, 0, false,
                List.of(), attributes, 0, version);
    }

    public static VersionEntry current(String lobId, long version, long rootPage, long byteLength, int crc, List<Extent> extents) {
        return current(lobId, version, rootPage, byteLength, crc, extents, Attributes.NONE);
    }

    /** This version, made by a partial update of {@code base} and sharing its pages. */
    public VersionEntry madeFrom(long base) {
        return new VersionEntry(lobId, version, rootPage, byteLength, valueCrc32c, extents, createdAtMillis, cause, sourceOffset,
                supersededAtMillis, reclaimRequested, retained, attributes, base, originVersion);
    }

    /** This version, a compaction move of {@code moved}: the same bytes, under the same origin. */
    public VersionEntry movedFrom(VersionEntry moved) {
        return new VersionEntry(lobId, version, rootPage, byteLength, valueCrc32c, extents, createdAtMillis, cause, sourceOffset,
                supersededAtMillis, reclaimRequested, retained, attributes, baseVersion, moved.originVersion);
    }

    public VersionEntry superseded(Cause why, long bySourceOffset) {
        return superseded(why, bySourceOffset, List.of());
    }

    /** This version, pending purge, with {@code shared} pages handed over to its successor. */
    public VersionEntry superseded(Cause why, long bySourceOffset, List<Extent> shared) {
        List<Extent> owned = shared.isEmpty() ? extents : Extent.subtract(extents, shared);
        return new VersionEntry(lobId, version, rootPage, byteLength, valueCrc32c, owned, createdAtMillis, why, bySourceOffset,
                System.currentTimeMillis(), false, Extent.coalesce(shared), attributes, baseVersion, originVersion);
    }

    public VersionEntry withReclaimRequested() {
        return new VersionEntry(lobId, version, rootPage, byteLength, valueCrc32c, extents, createdAtMillis, cause, sourceOffset,
                supersededAtMillis, true, retained, attributes, baseVersion, originVersion);
    }

    public long pageCount() {
        return Extent.totalPages(extents);
    }

    public byte[] encode() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(64 + 12 * extents.size());
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            // format 2 while there is nothing of format 3's: a tablespace without attributes stays readable by the release before
            boolean format2 = attributes.equals(Attributes.NONE) && baseVersion == 0 && originVersion == version;
            out.writeByte(format2 ? 2 : FORMAT);
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
            if (!format2) {
                attributes.write(out);
            }
            if (baseVersion != 0 || originVersion != version) {
                out.writeLong(baseVersion);
            }
            if (originVersion != version) {
                out.writeLong(originVersion);
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
            long base = format >= 3 && in.available() >= Long.BYTES ? in.readLong() : 0;
            long origin = format >= 3 && in.available() >= Long.BYTES ? in.readLong() : version;
            if (causeCode < 0 || causeCode > Cause.values().length) {
                throw new IllegalStateException("unknown cause code " + causeCode);
            }
            Cause cause = causeCode == 0 ? null : Cause.values()[causeCode - 1];
            return new VersionEntry(lobId, version, root, length, crc, extents, created, cause, sourceOffset, supersededAt, reclaimRequested,
                    retained, attributes, base, origin);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
