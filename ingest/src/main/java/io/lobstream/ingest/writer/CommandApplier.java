package io.lobstream.ingest.writer;

import io.lobstream.avro.LobCommand;
import io.lobstream.avro.LobOp;
import io.lobstream.schema.CommandFingerprint;
import io.lobstream.schema.DeadLetterTopic;
import io.lobstream.store.LogOncePerMinute;
import io.lobstream.schema.Topics;
import io.lobstream.store.Chunk;
import io.lobstream.store.ChunkResult;
import io.lobstream.store.LobStore;
import io.lobstream.store.Source;
import io.lobstream.store.ValueChecksumException;
import io.lobstream.store.ValueTooLargeException;
import io.lobstream.store.index.Attributes;
import io.lobstream.store.index.Rejection;
import io.lobstream.store.index.VersionEntry;
import io.lobstream.store.layout.ByteBufferInputStream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.zip.CRC32C;

/**
 * Applies one {@link LobCommand} to a tablespace and says what came of it. It knows nothing of
 * Kafka Streams: the writer topology ({@link CommandProcessor}) and offline replay use it alike.
 *
 * <p>Every command is checked before it touches the store; a command that cannot be applied is
 * {@link Rejected} with a kind (the dead-letter header {@code lob.dlq.kind}) and a reason:
 * {@code invalid}, {@code too-large}, {@code out-of-range}, {@code not-found},
 * {@code crc-mismatch}, {@code upload} (a chunk that does not continue its upload),
 * {@code out-of-order} (a piece of a write whose piece before was not applied),
 * {@code unsupported} or {@code id-conflict} (an id applied before, sent again as another write).
 */
public final class CommandApplier {
    private static final Logger log = LoggerFactory.getLogger(CommandApplier.class);
    /** What {@link #sayDropped} says, in the whole process: a producer's every PUT, or a rebuild, drops them alike. */
    private static final LogOncePerMinute DROPPED_SAID = new LogOncePerMinute();
    /** What a refusal by the tablespace says: a rebuild replaying a run of those would otherwise write a trace for each. */
    private static final LogOncePerMinute REFUSED_SAID = new LogOncePerMinute();

    /** What came of a command. */
    public sealed interface Outcome permits Applied, ChunkAccepted, AlreadyApplied, Duplicate, Rejected {
    }

    /** Applied; {@code superseded} is the version it replaced or deleted, now pending purge. */
    public record Applied(LobOp op, Optional<VersionEntry> superseded) implements Outcome {
    }

    /** A chunk of an upload was written; the value is published with the last chunk. */
    public record ChunkAccepted() implements Outcome {
    }

    /**
     * The command's offset was applied before a restart: nothing is applied again, but the undo
     * records it produced may have been lost with an aborted transaction, so these are to be
     * produced again.
     */
    public record AlreadyApplied(List<VersionEntry> undoToReemit) implements Outcome {
    }

    /** A command with this commandId (or this chunk of its upload) was applied already: sent twice. */
    public record Duplicate(String commandId) implements Outcome {
    }

    /** Not applicable; nothing changed. */
    public record Rejected(String kind, String reason) implements Outcome {
    }

    private final long maxValueBytes;
    private final int partitions;
    private final long dedupeWindowMs;

    /**
     * @param partitions     of lob.commands: a command must be on the partition its key hashes to
     * @param dedupeWindowMs a command whose commandId was applied less than this long before the latest command time
     *                       of its partition (record timestamps), is a duplicate ({@code lob.command.dedupe.window.ms})
     */
    public CommandApplier(long maxValueBytes, int partitions, long dedupeWindowMs) {
        this.maxValueBytes = maxValueBytes;
        this.partitions = partitions;
        this.dedupeWindowMs = dedupeWindowMs;
    }

