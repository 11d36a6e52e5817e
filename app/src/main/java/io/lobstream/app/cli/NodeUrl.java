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
    static final String DEFAULT_DOC = "default: $" + ENV + ", else lob.http.host and lob.http.port when given with -c or "
            + "--command-config (the node's own settings), else " + LobStreamConfig.DEFAULT_NODE_URL;

    /**
     * The node a command talks to, in the order a user expects of a command line: {@code --node} as given, else
     * {@code $LOBSTREAM_NODE}, else the node on this machine that the {@code lob.http.*} keys given describe (a
     * {@code --command-config} file shared with {@code lobstream node}, or {@code -c lob.http.port=8091} as the node was
     * started with), else {@link LobStreamConfig#DEFAULT_NODE_URL}. Found before anything is sent: a URL refused after a
     * write was applied would exit 1 for a write that happened.
     */
    static String resolve(String given, Map<String, String> keys, UnaryOperator<String> env, CommandLine cli) {
        if (given != null) {
            return given; // converted (and checked) by picocli
        }
        String fromEnv = env.apply(ENV);
        if (fromEnv != null && !fromEnv.isBlank()) {
            try {
                return new NodeUrl().convert(fromEnv.strip());
            } catch (CommandLine.TypeConversionException e) {
                throw new CommandLine.ParameterException(cli, "$" + ENV + ": " + e.getMessage());
            }
        }
        return fromKeys(keys);
    }

    /** {@link #resolve} with the process's environment. */
    static String resolve(String given, Map<String, String> keys, CommandLine cli) {
        return resolve(given, keys, System::getenv, cli);
    }

    /**
     * The node on this machine the {@code lob.http.*} keys describe: its advertised host, else the one it binds (a wildcard
     * read as loopback), and its port; the default URL when neither key is given, or for port 0 (any free port: only the
     * node's log says which).
     */
    static String fromKeys(Map<String, String> keys) {
        String host = LobStreamConfig.HTTP_HOST.name();
        String advertised = LobStreamConfig.HTTP_ADVERTISED_HOST.name();
        String port = LobStreamConfig.HTTP_PORT.name();
        if (!keys.containsKey(host) && !keys.containsKey(advertised) && !keys.containsKey(port)) {
            return LobStreamConfig.DEFAULT_NODE_URL;
        }
        // the keys as a node reads them: a bad value is refused as the node would refuse it (usage, exit 2)
        Map<String, Object> http = new HashMap<>();
        for (String k : new String[] {host, advertised, port}) {
            if (keys.containsKey(k)) {
                http.put(k, keys.get(k));
            }
        }
        LobStreamConfig config = new LobStreamConfig(http);
        int p = config.get(LobStreamConfig.HTTP_PORT);
        if (p == 0) {
            return LobStreamConfig.DEFAULT_NODE_URL;
        }
        String h = config.get(LobStreamConfig.HTTP_ADVERTISED_HOST).strip();
        if (h.isEmpty()) {
            h = config.get(LobStreamConfig.HTTP_HOST).strip();
        }
        if (h.isEmpty() || h.equals("0.0.0.0") || h.equals("::") || h.equals("[::]")) {
            h = "127.0.0.1"; // a node bound to every address answers on loopback
        } else if (h.contains(":") && !h.startsWith("[")) {
            h = "[" + h + "]"; // an IPv6 literal
        }
        return "http://" + h + ":" + p;
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
