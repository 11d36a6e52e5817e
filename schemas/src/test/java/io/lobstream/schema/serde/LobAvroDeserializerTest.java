package io.lobstream.schema.serde;

import com.sun.net.httpserver.HttpServer;
import io.lobstream.avro.ReclaimRecord;
import io.lobstream.schema.LobSerdes;
import io.lobstream.schema.LobStreamConfig;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serializer;
import org.junit.jupiter.api.Test;

import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

class LobAvroDeserializerTest {
    /** Refused before any registry lookup: the registry named here is never asked. */
    private final Deserializer<Object> deserializer = LobSerdes.valueDeserializer(
            new LobStreamConfig(Map.of(LobStreamConfig.REGISTRY_URL.name(), "http://127.0.0.1:9/apis/registry/v2")));

    /** A producer that sent JSON, or Avro without the registry's framing, reads what was expected in the dead letter. */
    @Test
    void aValueNotInTheWireFormatSaysWhatWasExpected() {
        assertThatThrownBy(() -> deserializer.deserialize("lob.commands", "{\"op\":\"PUT\"}".getBytes(StandardCharsets.UTF_8)))
                .isInstanceOf(SerializationException.class)
                .hasMessage("not in the schema registry's wire format, where a value begins with byte 0 and a 4-byte schema id "
                        + "before its Avro body: its first byte is 0x7B ('{', as JSON's)");
        assertThatThrownBy(() -> deserializer.deserialize("lob.commands", new byte[] {(byte) 0x8c, 1, 2, 3, 4, 5}))
                .hasMessageEndingWith("its first byte is 0x8C");
        assertThatThrownBy(() -> deserializer.deserialize("lob.commands", new byte[0])).hasMessageEndingWith("an empty value");
        assertThatThrownBy(() -> deserializer.deserialize("lob.commands", new byte[] {0, 0, 1})).hasMessageEndingWith("a value of 3 bytes");
        // as a consumer given lob.value.deserializer calls it, with the record's headers
        assertThatThrownBy(() -> deserializer.deserialize("lob.commands", new RecordHeaders(), new byte[] {'{'}))
                .hasMessageEndingWith("its first byte is 0x7B ('{', as JSON's)");
    }

    /** A command framed with schema id 1, whatever its body: the lookup fails before the body is read. */
    private static final byte[] FRAMED = {0, 0, 0, 0, 1, 2, 4, 6};

    /**
     * A registry that answers, but not as the registry: a proxy's or a login's page under 200. Its failure, not the
     * record's: a dead letter for each good command while it lasted, and a redrive that puts each after every command sent
     * since, were what this did before.
     */
    @Test
    void aPageThatIsNotTheRegistrysAnswerIsRetriedNotDeadLettered() throws Exception {
        assertThatThrownBy(() -> decodeAgainst(200, "text/html", "<html><body>Sign in</body></html>", "text/html",
                "<html><body>Sign in</body></html>"))
                .isInstanceOf(RegistryUnavailableException.class).hasMessageContaining("schema id 1");
        assertThatThrownBy(() -> decodeAgainst(503, "text/plain", "busy", "text/plain", "busy"))
                .isInstanceOf(RegistryUnavailableException.class);
    }

    /** The registry's own answers that the record never decodes: no such schema, or a schema that is no Avro schema. */
    @Test
    void noSuchSchemaOrOneThatIsNoAvroSchemaIsTheRecordsFault() {
        String noContent = "{\"error_code\":404,\"name\":\"ContentNotFoundException\",\"message\":\"No content with id: 1\"}";
        assertThatThrownBy(() -> decodeAgainst(404, "application/json", noContent, "application/json", noContent))
                .isNotInstanceOf(RegistryUnavailableException.class)
                .satisfies(e -> assertThat(RegistryUnavailableException.isRegistryFailure(e)).isFalse());
        // a producer in another language that framed its command with a JSON Schema's id
        assertThatThrownBy(() -> decodeAgainst(200, "application/json", "{\"type\":\"object\",\"properties\":{}}", "application/json", "[]"))
                .isNotInstanceOf(RegistryUnavailableException.class)
                .satisfies(e -> assertThat(RegistryUnavailableException.isRegistryFailure(e)).isFalse());
    }

    /**
     * A schema in hand and a body that does not decode under it: the record's fault, as a consumer calls it (with the
     * record's headers) and as LobStream does (without). A schema Avro's parser refuses with Java's own exception (a field
     * order it does not know) is the record's too.
     */
    @Test
    void aBodyThatDoesNotDecodeOrASchemaAvroRefusesIsTheRecordsFaultOnEitherPath() throws Exception {
        String schema = io.lobstream.avro.LobCommand.getClassSchema().toString();
        for (boolean withHeaders : new boolean[] {false, true}) {
            assertThatThrownBy(() -> decodeAgainst(200, "application/json", schema, "application/json", "[]", withHeaders))
                    .as(withHeaders ? "with headers" : "without")
                    .isNotInstanceOf(RegistryUnavailableException.class)
                    .satisfies(e -> assertThat(RegistryUnavailableException.isRegistryFailure(e)).isFalse())
                    .satisfies(e -> assertThat(e.getMessage()).isNotNull());
        }
        String badOrder = "{\"type\":\"record\",\"name\":\"R\",\"fields\":[{\"name\":\"f\",\"type\":\"int\",\"order\":\"up\"}]}";
        assertThatThrownBy(() -> decodeAgainst(200, "application/json", badOrder, "application/json", "[]", false))
                .isNotInstanceOf(RegistryUnavailableException.class)
                .satisfies(e -> assertThat(RegistryUnavailableException.isRegistryFailure(e)).isFalse());
    }

