package io.lobstream.app.cli;

import io.lobstream.schema.LobStreamConfig;
import picocli.CommandLine;

import java.net.URI;
import java.net.URISyntaxException;
import java.util.HashMap;
import java.util.Map;
import java.util.function.UnaryOperator;

/**
 * Converts a {@code --node} value: a node's HTTP URL, or {@code HOST:PORT} as Kafka's {@code --bootstrap} takes it, read
 * as {@code http://HOST:PORT}. Anything else is a bad argument (usage, exit 2) before a command sends anything: found
 * only when the new ETag is asked for, a write already applied would exit 1, and a script that retries on 1 would
 * append the same bytes twice.
 */
final class NodeUrl implements CommandLine.ITypeConverter<String> {
    /** The environment variable that names the node when {@code --node} does not. */
    static final String ENV = "LOBSTREAM_NODE";
    /** How {@code --node}'s help says where the node is when the option is not given ({@link #resolve}). */
    static final String DEFAULT_DOC = "default: lob.http.host and lob.http.port given with -c (as the node was started), else $"
            + ENV + ", else those keys in the --command-config file, else " + LobStreamConfig.DEFAULT_NODE_URL + "; port 0 names none";

    /**
     * The node a command talks to, in the order of a command line's settings: {@code --node} as given; the node on this
     * machine that {@code -c lob.http.host=...} and {@code -c lob.http.port=...} describe (as it was started); then
     * {@code $LOBSTREAM_NODE}; then those keys in the {@code --command-config} file (one shared with {@code lobstream node});
     * else {@link LobStreamConfig#DEFAULT_NODE_URL}. Found before anything is sent: a URL refused after a write was
     * applied would exit 1 for a write that happened.
     */
    static String resolve(String given, ConfigOptions keys, UnaryOperator<String> env, CommandLine cli) {
        if (given != null) {
            return given; // converted (and checked) by picocli
        }
        // either key typed: with the other from the file, as the node merged them when it was started so
        boolean typedKey = typedHttpKey(keys.given);
        String typed = typedKey ? fromKeys(keys.map(), cli) : null;
        if (typed != null) {
            return typed;
        }
        String fromEnv = env.apply(ENV);
        if (fromEnv != null && !fromEnv.isBlank()) {
            try {
                return new NodeUrl().convert(fromEnv.strip());
            } catch (CommandLine.TypeConversionException e) {
                throw new CommandLine.ParameterException(cli, "$" + ENV + ": " + e.getMessage());
            }
        }
        // (a typed port 0, any free port, is not the file's port: the node did not bind that)
        String inFile = typedKey ? null : fromKeys(keys.file.keys(), cli);
        return inFile != null ? inFile : LobStreamConfig.DEFAULT_NODE_URL;
    }

    private static boolean typedHttpKey(Map<String, String> typed) {
        return typed.containsKey(LobStreamConfig.HTTP_HOST.name()) || typed.containsKey(LobStreamConfig.HTTP_PORT.name());
    }

    /** {@link #resolve} with the process's environment. */
    static String resolve(String given, ConfigOptions keys, CommandLine cli) {
        return resolve(given, keys, System::getenv, cli);
    }

    /**
     * The node on this machine the {@code lob.http.host} and {@code lob.http.port} keys describe; null when neither is
     * given, or for port 0 (any free port: only the node's log says which). Not {@code lob.http.advertised.host}: the name
     * other nodes use may not resolve here (a compose service's).
     */
    static String fromKeys(Map<String, String> keys, CommandLine cli) {
        String host = LobStreamConfig.HTTP_HOST.name();
        String port = LobStreamConfig.HTTP_PORT.name();
        if (!keys.containsKey(host) && !keys.containsKey(port)) {
            return null;
        }
        // the keys as a node reads them: a bad value is refused as the node would refuse it (usage, exit 2)
        Map<String, Object> http = new HashMap<>();
        for (String k : new String[] {host, port}) {
            if (keys.containsKey(k)) {
                http.put(k, keys.get(k));
            }
        }
        LobStreamConfig config = new LobStreamConfig(http);
        int p = config.get(LobStreamConfig.HTTP_PORT);
        if (p == 0) {
            return null;
        }
        try { // checked as --node is: a host no URL can carry (node_1, a port or a scheme in it) refused before anything is sent
            return new NodeUrl().convert(local(config.get(LobStreamConfig.HTTP_HOST), p));
        } catch (CommandLine.TypeConversionException e) {
            throw new CommandLine.ParameterException(cli, host + "=" + config.get(LobStreamConfig.HTTP_HOST) + " (given with -c or in "
                    + "the --command-config file): " + e.getMessage());
        }
    }

    /** The URL this machine reaches a node bound to {@code host} and {@code port} at: a wildcard read as loopback. */
    static String local(String host, int port) {
        String h = host.strip();
        if (h.startsWith("[") && h.endsWith("]")) {
            h = h.substring(1, h.length() - 1);
        }
        if (h.isEmpty() || io.lobstream.schema.HostLiterals.isWildcard(h)) {
            h = "127.0.0.1"; // a node bound to every address answers on loopback
        }
        return "http://" + (h.contains(":") ? "[" + h + "]" : h) + ":" + port; // an IPv6 literal in brackets
    }

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
