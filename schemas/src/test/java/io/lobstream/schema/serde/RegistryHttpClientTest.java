package io.lobstream.schema.serde;

import com.fasterxml.jackson.core.type.TypeReference;
import io.apicurio.rest.client.request.Operation;
import io.apicurio.rest.client.request.Request;
import io.apicurio.rest.client.spi.ApicurioHttpClient;
import io.lobstream.schema.LobStreamConfig;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

class RegistryHttpClientTest {
    /** Answers at once with the headers it was given for the request (on the thread that sends it). */
    private static final class Answering implements ApicurioHttpClient {
        private final ThreadLocal<Map<String, String>> next = ThreadLocal.withInitial(Map::of);

        @Override
        @SuppressWarnings("unchecked")
        public <T> T sendRequest(Request<T> request) {
            Map<String, String> h = next.get();
            next.remove();
            return (T) h.getOrDefault("X-Test", "none");
        }

        @Override
        public void setNextRequestHeaders(Map<String, String> headers) {
            next.set(headers);
        }

        @Override
        public Map<String, String> getHeaders() {
            return next.get();
        }

        @Override
        public void close() {
        }
    }

    private static final Request<String> GET = new Request.RequestBuilder<String>().operation(Operation.GET).path("ids/contentIds/1")
            .responseType(new TypeReference<String>() { }).build();

    /** The headers set for the caller's next request reach the thread that sends it, once. */
    @Test
    void theCallersNextRequestHeadersGoWithItsRequest() {
        RegistryHttpClient client = new RegistryHttpClient(new Answering(), "http://registry", 10_000);
        client.setNextRequestHeaders(Map.of("X-Test", "given"));
        assertThat(client.sendRequest(GET)).isEqualTo("given");
        assertThat(client.sendRequest(GET)).as("for the next request only").isEqualTo("none");
    }

    /**
     * A caller interrupted while it waits cancels its request, often before a pool thread started it: that request's
     * place among the requests that may run at once is given back. Kept, 64 of them failed every lookup in the JVM.
     */
    @Test
    void aRequestCancelledBeforeItStartedGivesItsPlaceBack() {
        RegistryHttpClient client = new RegistryHttpClient(new Answering(), "http://registry", 10_000);
        int interrupted = 0;
        for (int i = 0; i < RegistryHttpClient.IN_FLIGHT * 8; i++) {
            Thread.currentThread().interrupt();
            try {
                client.sendRequest(GET); // answered before the wait looked at the interrupt: nothing cancelled
            } catch (RegistryUnavailableException e) {
                assertThat(e).hasMessageContaining("interrupted");
                interrupted++;
            } finally {
                Thread.interrupted();
            }
        }
        assertThat(interrupted).as("requests cancelled").isGreaterThan(RegistryHttpClient.IN_FLIGHT);
        assertThat(client.sendRequest(GET)).isEqualTo("none");
    }

    /**
     * Apicurio makes the identity server's client (for a token) inside the serde's configure, with no settings: it takes
     * the serde's limit, not the key's default. The registry's client keeps its own settings' limit.
     */
    @Test
    void aClientMadeWithoutSettingsWhileASerdeIsConfiguredTakesTheSerdesLimit() {
        String key = LobStreamConfig.REGISTRY_REQUEST_TIMEOUT_MS.name();
        long[] limits = new long[2];
        RegistryHttpClient.configuring(Map.of(key, 250), () -> {
            limits[0] = limitOf(RegistryHttpClient.create("http://idp/token", Map.of(), null, null));
            limits[1] = limitOf(RegistryHttpClient.create("http://registry", Map.of(key, 300), null, null));
        });
        assertThat(limits).containsExactly(250, 300);
        assertThat(limitOf(RegistryHttpClient.create("http://idp/token", Map.of(), null, null))).as("no serde configured here")
                .isEqualTo((long) LobStreamConfig.REGISTRY_REQUEST_TIMEOUT_MS.defaultValue());
    }

    /**
     * Through the serdes as a node makes them, LobStream's and Apicurio's stock ones: the client Apicurio makes for the
     * identity server inside configure (its resolver's authClient, asked for nothing here) has the configured limit.
     */
    @Test
    void theIdentityServersClientHasTheConfiguredLimit() throws ReflectiveOperationException {
        for (String serializer : new String[] {LobStreamConfig.VALUE_SERIALIZER.defaultValue(), "io.apicurio.registry.serde.avro.AvroKafkaSerializer"}) {
            LobStreamConfig config = new LobStreamConfig(Map.of(LobStreamConfig.REGISTRY_URL.name(), "http://127.0.0.1:1/apis/registry/v2",
                    LobStreamConfig.VALUE_SERIALIZER.name(), serializer, LobStreamConfig.REGISTRY_REQUEST_TIMEOUT_MS.name(), "250",
                    "apicurio.auth.service.token.endpoint", "http://127.0.0.1:1/token", "apicurio.auth.client.id", "c",
                    "apicurio.auth.client.secret", "s"));
            try (org.apache.kafka.common.serialization.Serializer<Object> s = io.lobstream.schema.LobSerdes.valueSerializer(config)) {
                Object r = ((io.apicurio.registry.serde.SchemaResolverConfigurer<?, ?>) s).getSchemaResolver();
                java.lang.reflect.Field auth = io.apicurio.registry.resolver.AbstractSchemaResolver.class.getDeclaredField("authClient");
                auth.setAccessible(true);
                assertThat(limitOf((ApicurioHttpClient) auth.get(r))).as(serializer).isEqualTo(250);
            }
        }
    }

    private static long limitOf(ApicurioHttpClient client) {
        return ((RegistryHttpClient) client).timeoutMs();
    }
}
