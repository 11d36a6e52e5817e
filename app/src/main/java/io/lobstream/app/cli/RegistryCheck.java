package io.lobstream.app.cli;

import io.lobstream.schema.LobStreamConfig;

import java.io.IOException;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;

/**
 * A look at {@code lob.registry.url} when a node starts against a Kafka of its own: a URL at which no Apicurio registry
 * answers (a wrong host or port, a proxy route that leads elsewhere, a registry that asks for credentials the serdes do
 * not have) answers a lookup with what is not the registry's "no such schema", so the writer takes it for an outage and
 * waits, applying nothing. Said at start, it costs a line; found from a stalled writer, an afternoon. A warning only: the
 * registry may come up after the node. It asks where the serdes would ({@link #apiBase}).
 */
final class RegistryCheck {
    private static final Duration TIMEOUT = Duration.ofSeconds(3);
    /** The path of Apicurio's v2 API, which its HTTP client adds to a registry URL that does not end with it. */
    static final String API_PATH = LobStreamConfig.REGISTRY_API_PATH.substring(1) + "/";
    /** The serde settings, under any of Apicurio's prefixes, that keep the URL as given, and that name another path. */
    private static final String NO_APPEND = "disable-auto-basepath-append";
    private static final String BASE_PATH = "auto-base-path";
    /** The serdes' credentials for the registry (basic, or a token from an identity server). */
    private static final String AUTH_SETTINGS = "apicurio.auth.";

    /**
     * Who looks, as its warnings name it, and what it cannot do until the registry answers.
     *
     * @param untilThen what the process cannot do without the registry, as the end of a sentence
     */
    record Looker(String name, String untilThen) {
        static final Looker NODE = new Looker("lobstream node", "the writer waits on each command it cannot decode");
        /** A worker decodes undo records and encodes the reclaims it sends with the registry's schemas. */
        static final Looker PURGE = new Looker("purge worker", "its transactions fail, and purge waits, retrying");
    }

    private RegistryCheck() {
    }

    /**
     * Warns on {@code err}, in {@code who}'s name, unless the registry answers its system info, when the serdes are
     * Apicurio's (the default).
     */
    static void warnIfNotApicurio(LobStreamConfig config, Looker who, PrintStream err) throws InterruptedException {
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
            info = URI.create(apiBase(url, config.originals()) + "system/info");
        } catch (IllegalArgumentException e) {
            err.println(who.name() + ": " + LobStreamConfig.REGISTRY_URL.name() + "=" + shown + " is not a URL: "
                    + config.withoutRegistryUserInfo(String.valueOf(e.getMessage())));
            return;
        }
        HttpClient http = HttpClient.newBuilder().connectTimeout(TIMEOUT).build();
        try {
            int status = http.send(HttpRequest.newBuilder(info).timeout(TIMEOUT).build(), HttpResponse.BodyHandlers.discarding())
                    .statusCode();
            boolean credentials = given(config, AUTH_SETTINGS) || URI.create(url).getUserInfo() != null;
            if ((status == 401 || status == 403) && !credentials) {
                err.println(who.name() + ": the registry at " + shown + " answered " + status + " to " + info.getPath() + " and the "
                        + "serdes have no credentials for it (apicurio.auth.*); until they do, " + who.untilThen());
            } else if (status != 200 && status != 401 && status != 403) { // (asking for the credentials the serdes have)
                err.println(who.name() + ": the registry at " + shown + " answered " + status + " to " + info.getPath() + ": is "
                        + LobStreamConfig.REGISTRY_URL.name() + " an Apicurio registry's address (e.g. http://host:8081/apis/registry/v2"
                        + (Boolean.parseBoolean(setting(config.originals(), NO_APPEND, "false")) ? ""
                        : "; the serdes add the API's path to one that does not end with it")
                        + ")? Until it answers, " + who.untilThen());
            }
        } catch (IOException | IllegalArgumentException e) {
            err.println(who.name() + ": no registry answers at " + shown + " yet (" + config.withoutRegistryUserInfo(e.toString())
                    + "); until one does, " + who.untilThen());
        }
    }

    /**
     * Where Apicurio 2.6's HTTP client sends a registry's requests (its {@code JdkHttpClient}): the URL with a slash at
     * its end, then the API's path ({@value #API_PATH}, or {@code apicurio.registry.rest.client.auto-base-path}) unless
     * it ends with it already, or unless {@code apicurio.registry.client.disable-auto-basepath-append} (or the rest
     * client's {@code apicurio.rest.client.} name) is {@code true}. So {@code http://host:8081} works as
     * {@code http://host:8081/apis/registry/v2}.
     */
    static String apiBase(String url, Map<String, ?> settings) {
        String base = url.endsWith("/") ? url : url + "/";
        // the registry client's name first: Apicurio puts its default there and copies it to the rest client's name, over a
        // value of the user's there or not, as its map's order falls; the rest client's name alone is taken as given
        String path = setting(settings, "registry.rest.client." + BASE_PATH, setting(settings, BASE_PATH, API_PATH));
        // Boolean.parseBoolean, as Apicurio reads it: "true" in any case, nothing around it
        return Boolean.parseBoolean(setting(settings, NO_APPEND, "false")) || base.endsWith(path) ? base : base + path;
    }

    /** A serde setting by the end of its name, under whichever of Apicurio's prefixes (and LobStream's) it is given. */
    private static String setting(Map<String, ?> settings, String suffix, String absent) {
        return settings.entrySet().stream().filter(e -> e.getKey().endsWith("." + suffix) && e.getValue() != null)
                .map(e -> String.valueOf(e.getValue())).findFirst().orElse(absent);
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
