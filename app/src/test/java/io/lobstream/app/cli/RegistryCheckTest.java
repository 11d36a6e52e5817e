package io.lobstream.app.cli;

import com.sun.net.httpserver.HttpServer;
import io.lobstream.ingest.http.HttpServers;
import io.lobstream.schema.LobStreamConfig;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** What a node says at start of a registry URL its serdes cannot use; the registry is a stand-in that answers one path. */
class RegistryCheckTest {
    private final HttpServer registry;

    RegistryCheckTest() throws IOException {
        registry = HttpServers.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        registry.createContext("/", ex -> {
            try (ex) {
                String path = ex.getRequestURI().getPath();
                ex.sendResponseHeaders(path.equals("/apis/registry/v2/system/info") ? 200
                        : path.equals("/secured/apis/registry/v2/system/info") ? 401 : 404, -1);
            }
        });
        registry.start();
    }

    @AfterEach
    void stop() {
        registry.stop(0);
    }

    @Test
    void theApiBaseIsTakenSilently() throws InterruptedException {
        assertThat(said(base() + "/apis/registry/v2", Map.of())).isEmpty();
    }

    /** Apicurio's client adds the API's path to a URL without it (http://host:8081, as a Kafka user types it): asked there. */
    @Test
    void aUrlWithoutTheApiPathIsTakenAsTheSerdesTakeIt() throws InterruptedException {
        assertThat(said(base(), Map.of())).isEmpty();
        assertThat(said(base() + "/", Map.of())).isEmpty();
        assertThat(RegistryCheck.apiBase("http://r:8081", Map.of())).isEqualTo("http://r:8081/apis/registry/v2/");
        assertThat(RegistryCheck.apiBase("http://r:8081/apis/registry/v2", Map.of())).isEqualTo("http://r:8081/apis/registry/v2/");
        String off = "apicurio.registry.client.disable-auto-basepath-append";
        assertThat(RegistryCheck.apiBase("http://r:8081/route", Map.of(off, "TRUE"))).isEqualTo("http://r:8081/route/");
        assertThat(RegistryCheck.apiBase("http://r:8081/route", Map.of(off, "true "))).as("as Apicurio parses it")
                .isEqualTo("http://r:8081/route/apis/registry/v2/");
        assertThat(RegistryCheck.apiBase("http://r:8081", Map.of("apicurio.registry.rest.client.auto-base-path", "api/v2/")))
                .isEqualTo("http://r:8081/api/v2/");
    }

    @Test
    void aUrlWhereNoRegistryAnswersIsWarnedOf() throws InterruptedException {
        assertThat(said(base() + "/wrong", Map.of())).contains("answered 404 to /wrong/apis/registry/v2/system/info")
                .contains("an Apicurio registry's address");
        assertThat(said(base() + "/apis/registry/v2", Map.of("apicurio.rest.client.disable-auto-basepath-append", "true"))).isEmpty();
        assertThat(said(base(), Map.of("apicurio.rest.client.disable-auto-basepath-append", "true"))).contains("answered 404 to /system/info")
                .doesNotContain("the serdes add");
    }

    @Test
    void anotherRegistrysSerdesAreNotAskedAbout() throws InterruptedException {
        assertThat(said(base(), Map.of(LobStreamConfig.VALUE_SERIALIZER.name(), "io.confluent.kafka.serializers.KafkaAvroSerializer")))
                .isEmpty();
    }

    /** A registry that asks for credentials the serdes have is taken silently; without them, the node says so. */
    @Test
    void aRegistryAskingForCredentialsIsWarnedOfOnlyWhenTheSerdesHaveNone() throws InterruptedException {
        assertThat(said(base() + "/secured/apis/registry/v2", Map.of("apicurio.auth.username", "u", "apicurio.auth.password", "p")))
                .isEmpty();
        assertThat(said(base() + "/secured/apis/registry/v2", Map.of("lob.serde.apicurio.auth.username", "u",
                "lob.serde.apicurio.auth.password", "p"))).isEmpty(); // the spelling that reaches the serdes as well
        assertThat(said(base() + "/secured/apis/registry/v2", Map.of())).contains("answered 401 to /secured/apis/registry/v2/system/info")
                .contains("no credentials");
    }

    /** TLS settings of the serdes' own (a private CA): not looked at with the JVM's defaults, which would fail. */
    @Test
    void aRegistryReachedWithTlsSettingsIsNotAskedAbout() throws InterruptedException {
        assertThat(said(base(), Map.of("apicurio.registry.request.ssl.truststore.location", "/etc/registry/ca.p12"))).isEmpty();
    }

    private String base() {
        return "http://127.0.0.1:" + registry.getAddress().getPort();
    }

    private static String said(String url, Map<String, String> more) throws InterruptedException {
        Map<String, Object> props = new HashMap<>(more);
        props.put(LobStreamConfig.REGISTRY_URL.name(), url);
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        RegistryCheck.warnIfNotApicurio(new LobStreamConfig(props), RegistryCheck.Looker.NODE, new PrintStream(err, true, StandardCharsets.UTF_8));
        return err.toString(StandardCharsets.UTF_8);
    }
}