    /**
     * Applies {@code cmd}, read from {@code partition} of lob.commands with {@code key} and
     * {@code timestamp} (the record's), to the partition's tablespace.
     */
    public Outcome apply(LobCommand cmd, byte[] key, int partition, long timestamp, LobStore store, Source source) throws IOException {
        // first what the store decided when it read the command before (a restart): applied, or refused and why. Judged
        // again, a command applied before a crash could be refused by a writer with a lower limit (and a redrive then
        // apply it twice), or one refused be taken by a writer with a higher one
        if (source.offset() <= store.appliedOffset(source.name())) {
            // came again after a restart: rejected again if it was rejected (its dead letter may have been
            // aborted with the transaction, and the store has moved on: the check would not say the same)
            Optional<Rejection> rejected = store.rejection(source);
            if (rejected.isPresent()) {
                // stamped again: it must outlive the transaction of the dead letter sent again now, not only the first
                // one's, or housekeeping after a long outage forgets it before that commits, and an abort then loses both
                store.recordRejected(source, rejected.get());
                return new Rejected(rejected.get().kind(), rejected.get().reason());
            }
            // the version it superseded, if purge has not reclaimed it: a version of its LOB, the one it wrote. Not a scan
            // of the whole history for each command a restart reads again, which with purge away is millions of versions
            List<VersionEntry> undo = new ArrayList<>();
            for (VersionEntry e : store.pendingOf(cmd.getLobId())) {
                if (e.sourceOffset() == source.offset() && !e.reclaimRequested()) {
                    undo.add(e);
                }
            }
            return new AlreadyApplied(undo);
        }
        Rejected invalid = validate(cmd, key, partition);
        if (invalid != null) {
            // recorded, not only skipped: read again after a crash (its dead letter aborted), it is refused again
            store.recordRejected(source, new Rejection(invalid.kind(), invalid.reason()));
            return invalid;
        }
        long commandsTime = CommandTime.latest(store, source.name(), timestamp);
        long windowStart = commandsTime - dedupeWindowMs;
        String mark = appliedMark(cmd, true);
        OptionalLong before = mark == null ? OptionalLong.empty() : store.commandApplied(mark, windowStart);
        if (before.isEmpty() && isChunk(cmd) && cmd.getCommandId() != null && !cmd.getCommandId().isEmpty()) {
            // the release before remembered each chunk by its commandId, not its upload by its id: a chunk it applied
            // within the window, sent again, is still a duplicate (else its upload would begin again, and publish twice)
            before = store.commandApplied(cmd.getCommandId(), windowStart);
        }
        if (before.isPresent()) {
            long fingerprint = CommandFingerprint.of(cmd);
            if (before.getAsLong() != fingerprint && sentBeforeChains(cmd, before.getAsLong(), windowStart, store)) {
                // the same piece, which a client of a release before afterFingerprint applied, sent again by a newer one:
                // a duplicate, its mark taken to the fingerprint its next piece names (else that one would be refused)
                store.recordSkipped(source.withCommandId(mark, fingerprint));
                return new Duplicate(cmd.getCommandId());
            }
            if (before.getAsLong() != 0 && comparable(cmd) && before.getAsLong() != fingerprint) {
                Rejected conflict = new Rejected(Rejection.ID_CONFLICT, (isChunk(cmd) ? "upload " + cmd.getUploadId()
                        : "commandId " + cmd.getCommandId()) + " was applied before as another write (other bytes, offset or "
                        + "length): an id, or an idempotency key, names one write; a new write needs a new one");
                store.recordRejected(source, new Rejection(conflict.kind(), conflict.reason()));
                return conflict;
            }
            store.recordSkipped(source);
            return new Duplicate(cmd.getCommandId());
        }
        Outcome outcome = applyNew(cmd, commandsTime, windowStart, store, source);
        if (outcome instanceof Rejected r && store.rejection(source).isEmpty()) { // a refused chunk: recorded by the store
            store.recordRejected(source, new Rejection(r.kind(), r.reason()));
        }
        return outcome;
    }

