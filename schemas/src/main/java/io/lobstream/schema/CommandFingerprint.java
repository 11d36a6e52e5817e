package io.lobstream.schema;

import io.lobstream.avro.LobCommand;
import io.lobstream.avro.LobOp;

/**
 * What a command asks for, in a number the writer keeps with its id: the op, where, how long, the
 * CRC32C its sender gave its bytes (which the writer checked) and, for a piece of a write, the
 * fingerprint of the piece before it. Sent again as it was, a command has the same; a command that
 * reuses the id of another (an idempotency key reused for another write) most likely not. For an
 * upload, its last chunk's: the whole value's length and CRC32C. For an ABORT, the upload it names.
 *
 * <p>Here, next to the schema, because both sides compute it: the writer to tell a command sent
 * twice from another under the same id, the client to name the piece before a piece
 * ({@code afterFingerprint}) as it sent it.
 */
public final class CommandFingerprint {
    private CommandFingerprint() {
    }

    /** Never 0, which says "none recorded". */
    public static long of(LobCommand cmd) {
        long h = hash(cmd);
        if (cmd.getAfterFingerprint() != null) {
            // only when present: a command without it keeps the fingerprint the releases before this field gave it
            h = 31 * h + cmd.getAfterFingerprint();
        }
        return h == 0 ? 1 : h;
    }

    /**
     * What a client of a release before {@code afterFingerprint} (session 45) made {@link #of} the same command without
     * the field: the command's own fields alone.
     */
    public static long withoutChain(LobCommand cmd) {
        long h = hash(cmd);
        return h == 0 ? 1 : h;
    }

    private static long hash(LobCommand cmd) {
        long h = 1125899906842597L;
        boolean chunk = cmd.getUploadId() != null; // the whole value's, not how lob.chunk.size cut it
        // the op's ordinal: LobOp's symbols may only be added at the end (Avro would allow another order, and the
        // fingerprints clients send and the index keeps would then change between releases; CommandFingerprintTest)
        for (long v : new long[]{cmd.getOp().ordinal(), chunk ? 0 : cmd.getOffset(), cmd.getTotalLength(),
                chunk ? 0 : cmd.getData().remaining(), cmd.getCrc32c() == null ? -1 : cmd.getCrc32c() & 0xffffffffL}) {
            h = 31 * h + v;
        }
        if (cmd.getOp() == LobOp.ABORT) { // what it aborts is all it asks: one id reused for another upload's is another
            h = 31 * h + String.valueOf(cmd.getUploadId()).hashCode();
        }
        return h;
    }
}
