package io.lobstream.ingest.writer;

import io.lobstream.avro.LobCommand;
import io.lobstream.avro.UndoCause;
import io.lobstream.avro.UndoRecord;
import io.lobstream.store.DefaultLobStore;
import io.lobstream.store.Source;
import io.lobstream.store.ValueChecksumException;
import io.lobstream.store.WriteResult;
import io.lobstream.store.index.VersionEntry;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.streams.processor.api.Record;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.ByteArrayInputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Arrays;

/**
 * Applies LobCommands to the task's tablespace and emits an UndoRecord for every version it
 * supersedes.
 *
 * <p><b>Exactly once in effect.</b> The store records, in the same index batch as each command,
 * the offset it came from. Kafka Streams commits the task's offsets and outputs in one
 * transaction after {@link LobStateStore#flush()}. After a crash the transaction is aborted
 * and the commands since the last commit come again: those at or below the recorded offset are
 * not applied again, but the undo records they produced (aborted with the transaction) are
 * produced again from the versions still pending in the index.
 */
final class CommandProcessor extends TablespaceProcessor<LobCommand> {
    private static final Logger log = LoggerFactory.getLogger(CommandProcessor.class);
    static final String UNDO_SINK = "undo-history";

    private final int maxValueBytes;

    CommandProcessor(Deserializer<Object> deserializer, WriterMetrics metrics, int maxValueBytes) {
        super(deserializer, LobCommand.class, metrics);
        this.maxValueBytes = maxValueBytes;
    }

    @Override
    protected void apply(Record<byte[], byte[]> record, LobCommand cmd, DefaultLobStore store, Source source) throws IOException {
        String problem = validate(cmd, record.key(), maxValueBytes);
        if (problem != null) {
            deadLetter(record, problem.substring(0, problem.indexOf(':')), problem);
            return;
        }
        if (source.offset() <= store.appliedOffset(source.name())) {
            reemitUndo(store, source.offset());
            metrics.skipped();
            return;
        }
        try {
            switch (cmd.getOp()) {
                case PUT -> {
                    byte[] data = bytes(cmd.getData());
                    WriteResult r = store.put(cmd.getLobId(), new ByteArrayInputStream(data), data.length, cmd.getCrc32c(), source);
                    r.superseded().ifPresent(old -> emitUndo(old, false));
                }
                case DELETE -> store.delete(cmd.getLobId(), source).ifPresent(old -> emitUndo(old, false));
                default -> throw new IllegalStateException("validated op " + cmd.getOp());
            }
            metrics.applied(cmd.getOp().name());
        } catch (ValueChecksumException e) {
            deadLetter(record, "crc-mismatch", e.getMessage());
        }
    }

    /** Returns "kind: reason" for a command that cannot be applied, or null. Also used by {@link CommandReplay}. */
    static String validate(LobCommand cmd, byte[] key, int maxValueBytes) {
        if (cmd.getLobId() == null || cmd.getLobId().isEmpty()) {
            return "invalid: lobId is empty";
        }
        if (key != null && !Arrays.equals(key, cmd.getLobId().getBytes(StandardCharsets.UTF_8))) {
            return "invalid: record key does not match lobId " + cmd.getLobId() + " (it would land in the wrong partition)";
        }
        switch (cmd.getOp()) {
            case PUT -> {
                if (cmd.getChunkCount() != 1 || cmd.getChunkIndex() != 0) {
                    return "unsupported: chunked uploads are not supported by this writer yet (chunk "
                            + cmd.getChunkIndex() + " of " + cmd.getChunkCount() + ")";
                }
                int n = cmd.getData().remaining();
                if (n > maxValueBytes) {
                    return "too-large: value of " + n + " bytes is over lob.chunk.size " + maxValueBytes;
                }
                if (cmd.getTotalLength() != n) {
                    return "invalid: totalLength " + cmd.getTotalLength() + " but the command carries " + n + " bytes";
                }
                return null;
            }
            case DELETE -> {
                return null;
            }
            default -> {
                return "unsupported: op " + cmd.getOp() + " is not supported by this writer yet";
            }
        }
    }

    private static byte[] bytes(ByteBuffer b) {
        byte[] out = new byte[b.remaining()];
        b.duplicate().get(out);
        return out;
    }

    private void emitUndo(VersionEntry old, boolean reemitted) {
        UndoRecord undo = UndoRecord.newBuilder()
                .setLobId(old.lobId())
                .setVersion(old.version())
                .setRootPage(old.rootPage())
                .setPageCount((int) old.pageCount())
                .setRetained(old.retained().stream().map(e -> new io.lobstream.avro.Extent(e.firstPage(), e.pageCount())).toList())
                .setByteLength(old.byteLength())
                .setCause(old.cause() == VersionEntry.Cause.DELETE ? UndoCause.DELETE : UndoCause.UPDATE)
                .setSourceOffset(old.sourceOffset())
                .setTime(Instant.ofEpochMilli(old.supersededAtMillis()))
                .build();
        context.forward(new Record<Object, Object>(old.lobId(), undo, context.currentSystemTimeMs()), UNDO_SINK);
        metrics.undo(reemitted);
    }

    /** Produces again the undo records of a command applied before the crash whose transaction was aborted. */
    private void reemitUndo(DefaultLobStore store, long offset) {
        store.forEachPending(e -> {
            if (e.sourceOffset() == offset && !e.reclaimRequested()) {
                log.info("re-emitting undo record for {}@{} (command at offset {} was applied before a restart)",
                        e.lobId(), e.version(), offset);
                emitUndo(e, true);
            }
        });
    }
}
