package io.lobstream.client;

import org.apache.kafka.clients.producer.RecordMetadata;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A write sent by {@link LobClient}: as a future, completed with its last record's metadata
 * once Kafka has acknowledged every record of it; {@link #applied()} for read-your-writes.
 *
 * <p>A put of one record, a truncate and a delete fail with Kafka's exception (or, sent after
 * {@link LobClient#stopSending}, with a {@link WriteStoppedException}: nothing was sent). A write sent in
 * pieces fails with an {@link java.io.IOException} that says what was sent, caused by Kafka's: a
 * chunked put, and every write and append (their pieces apply in order, however few), so test
 * the cause, not the exception, for Kafka's {@code RetriableException}. It completes on a thread of the client's, never on the producer's network
 * thread: stages chained to it may block, or send more writes. The client starts a thread for each stage that runs while
 * the others block (as {@code Executors.newCachedThreadPool}): a bounded pool could leave a write that a blocked stage waits
 * for with no thread to complete it. Many writes at once each blocked in a stage are as many threads: chain {@code *Async}
 * stages on an executor of yours to bound them.
 *
 * <p>{@link #cancel} does nothing, as on the future of Kafka's {@code send}. Completing it yourself changes nothing on the
 * wire (the write goes on), but hides its outcome: {@link #applied()} then fails.
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
     * dead-lettered completes too, with the reason: as soon as its first letter is read, whose transaction committed; a write
     * {@code redrive} sent back and the writer then applied still reads so). Any node in the writer group then serves the new version (one cut off
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
     * {@link #applied()}, failed with a {@link TimeoutException} if the writer has not committed past the write within
     * {@code timeout}, whose message names the writer group, and the partition and offset it has not committed past; the
     * client stops tracking the write then. The time counts from this call: one that ends before Kafka acknowledged the
     * write says so instead.
     */
    public CompletableFuture<WriteOutcome> applied(Duration timeout) {
        // completed on the client's threads: orTimeout's own fires on the JDK's one scheduler thread, where a blocking
        // callback would hold up every timeout of the JVM
        // a Duration past a long of milliseconds (ChronoUnit.FOREVER's) waits as long as a long of them does
        long ms = timeout.compareTo(Duration.ofMillis(Long.MAX_VALUE)) > 0 ? Long.MAX_VALUE : timeout.toMillis();
        return applied().orTimeout(ms, TimeUnit.MILLISECONDS).handleAsync((outcome, failed) -> {
            Throwable cause = failed instanceof CompletionException c && c.getCause() != null ? c.getCause() : failed;
            RecordMetadata last = isCompletedExceptionally() ? null : getNow(null);
            if (cause instanceof TimeoutException && !isCompletedExceptionally()) {
                // orTimeout's own says nothing: a writer group other than the nodes' is the usual reason, and waits silently;
                // or Kafka has not acknowledged the write yet, whose outcome this write's own future still gets
                String within = " within " + (ms % 1000 == 0 ? ms / 1000 + " s" : ms + " ms");
                TimeoutException named = new TimeoutException(last == null
                        ? "write " + writeId + " to " + lobId + " not acknowledged by Kafka" + within + " (the wait began before "
                                + "Kafka took it; the write's own future says whether it does)"
                        : "write " + writeId + " to " + lobId + " not applied" + within
                                + ": writer group " + client.writerGroup() + " has not committed past " + last.topic() + "-"
                                + last.partition() + " offset " + last.offset() + " (is a writer node of that group running, with this "
                                + "lob.writer.application.id?)");
                named.initCause(cause);
                throw new CompletionException(named);
            }
            if (failed != null) {
                throw failed instanceof CompletionException c ? c : new CompletionException(failed);
            }
            return outcome;
        }, client.callbacks());
    }

    /**
     * Does nothing and returns false, as the future of Kafka's {@code send} does: a write handed to the producer cannot be
     * called back, and a cancelled future would hide its outcome from {@link #applied()} for good.
     */
    @Override
    public boolean cancel(boolean mayInterruptIfRunning) {
        return false;
    }
}
