package io.lobstream.schema;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class HostLiteralsTest {
    @Test
    void wildcardsInEverySpellingJavaParses() {
        for (String h : new String[] {"0.0.0.0", "0", "0.0", "::", "[::]", "0:0:0:0:0:0:0:0", "::0.0.0.0"}) {
            assertThat(HostLiterals.isWildcard(h)).as(h).isTrue();
        }
        for (String h : new String[] {"node-1", "10.0.0.5", "fd00::5", "1.2.3.4.5", "10.0.0.256", "1.2.3.4.", ".", "", "0x0"}) {
            assertThat(HostLiterals.isWildcard(h)).as(h).isFalse();
        }
    }

    /** As the node's warning about a loopback address advertised to a cluster on other hosts takes it. */
    @Test
    void loopbackWithoutAskingAResolver() {
        for (String h : new String[] {"localhost", "LocalHost", "127.0.0.1", "127.0.1.1", "127.1", "::1", "[::1]", "0:0:0:0:0:0:0:1"}) {
            assertThat(HostLiterals.isLoopback(h)).as(h).isTrue();
        }
        for (String h : new String[] {"node-1", "10.0.0.5", "0.0.0.0", "::", "fe80::1", "kafka", "127.example.com"}) {
            assertThat(HostLiterals.isLoopback(h)).as(h).isFalse();
        }
    }

    @Test
    void ipv6LiteralsAsAUrlCarriesThem() {
        assertThat(HostLiterals.isIpv6Literal("fd00::5")).isTrue();
        assertThat(HostLiterals.isIpv6Literal("1::2::3")).isFalse();
        assertThat(HostLiterals.isIpv6Literal("host:80")).isFalse();
        assertThat(HostLiterals.literal("node-1")).isEmpty();
        // digits that are no address are no literal, and not handed to Java, which would ask the resolver
        for (String h : new String[] {"10.0.0.256", "1.2.3.4.5", "1.2.3.4.", "256.1", "127.16777216"}) {
            assertThat(HostLiterals.literal(h)).as(h).isEmpty();
        }
        assertThat(HostLiterals.literal("127.65535")).map(java.net.InetAddress::getHostAddress).hasValue("127.0.255.255");
    }
}
