package io.lobstream.ingest.client;

import org.apache.kafka.clients.producer.RecordMetadata;

import java.util.concurrent.CompletableFuture;

/**
 * A write sent by {@link LobClient}: as a future, completed with its last record's metadata
 * once Kafka has acknowledged every record of it; {@link #applied()} for read-your-writes.
 */
public final class LobWrite extends CompletableFuture<RecordMetadata> {
    private final LobClient client;
    private final String lobId;
    private final String writeId;
    private final long sentAtMs;

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

    /** Wall-clock time before the first record was sent: no record or dead letter of the write is older. */
    long sentAtMs() {
        return sentAtMs;
    }

    /**
     * Read-your-writes: completes once the writer group has committed past the write's last
     * record, with what the writer did. Any node then serves the new version. Never completes
     * while no writer runs: bound the wait with {@code orTimeout} (which also stops the client's
     * tracking of it) or {@code get(timeout, unit)}. Fails if Kafka did not acknowledge the write,
     * or the client is closed first. Completed off the client's threads: callbacks may block.
     */
    public CompletableFuture<WriteOutcome> applied() {
        CompletableFuture<WriteOutcome> outcome = new CompletableFuture<>();
        // async: the first call opens the tracker (a consumer, an admin client), not on the producer's network thread
        whenCompleteAsync((last, failed) -> {
            if (failed != null) {
                outcome.completeExceptionally(failed);
                return;
            }
            try {
                client.appliedTracker().track(this, last, outcome);
            } catch (RuntimeException e) {
                outcome.completeExceptionally(e);
            }
        });
        return outcome;
    }
}