    /** Applies a command the store has not seen: its checks against the store's state, then the change. */
    private Outcome applyNew(LobCommand cmd, long commandsTime, long windowStart, LobStore store, Source source) throws IOException {
        Source tagged = source.withCommandId(appliedMark(cmd, false), CommandFingerprint.of(cmd));
        String id = cmd.getLobId();
        // the command's bytes are read where Avro decoded them, not copied again
        ByteBuffer data = cmd.getData().duplicate();
        int length = data.remaining();
        try {
            switch (cmd.getOp()) {
                case PUT:
                    if (cmd.getUploadId() != null) {
                        return chunk(cmd, data, commandsTime, store, tagged);
                    }
                    return new Applied(LobOp.PUT, store.put(id, new ByteBufferInputStream(data), length, cmd.getCrc32c(),
                            attributes(cmd, true), tagged).superseded());
                case WRITE:
                case APPEND: {
                    Rejected outOfOrder = pieceBeforeMissing(cmd, windowStart, store);
                    if (outOfOrder != null) {
                        return outOfOrder;
                    }
                    Optional<VersionEntry> base = store.current(id);
                    long current = base.map(VersionEntry::byteLength).orElse(0L);
                    long at = cmd.getOp() == LobOp.APPEND ? current : cmd.getOffset();
                    if (at > current) {
                        return new Rejected(Rejection.OUT_OF_RANGE, "WRITE at offset " + at + " of " + id + ", which has " + current + " bytes");
                    }
                    // the length it leaves the LOB, which a write inside a value already over a lowered limit keeps; a 0-byte
                    // write to a LOB that exists changes no byte, and is applied as nothing below, whatever its length
                    long reaches = Math.max(current, at + length);
                    if (reaches > maxValueBytes && !(length == 0 && base.isPresent())) {
                        return tooLarge(id, reaches);
                    }
                    if (cmd.getCrc32c() != null && cmd.getCrc32c() != crc(data)) {
                        return new Rejected(Rejection.CRC_MISMATCH, new ValueChecksumException(id, cmd.getCrc32c(), crc(data)).getMessage());
                    }
                    if (length == 0 && base.isPresent()) {
                        return unchanged(cmd, store, tagged);
                    }
                    return new Applied(cmd.getOp(), store.write(id, at, new ByteBufferInputStream(data), length, tagged).superseded());
                }
                case TRUNCATE: {
                    Optional<VersionEntry> cur = store.current(id);
                    if (cur.isEmpty()) {
                        return new Rejected(Rejection.NOT_FOUND, "TRUNCATE of " + id + ", which does not exist");
                    }
                    if (cmd.getTotalLength() > cur.get().byteLength()) {
                        return new Rejected(Rejection.OUT_OF_RANGE, "TRUNCATE of " + id + " to " + cmd.getTotalLength() + " bytes; it has "
                                + cur.get().byteLength());
                    }
                    if (cmd.getTotalLength() == cur.get().byteLength()) {
                        return unchanged(cmd, store, tagged);
                    }
                    return new Applied(LobOp.TRUNCATE, store.truncate(id, cmd.getTotalLength(), tagged).superseded());
                }
                case DELETE:
                    return new Applied(LobOp.DELETE, store.delete(id, tagged));
                case ABORT:
                    // none to drop (finished, expired, never begun: its first chunk refused) is no fault of the command
                    store.abortUpload(id, cmd.getUploadId(), tagged);
                    return new Applied(LobOp.ABORT, Optional.empty());
                default:
                    return new Rejected(Rejection.UNSUPPORTED, "op " + cmd.getOp());
            }
        } catch (ValueChecksumException e) {
            return new Rejected(Rejection.CRC_MISMATCH, e.getMessage());
        } catch (ValueTooLargeException e) {
            return new Rejected(Rejection.TOO_LARGE, e.getMessage()); // more than the tablespace's page size can address
        } catch (IllegalArgumentException e) {
            // the tablespace refused what no check above caught: thrown out of the task, the command would fail it at
            // every restart (and a replay of the partition at every try); as a rejection it is recorded and dead-lettered
            long notSaid = REFUSED_SAID.sayNow(e.getClass().getName()); // a refusal of another kind is said at once
            if (notSaid >= 0) {
                log.error("{}: the tablespace refused the command at {}; dead-lettered{}", id, source,
                        notSaid == 0 ? "" : " (and " + notSaid + " other commands since this was last said)", e);
            }
            return invalid("refused by the tablespace: " + TaskRetries.messages(e));
        }
    }

    /**
     * A command that changes no byte of a LOB that exists (a write or append of 0 bytes, a truncate to its length): applied
     * as nothing, its id and offset recorded. A new version would serve a new ETag for the same bytes (a client's If-Match
     * failing, its cache read again), add history for purge, and lose the value's whole CRC32C (a partial update's pages
     * are shared), all for no change.
     */
    private static Outcome unchanged(LobCommand cmd, LobStore store, Source tagged) throws IOException {
        store.recordSkipped(tagged);
        return new Applied(cmd.getOp(), Optional.empty());
    }

