package io.lobstream.ingest.replay;

import io.lobstream.schema.DeadLetterTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;

/** A letter sent without its value names where its command is: redrive sends what is there only if it is that command. */
class DeadLetterRedriveTest {
    private static ConsumerRecord<byte[], byte[]> record(String topic, byte[] key, byte[] value, String valueDropped) {
        RecordHeaders headers = new RecordHeaders();
        if (valueDropped != null) {
            headers.add(DeadLetterTopic.VALUE_DROPPED, valueDropped.getBytes(StandardCharsets.UTF_8));
        }
        return new ConsumerRecord<>(topic, 0, 5, 0, TimestampType.CREATE_TIME, 0, 0, key, value, headers, Optional.empty());
    }

    @Test
    void theCommandAtTheLettersOffsetIsSentOnlyIfItHasTheLettersKeyAndLength() {
        byte[] key = "doc".getBytes(StandardCharsets.UTF_8);
        ConsumerRecord<byte[], byte[]> letter = record("lob.commands.dlq", key, null, "1200000");

        assertThat(DeadLetterRedrive.isItsCommand(letter, record("lob.commands", key, new byte[1_200_000], null))).isTrue();
        assertThat(DeadLetterRedrive.isItsCommand(letter, record("lob.commands", key, new byte[30], null)))
                .as("another command at that offset: lob.commands made anew").isFalse();
        assertThat(DeadLetterRedrive.isItsCommand(letter, record("lob.commands", "other".getBytes(StandardCharsets.UTF_8),
                new byte[1_200_000], null))).as("another LOB's").isFalse();
    }

    /** A letter made by hand, or by another tool: parsed as it was, its bad origin threw out of the redrive, the rest unsent. */
    @Test
    void aLetterWithoutItsValueOrACommandOffsetIsPassedOver() {
        ConsumerRecord<byte[], byte[]> letter = record("lob.commands.dlq", "doc".getBytes(StandardCharsets.UTF_8), null, "1200000");
        letter.headers().add(DeadLetterTopic.ORIGIN_TOPIC, "lob.commands".getBytes(StandardCharsets.UTF_8));
        letter.headers().add(DeadLetterTopic.ORIGIN_OFFSET, "17".getBytes(StandardCharsets.UTF_8));
        assertThat(DeadLetterRedrive.original(null, letter)).as("no partition").isEmpty(); // (the consumer not asked)
        letter.headers().add(DeadLetterTopic.ORIGIN_PARTITION, "x".getBytes(StandardCharsets.UTF_8));
        assertThat(DeadLetterRedrive.original(null, letter)).as("no partition number").isEmpty();
    }
}
