package io.lobstream.app.cli;

import org.apache.kafka.clients.producer.RecordMetadata;

import java.io.IOException;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.Optional;

/**
 * Read-your-writes for the write commands: waits until the writer that owns the LOB's partition
 * is past the command (the owner's {@code LobStream-Applied-Offset}, through any node's
 * {@code HEAD /lobs/{id}}), or has dead-lettered it.
 */
final class Waits {
    static final int APPLIED = 0;
    /** Exit code: the writer did not get to the command within --timeout. */
    static final int NOT_APPLIED = 3;
    /** Exit code: the writer dead-lettered the command (its reason is printed). */
    static final int DEAD_LETTERED = 4;

    private Waits() {
    }

    /**
     * @param before the LOB's version before the command was sent (empty: no LOB)
     * @param delete the command is a delete: one of a LOB that does not exist changes nothing, and is done
     */
    static int untilApplied(NodeHttp http, DeadLetterWatch deadLetters, String id, Optional<String> before, RecordMetadata sent,
                            boolean delete, Duration timeout, PrintWriter err) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        String last = "node unreachable";
        while (System.nanoTime() < deadline) {
            // the poll is also the pause between two HEADs
            Optional<DeadLetterWatch.DeadLetter> dead = deadLetters.poll(id, sent.partition(), sent.offset(), Duration.ofMillis(50));
            if (dead.isPresent()) {
                err.printf("%s: not applied: the writer dead-lettered it (%s)%n", id, dead.get().reason());
                return DEAD_LETTERED;
            }
            try {
                NodeHttp.Head now = http.head(id);
                boolean changed = !now.etag().equals(before);
                // a node that does not say its applied offset: the version changing is all there is to go by
                boolean past = now.appliedOffset() < 0 ? changed : now.appliedOffset() >= sent.offset();
                if (past && changed) {
                    err.printf("%s: applied, %s%n", id, now.etag().map(v -> "version " + v.replace("\"", "")).orElse("deleted"));
                    return APPLIED;
                }
                if (past && delete) {
                    err.printf("%s: applied; there was no LOB %s to delete%n", id, id);
                    return APPLIED;
                }
                last = past ? "the writer is past the command but the LOB did not change; no dead letter seen"
                        : "still at version " + before.map(v -> v.replace("\"", "")).orElse("(none)");
            } catch (IOException e) {
                last = e.getMessage();
            }
        }
        err.printf("%s: not applied after %s (%s; node %s)%n", id, Durations.format(timeout), last, http.base());
        return NOT_APPLIED;
    }
}