    /**
     * Why a piece of a write of several may not be applied: the piece before it ({@code after}) was not, within the
     * window. The client sends a write's pieces without waiting for each other's acknowledgement; one that expired in its
     * producer's buffer (a broker away) would let the next be delivered without it, and an APPEND applied where the lost
     * piece belonged. Refused, it and every piece after it are dead-lettered, and what is applied stays a prefix of the
     * write. A piece sent again (a retry under the same idempotency key) names the same piece before, applied by then.
     * With {@code afterFingerprint}, the piece before must have been applied as this try sent it: a retry with other
     * bytes has its first piece refused as id-conflict, and its next, never applied, would otherwise follow the first
     * try's piece. That one is refused as id-conflict too, and so on down the chain (each piece's fingerprint holds the
     * one before).
     */
    private Rejected pieceBeforeMissing(LobCommand cmd, long windowStart, LobStore store) throws IOException {
        String after = cmd.getAfter();
        if (after == null) {
            return null;
        }
        OptionalLong before = store.commandApplied(escaped(after), windowStart);
        Long expected = cmd.getAfterFingerprint();
        if (before.isPresent() && expected != null && before.getAsLong() != 0 && before.getAsLong() != expected) {
            // a retry under the same idempotency key with other bytes: its first piece was refused (id-conflict), and this
            // one, never applied, would otherwise follow the first try's piece and splice the two writes together
            return new Rejected(Rejection.ID_CONFLICT, cmd.getOp() + " " + cmd.getCommandId() + " of " + cmd.getLobId()
                    + " follows command " + after + ", which was applied as another write (other bytes, offset or length): an "
                    + "idempotency key names one write; a new write needs a new one");
        }
        if (before.isPresent()) {
            return null;
        }
        return new Rejected(Rejection.OUT_OF_ORDER, cmd.getOp() + " " + cmd.getCommandId() + " of " + cmd.getLobId()
                + " follows command " + after + ", which was not applied (lost, dead-lettered, or more than "
                + "lob.command.dedupe.window.ms before): the pieces of a write apply in order, so this one and those after it are not");
    }

    /**
     * Whether {@code cmd}, a piece that names the fingerprint of the piece before, is the piece a client of a release
     * before that field applied ({@code recorded}, its mark's fingerprint, is the piece's own fields' alone), the piece
     * before being this write's: a retry across the upgrade, within the window, goes on where the first run stopped.
     */
    private boolean sentBeforeChains(LobCommand cmd, long recorded, long windowStart, LobStore store) throws IOException {
        return cmd.getAfterFingerprint() != null && recorded == CommandFingerprint.withoutChain(cmd)
                && pieceBeforeMissing(cmd, windowStart, store) == null;
    }

    /**
     * @param commandsTime when the chunk came, as its upload's idle time is measured ({@link CommandTime#latest}): not its
     *                     own time, which may be behind, or the upload would lose the difference from its timeout
     */
    private Outcome chunk(LobCommand cmd, ByteBuffer data, long commandsTime, LobStore store, Source source) throws IOException {
        Chunk chunk = new Chunk(cmd.getUploadId(), cmd.getLobId(), cmd.getTotalLength(), cmd.getChunkIndex(), cmd.getChunkCount(),
                cmd.getOffset(), data.remaining(), cmd.getCrc32c(), commandsTime,
                attributes(cmd, cmd.getChunkIndex() == cmd.getChunkCount() - 1));
        ChunkResult r = store.putChunk(chunk, new ByteBufferInputStream(data), source);
        switch (r.status()) {
            case ACCEPTED:
                return new ChunkAccepted();
            case PUBLISHED:
                return new Applied(LobOp.PUT, r.published().orElseThrow().superseded());
            case DUPLICATE:
                return new Duplicate(cmd.getCommandId());
            case CHECKSUM_MISMATCH:
                return new Rejected(Rejection.CRC_MISMATCH, r.reason());
            default:
                return new Rejected(Rejection.UPLOAD, r.reason());
        }
    }

