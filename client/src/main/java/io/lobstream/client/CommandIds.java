package io.lobstream.client;

import io.lobstream.avro.LobOp;

import java.nio.charset.StandardCharsets;
import java.util.UUID;

/**
 * The ids one write gives its records: each record's commandId and, for a chunked put, the uploadId. A new write's are
 * random. An idempotent write's ({@link LobClient#idempotent(String)}) are name-based UUIDs of the caller's key, the LOB,
 * the operation and the record's place in the write, so the same write sent again sends the same ids, and the writer,
 * which remembers applied commandIds for {@code lob.command.dedupe.window.ms}, applies each record once. The LOB and the
 * operation are in the name so that one key used for two LOBs, or for a put and then a delete, names two writes.
 *
 * @param key the caller's idempotency key, or null for a new write
 */
record CommandIds(String key, String lobId, LobOp op) {
    static CommandIds fresh(String lobId, LobOp op) {
        return new CommandIds(null, lobId, op);
    }

    /** The commandId of the write's {@code record}-th record (0 for a write of one). */
    String commandId(int record) {
        return key == null ? UUID.randomUUID().toString() : named("command " + record);
    }

    String uploadId() {
        return key == null ? UUID.randomUUID().toString() : named("upload");
    }

    /** Each part with its length before it, so that no two different lists of parts read the same. */
    private String named(String what) {
        StringBuilder name = new StringBuilder("lobstream idempotent write");
        for (String part : new String[]{key, lobId, op.name(), what}) {
            name.append('\n').append(part.length()).append(':').append(part);
        }
        return UUID.nameUUIDFromBytes(name.toString().getBytes(StandardCharsets.UTF_8)).toString();
    }
}
