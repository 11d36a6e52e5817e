package io.lobstream.store;

import io.lobstream.store.index.Attributes;

/**
 * One chunk of a chunked PUT (an upload): bytes {@code [offset, offset + length)} of a value of
 * {@code totalLength} bytes sent in {@code chunkCount} chunks, in order.
 *
 * @param crc32c      if not null (on the last chunk), the whole value's CRC32C: on mismatch nothing is published
 * @param attributes  the value's content type and metadata: the last chunk's are the version's
 * @param commandsTimeMillis when the chunk came, in the commands' time: the latest record timestamp of its partition so far,
 *                     its own included (a chunk whose time went back counts from that latest): an upload's idleness is measured
 *                     in these times ({@link LobStore#expireUploads(long, long, long)}), so a writer that was down or
 *                     behind does not take the time it lost for a producer that stopped
 */
public record Chunk(String uploadId, String lobId, long totalLength, int chunkIndex, int chunkCount, long offset, long length,
                    Integer crc32c, long commandsTimeMillis, Attributes attributes) {

    public Chunk {
        attributes = attributes == null ? Attributes.NONE : attributes;
    }

    /** A chunk without content type or metadata. */
    public Chunk(String uploadId, String lobId, long totalLength, int chunkIndex, int chunkCount, long offset, long length,
                 Integer crc32c, long commandsTimeMillis) {
        this(uploadId, lobId, totalLength, chunkIndex, chunkCount, offset, length, crc32c, commandsTimeMillis, Attributes.NONE);
    }

    /** A chunk sent now. */
    public Chunk(String uploadId, String lobId, long totalLength, int chunkIndex, int chunkCount, long offset, long length,
                 Integer crc32c) {
        this(uploadId, lobId, totalLength, chunkIndex, chunkCount, offset, length, crc32c, System.currentTimeMillis());
    }

    public boolean last() {
        return chunkIndex == chunkCount - 1;
    }
}