    /** The problem with a command that no store state can fix, or null. */
    private Rejected validate(LobCommand cmd, byte[] key, int partition) {
        if (cmd.getLobId() == null || cmd.getLobId().isEmpty()) {
            return invalid("lobId is empty");
        }
        // before any reason names the id: one of a megabyte would make the dead letter larger than a record may be
        for (String[] id : new String[][]{{"lobId", cmd.getLobId()}, {"uploadId", cmd.getUploadId()}}) {
            try {
                if (id[1] != null) {
                    LobStore.checkId(id[0], id[1]);
                }
            } catch (IllegalArgumentException tooLong) {
                return invalid(tooLong.getMessage());
            }
        }
        // a LOB lives in the tablespace of the partition its id hashes to: reads, undo records and
        // reclaims go there, so a command anywhere else would make a copy nothing reads or purges
        if (key == null) {
            return invalid("record has no key (the key must be the lobId " + cmd.getLobId() + ")");
        }
        if (!Arrays.equals(key, cmd.getLobId().getBytes(StandardCharsets.UTF_8))) {
            return invalid("record key does not match lobId " + cmd.getLobId() + " (it would land in the wrong partition)");
        }
        int home = Topics.partitionOf(key, partitions);
        if (home != partition) {
            // the mark redrive knows these by comes before the lobId, which may be long enough to be cut off with it
            return invalid("record on partition " + partition + ", but its lobId" + DeadLetterTopic.OFF_ITS_PARTITION + home
                    + " (sent with a partitioner other than Kafka's default): lobId " + cmd.getLobId());
        }
        if (cmd.getOffset() < 0 || cmd.getTotalLength() < 0) {
            return invalid("negative offset " + cmd.getOffset() + " or length " + cmd.getTotalLength());
        }
        int n = cmd.getData().remaining();
        boolean chunked = cmd.getUploadId() != null;
        if (!chunked && (cmd.getChunkCount() != 1 || cmd.getChunkIndex() != 0)) {
            return invalid("chunk " + cmd.getChunkIndex() + " of " + cmd.getChunkCount() + " without an uploadId");
        }
        if (cmd.getChunkCount() < 1 || cmd.getChunkIndex() < 0 || cmd.getChunkIndex() >= cmd.getChunkCount()) {
            return invalid("chunk " + cmd.getChunkIndex() + " of " + cmd.getChunkCount());
        }
        if (cmd.getAfter() != null && (chunked || cmd.getOp() != LobOp.WRITE && cmd.getOp() != LobOp.APPEND
                || cmd.getAfter().isEmpty() || cmd.getAfter().equals(cmd.getCommandId()))) {
            return invalid("after " + cmd.getAfter() + ": only a WRITE or APPEND of a write in pieces names the piece before it, "
                    + "by another, non-empty commandId");
        }
        if (cmd.getAfterFingerprint() != null && cmd.getAfter() == null) {
            return invalid("afterFingerprint without after: it is the fingerprint of the piece named there");
        }
        switch (cmd.getOp()) {
            case PUT:
                if (cmd.getTotalLength() > maxValueBytes) {
                    return tooLarge(cmd.getLobId(), cmd.getTotalLength());
                }
                if (!chunked && cmd.getTotalLength() != n) {
                    return invalid("totalLength " + cmd.getTotalLength() + " but the command carries " + n + " bytes");
                }
                if (chunked && cmd.getOffset() > cmd.getTotalLength() - n) { // not offset + n, which a huge offset wraps
                    return invalid("chunk bytes " + cmd.getOffset() + "+" + n + " run past totalLength " + cmd.getTotalLength());
                }
                return null;
            case WRITE:
            case APPEND:
                if (chunked) {
                    return new Rejected(Rejection.UNSUPPORTED, cmd.getOp() + " in chunks: send writes of up to lob.chunk.size bytes each");
                }
                return cmd.getTotalLength() == n ? null
                        : invalid("totalLength " + cmd.getTotalLength() + " but the command carries " + n + " bytes");
            case TRUNCATE:
            case DELETE:
                return chunked || n > 0 ? invalid(cmd.getOp() + " carries data or chunks") : null;
            case ABORT:
                return !chunked || n > 0 ? invalid("ABORT names the upload it drops by its uploadId, and carries no data") : null;
            default:
                return new Rejected(Rejection.UNSUPPORTED, "op " + cmd.getOp());
        }
    }

