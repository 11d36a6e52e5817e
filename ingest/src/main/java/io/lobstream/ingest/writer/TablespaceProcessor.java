package io.lobstream.ingest.writer;

import io.lobstream.store.LobStore;
import io.lobstream.schema.LobSerdes;
import io.lobstream.schema.serde.RegistryUnavailableException;
import io.lobstream.store.Source;
import io.lobstream.store.index.Rejection;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.streams.errors.LockException;
import org.apache.kafka.streams.errors.TaskCorruptedException;
import org.apache.kafka.streams.errors.TaskMigratedException;
import org.apache.kafka.streams.processor.Cancellable;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.processor.api.RecordMetadata;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * What the writer's processors share: decode the record (dead-letter it if that fails), name
 * its source (topic-partition and offset, which the store records as applied) and apply it to
 * the task's tablespace. An I/O failure of the tablespace, or a schema registry that does not
 * answer, is not bad input: it fails the task, which resumes from its last commit, so nothing is
 * lost.
 */
abstract class TablespaceProcessor<T> implements Processor<byte[], byte[], Object, Object> {
    private final Supplier<Deserializer<Object>> deserializers;
    /** Made at each init, closed at each close: Kafka Streams may init a processor again after closing it (a task resumed). */
    private Deserializer<Object> deserializer;
    private final Class<T> type;
    protected final WriterMetrics metrics;
    protected ProcessorContext<Object, Object> context;
    private LobStateStore tablespace;
    /** The offset of the last record this processor saw since its init: within one, offsets only go up. */
    private long lastOffset;
    /**
     * What {@link #every} scheduled since the init, cancelled at the close: Kafka Streams keeps a task's punctuations
     * across a suspend and resume, which inits the processor again, so each resume would add its own beside the last.
     */
    private final List<Cancellable> scheduled = new ArrayList<>();

    TablespaceProcessor(Supplier<Deserializer<Object>> deserializers, Class<T> type, WriterMetrics metrics) {
        this.deserializers = deserializers;
        this.type = type;
        this.metrics = metrics;
    }

    @Override
    public void init(ProcessorContext<Object, Object> context) {
        this.context = context;
        this.deserializer = deserializers.get();
        this.tablespace = context.getStateStore(LobStateStore.NAME);
        this.lastOffset = -1; // a task resumed starts again from its last commit
    }

    /** The offset of the last record this task processed since it started, -1 before the first. */
    protected long lastOffset() {
        return lastOffset;
    }

    /** Each task's processor has a deserializer of its own, and with it a registry client: closed with the task. */
    @Override
    public void close() {
        scheduled.forEach(Cancellable::cancel);
        scheduled.clear();
        if (deserializer != null) {
            deserializer.close();
            deserializer = null;
        }
    }

    @Override
    public final void process(Record<byte[], byte[]> record) {
        RecordMetadata meta = context.recordMetadata().orElseThrow();
        if (meta.offset() < lastOffset) { // (the same record again, after a timeout, is not going back)
            // The consumer went back: its position was past the log's end (the log was cut under it, as an unclean leader
            // election cuts it) and it was reset. New commands at offsets this tablespace applied would be skipped as
            // applied: the task restarts instead, and its start checks the tablespace against the log.
            String why = meta.topic() + " went back from offset " + lastOffset + " to " + meta.offset() + " under a running task "
                    + "(the log was cut: an unclean leader election?)";
            try {
                logWentBack(why);
            } catch (IOException e) {
                throw tablespace.failed(new UncheckedIOException("partition " + meta.partition() + ": " + why, e));
            }
            throw tablespace.failed(new IllegalStateException("partition " + meta.partition() + ": " + why + "; the task restarts "
                    + "to check its tablespace against the log"));
        }
        lastOffset = meta.offset();
        Source source = new Source(meta.topic() + "-" + meta.partition(), meta.offset(), record.timestamp());
        T value;
        try {
            value = LobSerdes.decode(deserializer, meta.topic(), record.value(), type);
        } catch (RegistryUnavailableException e) {
            throw tablespace.failed(e); // not the record's fault: the task fails, waits, and resumes from its last commit
        } catch (RuntimeException e) {
            try {
                undecodable(record, source, "cannot decode a " + type.getSimpleName() + ": " + e.getMessage());
            } catch (IOException io) {
                throw tablespace.failed(new UncheckedIOException("partition " + meta.partition() + " offset " + meta.offset(), io));
            }
            return;
        }
        try {
            apply(record, value, tablespace.store(), source);
        } catch (IOException | RuntimeException e) {
            throw failTask("offset " + meta.offset(), e);
        }
        tablespace.recorded();
    }

