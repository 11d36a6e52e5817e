package io.lobstream.store.index;

import io.lobstream.store.allocator.Extent;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Index entries round-trip, attributes included, and entries written before attributes existed still read. */
class VersionEntryTest {
    @Test
    void anEntryWithAttributesRoundTrips() {
        VersionEntry e = VersionEntry.current("doc", 7, 40, 123_456, 99, List.of(new Extent(40, 9)),
                        new Attributes("image/png", Map.of("owner", "ann", "b", "")))
                .superseded(VersionEntry.Cause.UPDATE, 12, List.of(new Extent(45, 2)));
        VersionEntry back = VersionEntry.decode(e.encode());
        assertThat(back).isEqualTo(e);
        assertThat(back.attributes().metadata().keySet()).containsExactly("b", "owner");
        assertThat(e.encode()[0]).as("format").isEqualTo((byte) 3);
        // without attributes, format 2: what the release before reads
        assertThat(VersionEntry.current("doc", 7, 40, 10, 99, List.of(new Extent(40, 1))).encode()[0]).isEqualTo((byte) 2);
    }

    /** The base version trails format 3: the fields before it are what the release before reads, and all it reads. */
    @Test
    void aBaseVersionTrailsTheFieldsTheReleaseBeforeReads() {
        VersionEntry e = VersionEntry.current("doc", 9, 40, 10, 0, List.of(new Extent(40, 3))).madeFrom(7)
                .superseded(VersionEntry.Cause.UPDATE, 12, List.of(new Extent(41, 1)));
        byte[] b = e.encode();
        assertThat(b[0]).as("format").isEqualTo((byte) 3);
        assertThat(VersionEntry.decode(b)).isEqualTo(e);
        assertThat(VersionEntry.decode(java.util.Arrays.copyOf(b, b.length - Long.BYTES))).isEqualTo(e.madeFrom(0));
    }

    /**
     * A move's origin trails the base version, written as 0 if there is none: the release before reads the base, and
     * without the origin the version stands for it (an ETag that changes with a move, as before).
     */
    @Test
    void aMovesOriginTrailsTheBaseVersion() {
        VersionEntry moved = VersionEntry.current("doc", 9, 40, 10, 99, List.of(new Extent(40, 1)))
                .movedFrom(VersionEntry.current("doc", 4, 80, 10, 99, List.of(new Extent(80, 1))));
        assertThat(moved.originVersion()).isEqualTo(4);
        byte[] b = moved.encode();
        assertThat(b[0]).as("format").isEqualTo((byte) 3);
        assertThat(VersionEntry.decode(b)).isEqualTo(moved);
        VersionEntry asBefore = VersionEntry.decode(java.util.Arrays.copyOf(b, b.length - Long.BYTES));
        assertThat(asBefore.baseVersion()).isZero();
        assertThat(asBefore.originVersion()).isEqualTo(9);
        VersionEntry movedAgain = VersionEntry.current("doc", 12, 30, 10, 99, List.of(new Extent(30, 1))).movedFrom(moved);
        assertThat(movedAgain.originVersion()).as("a move of a move").isEqualTo(4);
        assertThat(VersionEntry.decode(movedAgain.superseded(VersionEntry.Cause.RELOCATE, -1).encode()).originVersion()).isEqualTo(4);
        VersionEntry shared = VersionEntry.current("doc", 9, 40, 10, 0, List.of(new Extent(40, 3))).madeFrom(7);
        assertThat(shared.originVersion()).as("a partial update is a value of its own").isEqualTo(9);
        assertThat(VersionEntry.decode(shared.encode())).isEqualTo(shared);
    }

    @Test
    void anEntryOfFormat2ReadsWithoutAttributes() throws IOException {
        VersionEntry e = VersionEntry.decode(format2(1));
        assertThat(e.extents()).containsExactly(new Extent(40, 2));
        assertThat(e.attributes()).isSameAs(Attributes.NONE);
        assertThat(VersionEntry.decode(e.encode())).isEqualTo(e);
    }

    /** A corrupt count is refused, not allocated for: 2^31 extents took gigabytes, and the node exited, at every read. */
    @Test
    void aCountPastTheEntrysEndIsCorruptionNotAnAllocation() throws IOException {
        byte[] corrupt = format2(0x7FFFFFF0);
        assertThatThrownBy(() -> VersionEntry.decode(corrupt)).hasStackTraceContaining("corrupt index entry: a count of 2147483632");
        VersionEntry withType = VersionEntry.current("doc", 7, 40, 10, 99, List.of(new Extent(40, 1)), new Attributes("image/png", Map.of()));
        byte[] b = withType.encode();
        int at = new String(b, java.nio.charset.StandardCharsets.ISO_8859_1).indexOf("image/png") - 4; // its length before it
        java.nio.ByteBuffer.wrap(b).putInt(at, 0x7FFFFFF0);
        assertThatThrownBy(() -> VersionEntry.decode(b)).hasStackTraceContaining("corrupt index entry");
    }

