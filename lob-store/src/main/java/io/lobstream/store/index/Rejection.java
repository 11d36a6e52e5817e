package io.lobstream.store.index;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * Why a command was not applied, recorded with its offset (see {@link LobIndex.Batch#putRejected}),
 * so that the rejection can be reported again when the command comes again after a restart.
 *
 * @param kind   for programs (the dead-letter kind)
 * @param reason for people
 */
public record Rejection(String kind, String reason) {
    /** The kinds the store itself records, for chunks it refuses (in the batch that records them applied). */
    public static final String UPLOAD = "upload";
    public static final String CRC_MISMATCH = "crc-mismatch";
    /** A commandId (or an upload's id) applied before, sent again as another write: a reused id or idempotency key. */
    public static final String ID_CONFLICT = "id-conflict";

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
