package io.lobstream.ingest.replay;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.util.Optional;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** A replay meets a command whose schema the registry does not have: was it dead-lettered, or is the registry wrong? */
class DeadLetterLogTest {
    private static final RuntimeException NOT_FOUND = new IllegalStateException("schema 99 not found");

    private static ConsumerRecord<byte[], byte[]> command(long offset, long timestamp) {
        return new ConsumerRecord<>("lob.commands", 3, offset, timestamp, TimestampType.LOG_APPEND_TIME, 0, 0, new byte[0], new byte[0],
                new RecordHeaders(), Optional.empty());
    }

    @Test
    void aCommandTheWriterDeadLetteredIsSkipped() {
        DeadLetterLog letters = new DeadLetterLog(Set.of(7L), 0);
        assertThatCode(() -> letters.requireLetter(command(7, 1_000), "http://r", NOT_FOUND)).doesNotThrowAnyException();
    }

    @Test
    void aCommandWithoutALetterWhileLettersOfItsTimeAreKeptStopsTheReplay() {
        DeadLetterLog letters = new DeadLetterLog(Set.of(7L), 500);
        assertThatThrownBy(() -> letters.requireLetter(command(8, 1_000), "http://r", NOT_FOUND)).isInstanceOf(IOException.class)
                .hasMessageContaining("lob.commands-3 offset 8").hasMessageContaining("http://r").hasMessageContaining("did not dead-letter");
    }

    @Test
    void aCommandOlderThanEveryLetterKeptCannotBeToldAndIsSkipped() {
        DeadLetterLog letters = new DeadLetterLog(Set.of(), 5_000);
        assertThatCode(() -> letters.requireLetter(command(8, 1_000), "http://r", NOT_FOUND)).doesNotThrowAnyException();
        DeadLetterLog allExpired = new DeadLetterLog(Set.of(), Long.MAX_VALUE);
        assertThatCode(() -> allExpired.requireLetter(command(8, 1_000), "http://r", NOT_FOUND)).doesNotThrowAnyException();
    }
}