    /**
     * A registry that takes the connection and never answers, and one that sends its answer's headers and then stalls.
     * Before, the thread that asked waited until it did: a writer's stream thread past max.poll.interval.ms, a purge
     * worker's loop, a producer's send past max.block.ms. Now each request is cut off at lob.registry.request.timeout.ms,
     * and the failure is the registry's, retried, decoding and encoding both.
     */
    @Test
    void aRegistryThatNeverAnswersOrStallsMidAnswerIsCutOffAndTakenForAway() throws Exception {
        for (boolean headersFirst : new boolean[] {false, true}) {
            CountDownLatch over = new CountDownLatch(1);
            ExecutorService handlers = Executors.newCachedThreadPool(); // each request held on a thread of its own
            HttpServer registry = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
            registry.setExecutor(handlers);
            registry.createContext("/", exchange -> {
                if (headersFirst && exchange.getRequestURI().getPath().endsWith("/references")) {
                    byte[] none = "[]".getBytes(StandardCharsets.UTF_8); // so the schema's content is what stalls
                    exchange.getResponseHeaders().set("Content-Type", "application/json");
                    exchange.sendResponseHeaders(200, none.length);
                    exchange.getResponseBody().write(none);
                    exchange.close();
                    return;
                }
                if (headersFirst) {
                    exchange.getResponseHeaders().set("Content-Type", "application/json");
                    exchange.sendResponseHeaders(200, 1000);
                    exchange.getResponseBody().write('[');
                    exchange.getResponseBody().flush();
                }
                try {
                    over.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                exchange.close();
            });
            registry.start();
            LobStreamConfig config = new LobStreamConfig(Map.of(
                    LobStreamConfig.REGISTRY_URL.name(), "http://127.0.0.1:" + registry.getAddress().getPort() + "/apis/registry/v2",
                    LobStreamConfig.REGISTRY_REQUEST_TIMEOUT_MS.name(), "200"));
            ReclaimRecord reclaim = ReclaimRecord.newBuilder().setLobId("a").setVersion(1).setExtents(List.of()).setWorkerId("w")
                    .setTime(Instant.EPOCH).build();
            try (Deserializer<Object> d = LobSerdes.valueDeserializer(config); Serializer<Object> s = LobSerdes.valueSerializer(config)) {
                assertTimeoutPreemptively(Duration.ofSeconds(60), () -> {
                    assertThatThrownBy(() -> LobSerdes.decode(d, "lob.commands", FRAMED, Object.class))
                            .as(headersFirst ? "headers, then a stall" : "no answer")
                            .isInstanceOf(RegistryUnavailableException.class)
                            .hasMessageContaining("did not answer GET").hasMessageContaining("within 200 ms")
                            .hasMessageContaining("lob.registry.request.timeout.ms");
                    assertThatThrownBy(() -> s.serialize("lob.reclaim", reclaim))
                            .isInstanceOf(RegistryUnavailableException.class).hasMessageContaining("within 200 ms");
                });
            } finally {
                over.countDown();
                registry.stop(0);
                handlers.shutdownNow();
            }
        }
    }

    private static Object decodeAgainst(int status, String contentType, String content, String referencesType, String references)
            throws Exception {
        return decodeAgainst(status, contentType, content, referencesType, references, false);
    }

    /** Decodes {@link #FRAMED} with a registry that answers every content lookup so, and every references lookup so. */
    private static Object decodeAgainst(int status, String contentType, String content, String referencesType, String references,
                                        boolean withHeaders) throws Exception {
        HttpServer registry = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        registry.createContext("/", exchange -> {
            boolean refs = exchange.getRequestURI().getPath().endsWith("/references");
            byte[] body = (refs ? references : content).getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().set("Content-Type", refs ? referencesType : contentType);
            exchange.sendResponseHeaders(status, body.length);
            exchange.getResponseBody().write(body);
            exchange.close();
        });
        registry.start();
        try (Deserializer<Object> d = LobSerdes.valueDeserializer(new LobStreamConfig(Map.of(LobStreamConfig.REGISTRY_URL.name(),
                "http://127.0.0.1:" + registry.getAddress().getPort() + "/apis/registry/v2")))) {
            return withHeaders ? d.deserialize("lob.commands", new RecordHeaders(), FRAMED)
                    : LobSerdes.decode(d, "lob.commands", FRAMED, Object.class);
        } finally {
            registry.stop(0);
        }
    }
}
