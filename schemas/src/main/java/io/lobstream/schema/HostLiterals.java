package io.lobstream.schema;

import java.net.InetAddress;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.UnknownHostException;
import java.util.Locale;
import java.util.Optional;

/**
 * What a host setting's text says about the address it names, read as Java reads an IP literal and never by asking a
 * resolver (a name could answer differently on another machine, or hang a start on a dead DNS server). One place, where
 * the config check, the CLI's node lookup and the node's own hints had each their own string tricks: {@code 0} and
 * {@code 127.1} are IPv4 literals too ({@code 0.0.0.0} and {@code 127.0.0.1}), which those missed.
 */
public final class HostLiterals {
    private HostLiterals() {
    }

    /** Whether {@code h} is an IPv6 address as a URL carries one in brackets (checked by the URI parser). */
    public static boolean isIpv6Literal(String h) {
        try {
            return h.indexOf(':') != h.lastIndexOf(':') && new URI("http://[" + h + "]/").getHost() != null;
        } catch (URISyntaxException e) {
            return false;
        }
    }

    /** The address {@code host} spells, if it is an IP literal (IPv6 with or without brackets); empty for a name. */
    public static Optional<InetAddress> literal(String host) {
        String h = host.strip();
        if (h.startsWith("[") && h.endsWith("]")) {
            h = h.substring(1, h.length() - 1);
        }
        if (!(isIpv4Literal(h) || isIpv6Literal(h))) {
            return Optional.empty();
        }
        try {
            return Optional.of(InetAddress.getByName(h)); // a literal: parsed, no name looked up
        } catch (UnknownHostException e) {
            return Optional.empty();
        }
    }

    /**
     * Whether {@code h} is an IPv4 literal as Java reads one: one to four decimal parts, the last taking the bytes the
     * others leave ({@code 0}, {@code 127.1}, {@code 10.0.0.5}). Checked here: for digits that are no address
     * ({@code 10.0.0.256}, {@code 1.2.3.4.5}) Java asks the resolver.
     */
    private static boolean isIpv4Literal(String h) {
        if (!h.matches("[0-9]{1,10}(\\.[0-9]{1,10}){0,3}")) {
            return false;
        }
        String[] parts = h.split("\\.");
        for (int i = 0; i < parts.length; i++) {
            long limit = i < parts.length - 1 ? 255 : (1L << (8 * (4 - i))) - 1; // the last part fills what is left
            if (Long.parseLong(parts[i]) > limit) {
                return false;
            }
        }
        return true;
    }

    /** Whether {@code host} is the wildcard address ({@code 0.0.0.0}, {@code 0}, {@code ::}, in any spelling). */
    public static boolean isWildcard(String host) {
        return literal(host).map(InetAddress::isAnyLocalAddress).orElse(false);
    }

    /** Whether {@code host} is this machine's loopback: {@code localhost}, or a loopback literal (127.x, ::1). */
    public static boolean isLoopback(String host) {
        return host.strip().toLowerCase(Locale.ROOT).equals("localhost") || literal(host).map(InetAddress::isLoopbackAddress).orElse(false);
    }
}
