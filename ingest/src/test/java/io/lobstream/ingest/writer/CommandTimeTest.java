package io.lobstream.ingest.writer;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;
import org.junit.jupiter.api.Test;

import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;

class CommandTimeTest {
    @Test
    void aRecordWithoutATimeTakesItsPartitionsLatestNotAFailedTask() {
        CommandTime times = new CommandTime();
        assertThat(times.extract(record(1_000L), 5_000L)).isEqualTo(1_000L);
        assertThat(times.extract(record(-1L), 5_000L)).as("none: the partition's time").isEqualTo(5_000L);
        assertThat(times.extract(record(-1L), -1L)).as("none, and nothing before it").isEqualTo(CommandTime.NONE_YET);
    }

    private static ConsumerRecord<Object, Object> record(long timestamp) {
        return new ConsumerRecord<>("lob.commands", 0, 0, timestamp, TimestampType.CREATE_TIME, 0, 0, "k", "v", new RecordHeaders(),
                Optional.empty());
    }
}
