package io.lobstream.schema.serde;

import io.apicurio.registry.rest.client.exception.ArtifactNotFoundException;
import io.apicurio.registry.rest.client.exception.RestClientException;
import io.apicurio.registry.rest.v2.beans.Error;
import org.junit.jupiter.api.Test;

import java.io.EOFException;
import java.io.UncheckedIOException;
import java.net.ConnectException;

import static org.assertj.core.api.Assertions.assertThat;

/** Which decoding failures are the registry's (retry) and which the record's (dead letter). */
class RegistryUnavailableExceptionTest {

    private static Error error(int code) {
        Error e = new Error();
        e.setErrorCode(code);
        e.setMessage("HTTP " + code);
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
     * A 404 whose body is not the registry's error (a URL missing its path, a proxy or ingress with no route): the
     * client leaves the error unnamed. Not the record's fault: dead-lettered, every good command would be lost.
     */
    @Test
    void aNotFoundThatIsNotTheRegistrysAnswerIsRetried() {
        assertThat(RegistryUnavailableException.isRegistryFailure(new RestClientException(error(404)))).isTrue();
    }

    @Test
    void aSchemaTheRegistryDoesNotHaveOrBytesThatDoNotDecodeAreTheRecordsFault() {
        assertThat(RegistryUnavailableException.isRegistryFailure(new ArtifactNotFoundException(error(404)))).isFalse();
        assertThat(RegistryUnavailableException.isRegistryFailure(new RestClientException(notFound("ContentNotFoundException")))).isFalse();
        assertThat(RegistryUnavailableException.isRegistryFailure(new UncheckedIOException(new EOFException()))).isFalse();
        assertThat(RegistryUnavailableException.isRegistryFailure(new IllegalArgumentException("magic byte"))).isFalse();
    }
}
