package io.lobstream.app.cli;

import io.lobstream.schema.LobStreamConfig;

import java.io.IOException;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

/**
 * A look at {@code lob.registry.url} when a node starts against a Kafka of its own: a URL without Apicurio's API path
 * ({@code http://host:8081} for {@code http://host:8081/apis/registry/v2}, as a Confluent registry is named) is not the
 * registry's "no such schema", so the writer takes it for an outage and waits, applying nothing. Said at start, it
 * costs a line; found from a stalled writer, an afternoon. A warning only: the registry may come up after the node.
 */
final class RegistryCheck {
    private static final Duration TIMEOUT = Duration.ofSeconds(3);
    /** The serdes' credentials for the registry (basic, or a token from an identity server). */
    private static final String AUTH_SETTINGS = "apicurio.auth.";

    private RegistryCheck() {
    }

    /** Warns on {@code err} unless the registry answers its system info, when the serdes are Apicurio's (the default). */
    static void warnIfNotApicurio(LobStreamConfig config, PrintStream err) throws InterruptedException {
        if (!apicurio(config.get(LobStreamConfig.VALUE_SERIALIZER)) || !apicurio(config.get(LobStreamConfig.VALUE_DESERIALIZER))) {
            return; // another registry's serdes: its own URL, its own API
        }
        // the serdes' TLS settings for the registry (a private CA, a client certificate), under either of Apicurio's names
        if (given(config, LobStreamConfig.APICURIO_TLS) || given(config, LobStreamConfig.APICURIO_HTTP_TLS)) {
            return; // the serdes' client trusts what these say; this look, with the JVM's defaults, would fail where they work
        }
        String url = config.get(LobStreamConfig.REGISTRY_URL);
        String shown = config.registryShown();
        URI info;
        try {
            info = URI.create(url.replaceAll("/+$", "") + "/system/info");
        } catch (IllegalArgumentException e) {
            err.println("lobstream node: " + LobStreamConfig.REGISTRY_URL.name() + "=" + shown + " is not a URL: "
                    + config.withoutRegistryUserInfo(String.valueOf(e.getMessage())));
            return;
        }
        HttpClient http = HttpClient.newBuilder().connectTimeout(TIMEOUT).build();
        try {
            int status = http.send(HttpRequest.newBuilder(info).timeout(TIMEOUT).build(), HttpResponse.BodyHandlers.discarding())
                    .statusCode();
            boolean credentials = given(config, AUTH_SETTINGS) || URI.create(url).getUserInfo() != null;
            if ((status == 401 || status == 403) && !credentials) {
                err.println("lobstream node: the registry at " + shown + " answered " + status + " to " + info.getPath() + " and the "
                        + "serdes have no credentials for it (apicurio.auth.*); until they do, the writer waits on each command it "
                        + "cannot decode");
            } else if (status != 200 && status != 401 && status != 403) { // (asking for the credentials the serdes have)
                err.println("lobstream node: the registry at " + shown + " answered " + status + " to " + info.getPath() + ": is "
                        + LobStreamConfig.REGISTRY_URL.name() + " the base of its Apicurio v2 API (e.g. http://host:8081/apis/registry/v2)? "
                        + "Until it answers, the writer waits on each command it cannot decode");
            }
        } catch (IOException | IllegalArgumentException e) {
            err.println("lobstream node: no registry answers at " + shown + " yet (" + config.withoutRegistryUserInfo(e.toString())
                    + "); the writer waits for it on each command it cannot decode");
        }
    }

    /**
     * Warns, with no request made, when {@code lob.registry.url} has no path ({@code http://host:8081}, as a Confluent
     * registry is named, and as a Kafka user types it): Apicurio's serdes would send to the server's root, whose 404 reads
     * as "the schema registry did not answer" from a client command, with nothing said of the path.
     */
    static void warnIfNoApiPath(LobStreamConfig config, String command, java.util.function.Consumer<String> warn) {
        if (!apicurio(config.get(LobStreamConfig.VALUE_SERIALIZER)) || !apicurio(config.get(LobStreamConfig.VALUE_DESERIALIZER))) {
            return;
        }
        String path;
        try {
            path = URI.create(config.get(LobStreamConfig.REGISTRY_URL)).getPath();
        } catch (IllegalArgumentException e) {
            return; // not a URL: the serdes say so
        }
        if (path == null || path.isEmpty() || path.equals("/")) {
            String shown = config.registryShown().replaceAll("/+$", "");
            warn.accept(command + ": " + LobStreamConfig.REGISTRY_URL.name() + "=" + shown + " has no path; an Apicurio registry's "
                    + "API is at " + shown + "/apis/registry/v2 (--registry takes that URL)");
        }
    }

    /** Whether a serde setting under {@code prefix} is given, bare or as {@code lob.serde.}: both reach the serdes. */
    private static boolean given(LobStreamConfig config, String prefix) {
        return config.originals().keySet().stream()
                .anyMatch(k -> k.startsWith(prefix) || k.startsWith(LobStreamConfig.SERDE_PREFIX + prefix));
    }

    private static boolean apicurio(String serdeClass) {
        return serdeClass.startsWith("io.lobstream.") || serdeClass.startsWith("io.apicurio.");
    }
}
