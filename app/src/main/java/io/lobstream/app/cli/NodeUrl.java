package io.lobstream.app.cli;

import io.lobstream.schema.LobStreamConfig;
import picocli.CommandLine;

import java.net.URI;
import java.net.URISyntaxException;

/**
 * Converts a {@code --node} value: a node's HTTP URL, or {@code HOST:PORT} as Kafka's {@code --bootstrap} takes it, read
 * as {@code http://HOST:PORT}. Anything else is a bad argument (usage, exit 2) before a command sends anything: found
 * only when the new ETag is asked for, a write already applied would exit 1, and a script that retries on 1 would
 * append the same bytes twice.
 */
final class NodeUrl implements CommandLine.ITypeConverter<String> {
    @Override
    public String convert(String value) {
        String url = value.contains("://") ? value : "http://" + value;
        URI uri;
        try {
            uri = new URI(url);
        } catch (URISyntaxException e) {
            uri = null;
        }
        // URI takes any number for a port: 80800 (8080 mistyped) would be refused only by the HTTP client, after a write
        if (uri == null || uri.getHost() == null || uri.getPort() > 65_535 || uri.getRawQuery() != null || uri.getRawFragment() != null
                || !("http".equalsIgnoreCase(uri.getScheme()) || "https".equalsIgnoreCase(uri.getScheme()))) {
            throw new CommandLine.TypeConversionException("'" + value + "' is not a node's HTTP URL (e.g. "
                    + LobStreamConfig.DEFAULT_NODE_URL + ", or HOST:PORT)");
        }
        return url;
    }
}
