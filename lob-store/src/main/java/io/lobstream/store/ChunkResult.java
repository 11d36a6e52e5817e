package io.lobstream.store;

import java.util.Optional;

/** What became of a chunk. */
public record ChunkResult(Status status, Optional<WriteResult> published, String reason) {

    public enum Status {
        /** written to the upload's pages; more chunks to come */
        ACCEPTED,
        /** the last chunk: the value is the LOB's current version now */
        PUBLISHED,
        /** already applied (a re-sent chunk): nothing changed */
        DUPLICATE,
        /** not applicable to this upload (see {@code reason}); nothing changed */
        REJECTED,
        /** the last chunk, but the value's CRC32C did not match: the upload was dropped and its pages freed */
        CHECKSUM_MISMATCH
    }

    /** A result with no version: any status but PUBLISHED. */
    public static ChunkResult of(Status status) {
        if (status == Status.PUBLISHED) {
            throw new IllegalArgumentException("a published chunk's result carries its version");
        }
        return new ChunkResult(status, Optional.empty(), null);
    }

    public static ChunkResult rejected(String reason) {
        return new ChunkResult(Status.REJECTED, Optional.empty(), reason);
    }
}
