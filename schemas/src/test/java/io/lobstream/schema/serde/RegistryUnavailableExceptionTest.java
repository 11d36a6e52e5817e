package io.lobstream.schema.serde;

import io.apicurio.registry.rest.client.exception.ArtifactNotFoundException;
import io.apicurio.registry.rest.client.exception.RestClientException;
import io.apicurio.registry.rest.v2.beans.Error;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.common.errors.SerializationException;
import org.junit.jupiter.api.Test;

import java.io.EOFException;
import java.io.UncheckedIOException;
import java.net.ConnectException;
import javax.net.ssl.SSLHandshakeException;

import static org.assertj.core.api.Assertions.assertThat;

/** Which decoding failures are the registry's (retry) and which the record's (dead letter). */
class RegistryUnavailableExceptionTest {

    private static Error error(int code) {
        Error e = new Error();
        e.setErrorCode(code);
        e.setMessage("HTTP " + code);
        return e;
    }

    /** As the registry's own error body is parsed: with the error's name. */
    private static Error named(int code, String name) {
        Error e = error(code);
        e.setName(name);
        return e;
    }

    /** As the registry's own 404 body is parsed: with the error's name. */
    private static Error notFound(String name) {
        Error e = error(404);
        e.setName(name);
        return e;
    }

    @Test
    void aRegistryThatDoesNotAnswerIsRetried() {
        assertThat(RegistryUnavailableException.isRegistryFailure(new IllegalStateException(new ConnectException("refused")))).isTrue();
        assertThat(RegistryUnavailableException.isRegistryFailure(new RestClientException(error(503)))).isTrue();
    }

    /**
     * A 404 whose body is not the registry's error (a wrong path in the URL, a proxy or ingress with no route): the
     * client leaves the error unnamed. Not the record's fault: dead-lettered, every good command would be lost.
     */
    @Test
    void aNotFoundThatIsNotTheRegistrysAnswerIsRetried() {
        assertThat(RegistryUnavailableException.isRegistryFailure(new RestClientException(error(404)))).isTrue();
    }

    /**
     * Confluent's serdes swapped in, as their deserializer passes the registry client's error on: a code of the registry's
     * own (40403, 50003, 50005 for a body it could not parse) as the cause of a SerializationException; a bare 4xx (401,
     * 429, a wrong path's 404) as an InvalidConfigurationException without it. Only the registry's "no such schema" is
     * the record's fault; a TLS failure on the way is the registry's too.
     */
    @Test
    void confluentsClientErrorsAreTheRegistrysButItsOwnNotFound() {
        for (int[] failure : new int[][] {{500, 50003}, {404, 50005}}) {
            assertThat(RegistryUnavailableException.isRegistryFailure(new SerializationException("Error retrieving Avro schema",
                    new io.confluent.kafka.schemaregistry.client.rest.exceptions.RestClientException("x", failure[0], failure[1]))))
                    .as("%d / %d", failure[0], failure[1]).isTrue();
        }
        assertThat(RegistryUnavailableException.isRegistryFailure(new InvalidConfigurationException("Unauthorized; error code: 401")))
                .isTrue();
        assertThat(RegistryUnavailableException.isRegistryFailure(new SerializationException("Error retrieving Avro schema",
                new SSLHandshakeException("PKIX path building failed")))).isTrue();
        assertThat(RegistryUnavailableException.isRegistryFailure(new SerializationException("Error retrieving Avro schema",
                new io.confluent.kafka.schemaregistry.client.rest.exceptions.RestClientException("Schema not found", 404, 40403))))
                .isFalse();
    }

    @Test
    void aSchemaTheRegistryDoesNotHaveOrBytesThatDoNotDecodeAreTheRecordsFault() {
        assertThat(RegistryUnavailableException.isRegistryFailure(new ArtifactNotFoundException(error(404)))).isFalse();
        assertThat(RegistryUnavailableException.isRegistryFailure(new RestClientException(notFound("ContentNotFoundException")))).isFalse();
        assertThat(RegistryUnavailableException.isRegistryFailure(new UncheckedIOException(new EOFException()))).isFalse();
        assertThat(RegistryUnavailableException.isRegistryFailure(new IllegalArgumentException("magic byte"))).isFalse();
    }

    /** A schema the registry refused (invalid, incompatible, against a rule) is its answer, not a failure to answer. */
    @Test
    void aSchemaTheRegistryRefusedIsARefusal() {
        assertThat(RegistryUnavailableException.isRefusal(new SerializationException(new RestClientException(named(409,
                "IncompatibleArtifactException"))))).isTrue();
        assertThat(RegistryUnavailableException.isRefusal(new RestClientException(named(400, "InvalidArtifactException")))).isTrue();
        // a proxy's 400 page: no error body of the registry's, so no name
        assertThat(RegistryUnavailableException.isRefusal(new RestClientException(error(400)))).isFalse();
        assertThat(RegistryUnavailableException.isRefusal(new RestClientException(error(503)))).isFalse();
        assertThat(RegistryUnavailableException.isRefusal(new IllegalStateException(new ConnectException("refused")))).isFalse();
    }
}
