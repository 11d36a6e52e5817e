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

    /** Every node advertising the wildcard would take itself for the owner of every partition. */
    @Test
    void aWildcardIsNeverAdvertised() {
        assertThat(LobHttpServer.advertised("0.0.0.0", "")).isNotEqualTo("0.0.0.0").isNotBlank();
        assertThat(LobHttpServer.advertised("::", "")).isNotEqualTo("::").isNotBlank();
    }
}
