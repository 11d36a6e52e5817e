package io.lobstream.app.cli;

import org.apache.kafka.clients.producer.RecordMetadata;

import java.io.IOException;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.Optional;

/**
 * Read-your-writes for the write commands: waits until the writer has committed past the
 * command's last record, then says whether it applied or dead-lettered it ({@link WriterWatch}).
 * Once committed, the owner node serves the result, so the new version is read from any node.
 */
final class Waits {
    static final int APPLIED = 0;
    /** Exit code: the writer did not commit past the command within --timeout. */
    static final int NOT_APPLIED = 3;
    /** Exit code: the writer dead-lettered the command (its reason is printed). */
    static final int DEAD_LETTERED = 4;

    private Waits() {
    }

    /** @param sent the command's last record */
    static int untilApplied(WriterWatch writer, NodeHttp http, String id, RecordMetadata sent, Duration timeout, PrintWriter err)
            throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            // the poll is also the pause between two looks at the group's offsets
            Optional<WriterWatch.DeadLetter> dead = writer.deadLetter(Duration.ofMillis(100));
            if (dead.isEmpty() && writer.committedPast(sent.partition(), sent.offset())) {
                dead = writer.drainDeadLetters(); // committed with the offsets, so readable now
                if (dead.isEmpty()) {
                    err.printf("%s: applied%s%n", id, version(http, id));
                    return APPLIED;
                }
            }
            if (dead.isPresent()) {
                err.printf("%s: not applied: the writer dead-lettered it (%s)%n", id, dead.get().reason());
                return DEAD_LETTERED;
            }
        }
        err.printf("%s: not applied after %s: writer group %s has not committed past %s-%d@%d (is a writer node running, "
                        + "with this lob.writer.application.id?)%n", id, Durations.format(timeout), writer.writerGroup(), sent.topic(),
                sent.partition(), sent.offset());
        return NOT_APPLIED;
    }

    /** ", version V" or ", deleted" as a node serves it now; nothing if no node answers. */
    private static String version(NodeHttp http, String id) throws InterruptedException {
        try {
            return http.etag(id).map(v -> ", version " + v.replace("\"", "")).orElse(", deleted");
        } catch (IOException e) {
            return " (no version: " + http.base() + " did not answer: " + (e.getMessage() != null ? e.getMessage()
                    : e.getClass().getSimpleName()) + ")";
        }
    }
}
