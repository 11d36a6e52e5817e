package io.lobstream.purge;

import io.lobstream.schema.LobStreamConfig;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** A purge transaction's budget: half the shorter of the two limits a long one would pass. */
class PurgeClientsTest {
    @Test
    void theTransactionBudgetIsHalfTheShorterOfTheTransactionTimeoutAndThePollInterval() {
        assertThat(PurgeClients.transactionBudget(new LobStreamConfig(Map.of()))).as("Kafka's defaults: a minute and five")
                .isEqualTo(Duration.ofSeconds(30));
        // raised for long scans, past the poll interval: the group would drop the member before the coordinator aborts
        assertThat(PurgeClients.transactionBudget(new LobStreamConfig(Map.of("lob.producer.transaction.timeout.ms", 900_000))))
                .isEqualTo(Duration.ofSeconds(150));
        assertThat(PurgeClients.transactionBudget(new LobStreamConfig(Map.of("lob.producer.transaction.timeout.ms", 900_000,
                "lob.consumer.max.poll.interval.ms", 1_200_000)))).isEqualTo(Duration.ofSeconds(450));
        // a config provider's reference, which only the client resolves: a short budget, not a start that fails on a parse
        assertThat(PurgeClients.transactionBudget(new LobStreamConfig(Map.of("max.poll.interval.ms", "${env:POLL}"))))
                .isEqualTo(Duration.ofMillis(PurgeClients.UNRESOLVED_MS / 2));
    }
}
