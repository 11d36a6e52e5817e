package io.lobstream.store;

/**
 * One chunk of a chunked PUT (an upload): bytes {@code [offset, offset + length)} of a value of
 * {@code totalLength} bytes sent in {@code chunkCount} chunks, in order.
 *
 * @param crc32c if not null (on the last chunk), the whole value's CRC32C: on mismatch nothing is published
 */
public record Chunk(String uploadId, String lobId, long totalLength, int chunkIndex, int chunkCount, long offset, long length,
                    Integer crc32c) {

    public boolean last() {
        return chunkIndex == chunkCount - 1;
    }
}
