package io.lobstream.client;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The client is an application's dependency, so it must not bring the node's libraries: this module's pom excludes
 * RocksDB and Micrometer, and Kafka Streams is never on its path. This test pins that the exclusions hold (nothing
 * re-adds them) and, by running in the same test JVM as {@link LobClientTest}, that the client works without them.
 */
class ClientClasspathTest {

    @Test
    void theNodesLibrariesAreNotOnTheClientsClasspath() {
        for (String nodeOnly : new String[] {
                "org.rocksdb.RocksDB", "io.micrometer.core.instrument.MeterRegistry", "org.apache.kafka.streams.KafkaStreams"}) {
            assertThatThrownBy(() -> Class.forName(nodeOnly, false, getClass().getClassLoader()))
                    .as(nodeOnly).isInstanceOf(ClassNotFoundException.class);
        }
    }

    @Test
    void theClassesAClientLoadsNeedNoneOfThem() throws ClassNotFoundException {
        // initializing each class resolves its static state; a reference to an excluded library would fail here
        for (Class<?> type : new Class<?>[] {LobClient.class, LobWrite.class, LobWrites.class, WriteOutcome.class,
                AppliedTracker.class, CommandIds.class}) {
            assertThat(Class.forName(type.getName(), true, getClass().getClassLoader())).isSameAs(type);
        }
    }
}
