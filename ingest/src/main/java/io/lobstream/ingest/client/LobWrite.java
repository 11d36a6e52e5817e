package io.lobstream.ingest.client;

import org.apache.kafka.clients.producer.RecordMetadata;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * A write sent by {@link LobClient}: as a future, completed with its last record's metadata
 * once Kafka has acknowledged every record of it; {@link #applied()} for read-your-writes.
 *
 * <p>A put of one record, a truncate and a delete fail with Kafka's exception (or, sent after
 * {@link LobClient#stopSending}, with a {@link WriteStoppedException}: nothing was sent). A write sent in
 * pieces fails with an {@link java.io.IOException} that says what was sent, caused by Kafka's: a
 * chunked put, and every write and append (their pieces apply in order, however few), so test
 * the cause, not the exception, for Kafka's {@code RetriableException}. It completes on a thread of the client's, never on the producer's network
 * thread: stages chained to it may block, or send more writes.
 *
 * <p>Completing or cancelling it yourself changes nothing on the wire: the write goes on.
 */
public final class LobWrite extends CompletableFuture<RecordMetadata> {
    private final LobClient client;
    private final String lobId;
    private final String writeId;
    private final long sentAtMs;
    /** The earliest timestamp Kafka gave the write's records (the broker's, on a topic that stamps append time); -1 before. */
    private volatile long appendedAtMs = -1;

    LobWrite(LobClient client, String lobId, String writeId, long sentAtMs) {
        this.client = client;
        this.lobId = lobId;
        this.writeId = writeId;
        this.sentAtMs = sentAtMs;
    }

    public String lobId() {
        return lobId;
    }

    /** The value of the {@value LobClient#WRITE_HEADER} header on the write's records (and on their dead letters). */
    public String writeId() {
        return writeId;
    }

    /**
     * No record or dead letter of the write is older than this: the earliest timestamp Kafka acknowledged its records
     * with (the broker's clock on lob.commands, which stamps append time, and its dead letters keep it); before that, or
     * without one, the client's clock when it was sent.
     */
    long sentAtMs() {
        long appended = appendedAtMs;
        return appended >= 0 ? Math.min(appended, sentAtMs) : sentAtMs;
    }

    void appendedAt(long timestampMs) {
        this.appendedAtMs = timestampMs;
    }

    /**
     * Read-your-writes: completes once the writer group has committed past the write's last
     * record, with what the writer did (check {@link WriteOutcome#applied()}: a write the writer
     * dead-lettered completes too, with the reason). Any node in the writer group then serves the new version (one cut off
     * from Kafka serves what it last had until it rejoins: README, Known limits). Never
     * completes while no writer runs: bound the wait with {@link #applied(Duration)} (a
     * {@code get(timeout, unit)} on this future bounds the caller's wait, not the client's tracking
     * of the write). Fails if Kafka did not acknowledge the write, or the client is closed first.
     * Completed on the client's callback threads, not Kafka's nor the JVM's common pool: callbacks may block.
     */
    public CompletableFuture<WriteOutcome> applied() {
        CompletableFuture<WriteOutcome> outcome = new CompletableFuture<>();
        // async, on the client's callback threads: the first call opens the tracker (a consumer, an admin client, up to
        // 30 s of metadata), neither on the producer's network thread nor on the JVM's common pool
        whenCompleteAsync((last, failed) -> {
            if (failed != null) {
                outcome.completeExceptionally(failed);
                return;
            }
            if (last == null) {
                outcome.completeExceptionally(new IllegalStateException("write " + writeId + " was completed by its caller, not by Kafka"));
                return;
            }
            try {
                client.appliedTracker().track(this, last, outcome);
            } catch (RuntimeException e) {
                outcome.completeExceptionally(e);
            }
        }, client.callbacks());
        return outcome;
    }

    /**
     * {@link #applied()}, failed with a {@link java.util.concurrent.TimeoutException} if the writer has not committed past
     * the write within {@code timeout}; the client stops tracking the write then.
     */
    public CompletableFuture<WriteOutcome> applied(Duration timeout) {
        // completed on the client's threads: orTimeout's own fires on the JDK's one scheduler thread, where a blocking
        // callback would hold up every timeout of the JVM
        // a Duration past a long of milliseconds (ChronoUnit.FOREVER's) waits as long as a long of them does
        long ms = timeout.compareTo(Duration.ofMillis(Long.MAX_VALUE)) > 0 ? Long.MAX_VALUE : timeout.toMillis();
        return applied().orTimeout(ms, TimeUnit.MILLISECONDS).handleAsync((outcome, failed) -> {
            if (failed != null) {
                throw failed instanceof java.util.concurrent.CompletionException c ? c : new java.util.concurrent.CompletionException(failed);
            }
            return outcome;
        }, client.callbacks());
    }
}