    /**
     * A PUT's content type and metadata (an upload's: its last chunk's), less what an HTTP header cannot
     * carry. LobClient and the CLI refuse such attributes before sending; from another producer, or in
     * commands an older writer applied (replayed to rebuild a partition), the value is kept and they
     * are dropped, so that every copy of a partition holds the same values. Said for the command that publishes the
     * value ({@code publishes}), not for each chunk of its upload.
     */
    private static Attributes attributes(LobCommand cmd, boolean publishes) {
        Attributes given = Attributes.of(cmd.getContentType(), cmd.getMetadata());
        Attributes safe = given.headerSafe();
        if (publishes && !safe.equals(given)) {
            sayDropped(cmd.getLobId(), given.problem());
        }
        return safe;
    }

    /**
     * Says a value's dropped attributes: once a minute at most, with how many others were dropped meanwhile. A producer
     * sending them with every PUT, or a rebuild replaying a history of those, would otherwise write a line per command.
     */
    private static void sayDropped(String lobId, String problem) {
        long notSaid = DROPPED_SAID.sayNow("dropped");
        if (notSaid >= 0) {
            log.warn("{}: content type or metadata dropped: {}{}", lobId, problem,
                    notSaid == 0 ? "" : " (and of " + notSaid + " other values since this was last said)");
        }
    }

    private static Rejected invalid(String reason) {
        return new Rejected(Rejection.INVALID, reason);
    }

    private Rejected tooLarge(String id, long length) {
        return new Rejected(Rejection.TOO_LARGE, id + " would be " + length + " bytes, over lob.value.max.bytes " + maxValueBytes);
    }

    private static int crc(ByteBuffer data) {
        CRC32C c = new CRC32C();
        c.update(data.duplicate());
        return (int) c.getValue();
    }

    /**
     * What the store remembers of {@code cmd} once it is applied, for {@code lob.command.dedupe.window.ms}: a command's
     * commandId, so that the same command sent again is a duplicate; for a chunk of an upload, the upload's id once its
     * last chunk published it, and nothing before (the upload's own entry tells a chunk sent again while it is open).
     * Not each chunk's commandId: an upload that expired or whose checksum failed would then keep refusing a retry that
     * sends its chunks with the same ids ({@code LobClient.idempotent}) as duplicates up to where the first try got, and
     * dead-letter the rest as chunks of an unknown upload; as it is, the retry starts the upload again.
     *
     * @param asked {@code true} for the mark to look up for any chunk; {@code false} for the one to record, only on the last
     * @return null if nothing is remembered
     */
    private static String appliedMark(LobCommand cmd, boolean asked) {
        if (isChunk(cmd)) {
            return asked || cmd.getChunkIndex() == cmd.getChunkCount() - 1 ? UPLOAD_FINISHED + cmd.getUploadId() : null;
        }
        String id = emptyToNull(cmd.getCommandId());
        return id == null ? null : escaped(id);
    }

    /** What the store remembers of a command by {@code commandId}. */
    private static String escaped(String commandId) {
        // never an upload's mark, and one to one: what begins with the mark's prefix or with the escape is escaped
        return commandId.startsWith(UPLOAD_FINISHED) || commandId.startsWith("\0") ? "\0" + commandId : commandId;
    }

    /** Whether {@code cmd}'s fingerprint is that of what its mark remembers: a command's own; an upload's last chunk's. */
    private static boolean comparable(LobCommand cmd) {
        return !isChunk(cmd) || cmd.getChunkIndex() == cmd.getChunkCount() - 1;
    }

    /** A chunk of an upload, remembered by its upload; an ABORT names one, but is remembered by its own commandId. */
    private static boolean isChunk(LobCommand cmd) {
        return cmd.getUploadId() != null && cmd.getOp() != LobOp.ABORT;
    }

    /** Before an upload's id in what the store remembers of applied commands; a commandId that begins so is told apart. */
    static final String UPLOAD_FINISHED = "upload finished ";

    private static String emptyToNull(String s) {
        return s == null || s.isEmpty() ? null : s;
    }
}
