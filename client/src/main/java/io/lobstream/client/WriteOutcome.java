package io.lobstream.client;

import org.apache.kafka.clients.producer.RecordMetadata;

import java.util.Optional;

/**
 * What the writer did with a write ({@link LobWrite#applied()}): applied it, or sent it to
 * {@code lob.commands.dlq}. Final either way: the writer decides and commits in one transaction.
 *
 * @param lobId      the LOB written
 * @param lastRecord where the write's last record is on {@code lob.commands}
 * @param deadLetter why the writer did not apply it; empty when it did. A write sent as several
 *                   records (a long {@code write} or {@code append}) reports its first dead letter:
 *                   the records before it may be applied.
 */
public record WriteOutcome(String lobId, RecordMetadata lastRecord, Optional<DeadLetter> deadLetter) {

    /**
     * The dead letter's headers: {@code kind} for programs (as in the
     * {@code lob_commands_dead_lettered_total} metric), {@code reason} for people.
     */
    public record DeadLetter(String kind, String reason) {
    }

    public boolean applied() {
        return deadLetter.isEmpty();
    }
}