    /** The task's tablespace (its Kafka Streams store), for what a processor registers with it. */
    protected LobStateStore tablespace() {
        return tablespace;
    }

    /** Work a punctuator does on the task's tablespace. */
    @FunctionalInterface
    protected interface TaskWork {
        void run(long now) throws IOException;
    }

    /**
     * Schedules {@code work} on the wall clock. Its failure fails the task as a record's does: recorded, so that the
     * task's next init waits ({@link TaskRetries}) instead of failing again at once, round after round.
     */
    protected final Cancellable every(Duration interval, String what, TaskWork work) {
        Cancellable c = context.schedule(interval, PunctuationType.WALL_CLOCK_TIME, now -> {
            try {
                work.run(now);
            } catch (IOException | RuntimeException e) {
                throw failTask(what, e);
            }
        });
        scheduled.add(c);
        return c;
    }

    /** Cancels what {@link #every} scheduled, and forgets it. */
    protected final void cancel(Cancellable scheduledByEvery) {
        scheduledByEvery.cancel();
        scheduled.remove(scheduledByEvery);
    }

    /**
     * The exception that fails the task on {@code e}, its failure recorded. Kafka Streams' own recoveries are not the
     * task's failures and pass unrecorded: a task migrated away (its producer fenced) goes to its new owner; a send
     * that failed on a retriable error (a broker away for a moment) or timed out revives the task from its last commit
     * ({@link TaskCorruptedException}); an init's wait is a {@link LockException}. Recorded, each would make the
     * task's next start wait, longer after every blip.
     */
    private RuntimeException failTask(String where, Exception e) {
        RuntimeException thrown = e instanceof RuntimeException r ? r
                : new UncheckedIOException("partition " + context.taskId().partition() + " " + where, (IOException) e);
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof TaskMigratedException || t instanceof TaskCorruptedException || t instanceof LockException
                    || t instanceof RetriableException) {
                return thrown;
            }
        }
        return tablespace.failed(thrown);
    }

    /**
     * A record that does not decode. Read for the first time, it is dead-lettered and its rejection recorded: read again
     * after a crash (its dead letter aborted) it may decode (a registry restored, a writer upgraded), and must be
     * refused again, not skipped. Read again, what the store decided the first time stands: its rejection again, or
     * nothing for a record the store applied (a writer rolled back, a registry that lost a schema, must not refuse it).
     */
    private void undecodable(Record<byte[], byte[]> record, Source source, String reason) throws IOException {
        LobStore store = tablespace.store();
        if (source.offset() <= store.appliedOffset(source.name())) {
            Optional<Rejection> rejected = store.rejection(source);
            if (rejected.isPresent()) {
                store.recordRejected(source, rejected.get()); // stamped again, as CommandApplier says why
                deadLetter(record, rejected.get().kind(), rejected.get().reason());
            }
            return;
        }
        deadLetter(record, Rejection.UNDECODABLE, reason);
        store.recordRejected(source, new Rejection(Rejection.UNDECODABLE, reason));
    }

    /** What the log going back under the task means for its tablespace, before the task fails: nothing, by default. */
    protected void logWentBack(String why) throws IOException {
    }

    protected LobStore store() {
        return tablespace.store();
    }

    /** Applies one decoded record whose origin is {@code source}. */
    protected abstract void apply(Record<byte[], byte[]> record, T value, LobStore store, Source source) throws IOException;

    protected void deadLetter(Record<byte[], byte[]> record, String kind, String reason) {
        DeadLetters.send(context, record, kind, reason, metrics);
    }
}
