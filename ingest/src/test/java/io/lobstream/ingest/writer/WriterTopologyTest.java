package io.lobstream.ingest.writer;

import org.apache.kafka.common.utils.Utils;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/** Where the writer's undo records go. */
class WriterTopologyTest {
    /** Partitions added to lob.undo-history while the writer runs: an undo record still goes where its tablespace's purge reads. */
    @Test
    void anUndoRecordGoesToItsTablespacesPartitionWhateverTheTopicHasNow() {
        String lobId = "doc-7";
        int home = Utils.toPositive(Utils.murmur2(lobId.getBytes(StandardCharsets.UTF_8))) % 8;
        for (int now : new int[]{8, 16, 13}) {
            assertThat(WriterTopology.toTablespace(8).partitions("lob.undo-history", lobId, null, now)).as("%d partitions", now)
                    .contains(Set.of(home));
        }
        assertThat(WriterTopology.toTablespace(8).partitions("lob.undo-history", lobId, null, 4)).as("a topic made anew, smaller")
                .isEmpty();
    }
}
