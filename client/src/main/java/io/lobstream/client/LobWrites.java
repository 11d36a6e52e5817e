package io.lobstream.client;

import io.lobstream.client.LobClient.Progress;

import java.io.IOException;
import java.io.InputStream;
import java.util.Map;

/**
 * The write calls: {@link LobClient} itself, whose every call is a new write, and
 * {@link LobClient#idempotent(String)}, whose calls may be retried. {@link LobClient} says what each does.
 *
 * <p>A call given an {@link InputStream} reads exactly {@code length} bytes of it before it returns (none if it is refused,
 * or the client was told to stop sending; fewer if a record fails, or the stop comes, part-way), and leaves it open: the
 * caller closes it, and may read on past {@code length}.
 */
public interface LobWrites {
    /** A whole value held in memory, without metadata. */
    default LobWrite put(String lobId, byte[] value, String contentType) {
        return put(lobId, value, contentType, Map.of());
    }

    /** A whole value held in memory; {@code metadata} is served back as {@code X-LobStream-Meta-KEY} headers. */
    LobWrite put(String lobId, byte[] value, String contentType, Map<String, String> metadata);

    /** {@code length} bytes of {@code value} as the LOB's new value, without metadata. */
    default LobWrite put(String lobId, InputStream value, long length, String contentType, Progress progress) throws IOException {
        return put(lobId, value, length, contentType, Map.of(), progress);
    }

    /** {@code length} bytes of {@code value} as the LOB's new value, chunked over {@code lob.chunk.size}. */
    LobWrite put(String lobId, InputStream value, long length, String contentType, Map<String, String> metadata, Progress progress)
            throws IOException;

    /** Overwrites {@code length} bytes at {@code offset} (at most the LOB's length). */
    LobWrite write(String lobId, long offset, InputStream data, long length, Progress progress) throws IOException;

    /** Appends {@code length} bytes. */
    LobWrite append(String lobId, InputStream data, long length, Progress progress) throws IOException;

    /** Cuts the LOB to {@code newLength} bytes. */
    LobWrite truncate(String lobId, long newLength);

    /** Deletes the LOB. */
    LobWrite delete(String lobId);
}
