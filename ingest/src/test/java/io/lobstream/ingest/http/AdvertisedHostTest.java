package io.lobstream.ingest.http;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class AdvertisedHostTest {
    @Test
    void theAdvertisedHostWinsThenTheBoundOne() {
        assertThat(LobHttpServer.advertised("0.0.0.0", " node-1.example ")).isEqualTo("node-1.example");
        assertThat(LobHttpServer.advertised("127.0.0.1", "")).isEqualTo("127.0.0.1");
        assertThat(LobHttpServer.advertised("127.0.0.1", null)).isEqualTo("127.0.0.1");
    }

    /**
     * An IPv6 literal bound in brackets is advertised without them, as Kafka gives application.server's host back: with
     * them, the node would not find itself the owner of its own partitions, and "[[::1]]:8080" would not even parse.
     */
    @Test
    void aBracketedIpv6BindIsAdvertisedBare() {
        assertThat(LobHttpServer.advertised("[::1]", "")).isEqualTo("::1");
        assertThat(LobHttpServer.authority("::1", 8080)).isEqualTo("[::1]:8080");
        assertThat(LobHttpServer.authority("node-1", 8080)).isEqualTo("node-1:8080");
        org.apache.kafka.streams.state.HostInfo parsed = org.apache.kafka.streams.state.HostInfo.buildFromEndpoint(
                LobHttpServer.authority(LobHttpServer.advertised("[fd00::5]", ""), 8080));
        assertThat(parsed).isEqualTo(new org.apache.kafka.streams.state.HostInfo("fd00::5", 8080));
    }

    /** Every node advertising the wildcard would take itself for the owner of every partition. */
    @Test
    void aWildcardIsNeverAdvertised() {
        assertThat(LobHttpServer.advertised("0.0.0.0", "")).isNotEqualTo("0.0.0.0").isNotBlank();
        assertThat(LobHttpServer.advertised("::", "")).isNotEqualTo("::").isNotBlank();
    }
}
