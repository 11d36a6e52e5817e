package io.lobstream.ingest.writer;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class CommandsLogTest {
    @Test
    void encodesAndDecodesWhatItKnows() {
        CommandsLog log = new CommandsLog("gsLfK726Rny8qcnsVojkcQ", 8);
        assertThat(CommandsLog.decode(log.encode())).isEqualTo(log);
        assertThat(CommandsLog.decode("gsLfK726Rny8qcnsVojkcQ")).isEqualTo(new CommandsLog("gsLfK726Rny8qcnsVojkcQ", 0));
        assertThat(CommandsLog.decode(new CommandsLog("", 8).encode())).isEqualTo(new CommandsLog("", 8));
    }

    @Test
    void onlyWhatBothKnowIsCompared() {
        CommandsLog recorded = new CommandsLog("id-1", 8);
        assertThat(recorded.otherTopicThan(new CommandsLog("id-2", 8))).isTrue();
        assertThat(recorded.otherTopicThan(new CommandsLog("", 8))).as("a broker without topic ids").isFalse();
        assertThat(new CommandsLog("", 8).otherTopicThan(new CommandsLog("id-2", 8))).isFalse();
        assertThat(recorded.otherPartitionCountThan(new CommandsLog("id-1", 12))).isTrue();
        assertThat(new CommandsLog("id-1", 0).otherPartitionCountThan(new CommandsLog("id-1", 12))).isFalse();
    }

    @Test
    void aRecordIsCompletedByWhatIsKnownNow() {
        assertThat(new CommandsLog("", 0).completedBy(new CommandsLog("id-1", 8))).isEqualTo(new CommandsLog("id-1", 8));
        assertThat(new CommandsLog("id-1", 8).completedBy(new CommandsLog("", 8))).isEqualTo(new CommandsLog("id-1", 8));
    }
}
