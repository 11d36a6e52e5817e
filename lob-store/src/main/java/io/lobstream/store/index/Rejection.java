package io.lobstream.store.index;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * Why a command was not applied, recorded with its offset (see {@link LobIndex.Batch#putRejected}),
 * so that the rejection can be reported again when the command comes again after a restart.
 *
 * @param kind   for programs (the dead-letter kind)
 * @param reason for people
 */
public record Rejection(String kind, String reason) {
    // The kinds, each a dead letter's lob.dlq.kind header and a tag of lob_commands_dead_lettered_total (README, Bad input).
    /** Not Avro in the registry's framing, or an op the writer does not know. */
    public static final String UNDECODABLE = "undecodable";
    /** Fields the command's op cannot take, or anything else the tablespace refuses. */
    public static final String INVALID = "invalid";
    /** A value over lob.value.max.bytes, or over what the page layout addresses. */
    public static final String TOO_LARGE = "too-large";
    /** A WRITE past the LOB's end, a TRUNCATE to more than its length. */
    public static final String OUT_OF_RANGE = "out-of-range";
    /** A TRUNCATE of a LOB that does not exist. */
    public static final String NOT_FOUND = "not-found";
    /** An op the writer knows but does not take in this form (a chunked WRITE or APPEND). */
    public static final String UNSUPPORTED = "unsupported";
    /** A chunk of an unknown or expired upload, out of order, or not matching its upload (recorded by the store itself). */
    public static final String UPLOAD = "upload";
    /** A value's or data's CRC32C does not match (recorded by the store itself for chunks). */
    public static final String CRC_MISMATCH = "crc-mismatch";
    /** A piece of a WRITE or APPEND whose piece before ({@code LobCommand.after}) was not applied: lost, refused or forgotten. */
    public static final String OUT_OF_ORDER = "out-of-order";
    /** A commandId (or an upload's id) applied before, sent again as another write: a reused id or idempotency key. */
    public static final String ID_CONFLICT = "id-conflict";
    /** Every kind above. */
    public static final List<String> KINDS = List.of(UNDECODABLE, INVALID, TOO_LARGE, OUT_OF_RANGE, NOT_FOUND, UNSUPPORTED, UPLOAD,
            CRC_MISMATCH, OUT_OF_ORDER, ID_CONFLICT);

    byte[] encode(long atMillis) {
        byte[] k = kind.getBytes(StandardCharsets.UTF_8);
        byte[] r = reason.getBytes(StandardCharsets.UTF_8);
        return ByteBuffer.allocate(8 + 2 + k.length + r.length).putLong(atMillis).putShort((short) k.length).put(k).put(r).array();
    }

    static Rejection decode(byte[] b) {
        ByteBuffer in = ByteBuffer.wrap(b);
        in.getLong(); // when it was recorded
        byte[] k = new byte[in.getShort()];
        in.get(k);
        byte[] r = new byte[in.remaining()];
        in.get(r);
        return new Rejection(new String(k, StandardCharsets.UTF_8), new String(r, StandardCharsets.UTF_8));
    }
}