    /** An entry as the release before attributes wrote it, with {@code extents} as its extent count. */
    private static byte[] format2(int extents) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeByte(2);
            out.writeUTF("doc");
            out.writeLong(7);    // version
            out.writeLong(40);   // root page
            out.writeLong(5000); // length
            out.writeInt(99);    // crc
            out.writeLong(1234); // created at
            out.writeByte(0);    // current
            out.writeLong(-1);
            out.writeLong(0);
            out.writeBoolean(false);
            out.writeInt(extents);
            out.writeLong(40);
            out.writeInt(2);
            out.writeInt(0);     // retained
        }
        return bytes.toByteArray();
    }

    @Test
    void attributesAnHttpHeaderCannotCarryAreNamed() {
        assertThat(new Attributes("text/plain; charset=utf-8", Map.of("owner", "Ann Lee", "x.y_z-1", "ok")).problem()).isNull();
        assertThat(new Attributes("text/plain\r\nX: y", Map.of()).problem()).contains("content type").contains("\\r\\n");
        assertThat(new Attributes(null, Map.of("", "v")).problem()).contains("metadata key \"\"");
        assertThat(new Attributes(null, Map.of("k", "é")).problem()).contains("metadata k has characters");
        // stored as given but read back without them: every HTTP reader strips a field value's surrounding spaces
        assertThat(new Attributes(null, Map.of("k", " draft")).problem()).contains("metadata k has").contains("space at either end");
        assertThat(new Attributes(null, Map.of("k", "draft ")).problem()).contains("space at either end");
        assertThat(new Attributes(" text/plain", Map.of()).problem()).contains("content type");
        assertThat(new Attributes(null, Map.of("k", "", "j", "a b")).problem()).isNull();
        assertThat(new Attributes(null, Map.of("k", "v".repeat(Attributes.MAX_BYTES))).problem()).contains("over " + Attributes.MAX_BYTES);
        assertThat(Attributes.of("", Map.of())).isSameAs(Attributes.NONE);
        assertThat(new Attributes(null, Map.of("k", "v".repeat(100))).problem()).isNull();
        assertThat(new Attributes(null, Map.of("k", "v".repeat(Attributes.MAX_BYTES - 21))).problem()).contains("bytes of headers");
    }

    /** HTTP header names are case-insensitive, and the JDK's server sends them in lower case but the first letter. */
    @Test
    void metadataKeysAreKeptInLowerCaseTheFirstInSortOrderWinning() {
        assertThat(new Attributes(null, Map.of("Owner", "ann")).metadata()).containsExactly(Map.entry("owner", "ann"));
        assertThat(new Attributes(null, Map.of("a", "2", "A", "1")).metadata()).containsExactly(Map.entry("a", "1"));
    }

    @Test
    void whatAHeaderCannotCarryIsDroppedAndTheRestKept() {
        Attributes given = new Attributes("text/plain\nX: y", Map.of("ok", "1", "bad key", "2", "nl", "a\nb", "big", "v".repeat(9000)));
        assertThat(given.headerSafe()).isEqualTo(new Attributes(null, Map.of("ok", "1")));
        assertThat(given.headerSafe().problem()).isNull();
        Attributes fine = new Attributes("image/png", Map.of("owner", "ann"));
        assertThat(fine.headerSafe()).isEqualTo(fine);
        assertThat(new Attributes(" text/plain ", Map.of("k", " v ", "j", "  ")).headerSafe())
                .as("spaces at either end taken off, as every HTTP reader does").isEqualTo(new Attributes("text/plain", Map.of("k", "v", "j", "")));
        assertThat(new Attributes("  ", Map.of()).headerSafe()).isSameAs(Attributes.NONE);
        // a content type over the limit on its own was kept, and the value refused for it
        Attributes longType = new Attributes("x".repeat(9000), Map.of("ok", "1"));
        assertThat(longType.headerSafe()).isEqualTo(new Attributes(null, Map.of("ok", "1")));
        assertThat(longType.headerSafe().problem()).isNull();
    }
}
