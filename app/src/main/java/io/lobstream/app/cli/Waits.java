package io.lobstream.app.cli;

import io.lobstream.client.LobWrite;
import io.lobstream.client.WriteOutcome;
import io.lobstream.store.index.Rejection;
import org.apache.kafka.clients.producer.RecordMetadata;

import java.io.IOException;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Read-your-writes for the write commands: {@link LobWrite#applied()} within --timeout, then an
 * exit code. Once applied, the owner node serves the result, so the new ETag is read from
 * any node.
 */
final class Waits {
    static final int APPLIED = 0;
    /** Exit code: the writer did not commit past the command within --timeout. */
    static final int NOT_APPLIED = 3;
    /** Exit code: the writer dead-lettered the command (its reason is printed). */
    static final int DEAD_LETTERED = 4;

    private Waits() {
    }

    /** @param inPieces a write or append, which over lob.chunk.size goes in pieces applied one by one */
    static int untilApplied(LobWrite write, boolean inPieces, String writerGroup, NodeHttp http, Duration timeout, PrintWriter err)
            throws InterruptedException, ExecutionException {
        String id = write.lobId();
        try {
            WriteOutcome outcome = write.applied().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
            if (outcome.deadLetter().isPresent()) {
                if (inPieces) {
                    // the first dead letter of the write: the pieces before it may be applied, so "not applied" could be untrue
                    err.printf("%s: dead-lettered (%s); sent in pieces (over lob.chunk.size), those before the one dead-lettered "
                            + "may be applied: read the LOB before you run it again%n", id, outcome.deadLetter().get().reason());
                } else {
                    err.printf("%s: not applied: the writer dead-lettered it (%s)%n", id, outcome.deadLetter().get().reason());
                }
                if (Rejection.ID_CONFLICT.equals(outcome.deadLetter().get().kind())) { // its commandId is the key's, not what was typed
                    err.printf("%s: its --idempotency-key was used before for another write within lob.command.dedupe.window.ms: "
                            + "give this one a new key%n", id);
                }
                return DEAD_LETTERED;
            }
            err.printf("%s: applied%s%n", id, etag(http, id));
            return APPLIED;
        } catch (TimeoutException e) {
            RecordMetadata sent = write.get();
            err.printf("%s: not applied after %s: writer group %s has not committed past %s-%d@%d (is a writer node running, "
                    + "with this lob.writer.application.id? Or is partition %d being rebuilt on a new owner: `status` lists it "
                    + "under catching_up; it is applied once that ends, so running the command again without "
                    + "--idempotency-key would write it twice)%n", id, Durations.format(timeout), writerGroup, sent.topic(),
                    sent.partition(), sent.offset(), sent.partition());
            return NOT_APPLIED;
        }
    }

    /** ", ETag \"E\"" or ", deleted" as a node serves it now; why not, if the node did not say. */
    private static String etag(NodeHttp http, String id) throws InterruptedException {
        try {
            return http.etag(id).map(etag -> ", ETag " + etag).orElse(", deleted");
        } catch (IOException e) {
            // the message says which: no answer at all, or an answer without one (a 503 while partitions move)
            return " (no ETag from " + http.base() + ": " + (e.getMessage() != null ? e.getMessage()
                    : e.getClass().getSimpleName()) + ")";
        }
    }
}
