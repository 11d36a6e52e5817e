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

    @Test
    void aRegistryThatDoesNotAnswerIsRetried() {
        assertThat(RegistryUnavailableException.isRegistryFailure(new IllegalStateException(new ConnectException("refused")))).isTrue();
        assertThat(RegistryUnavailableException.isRegistryFailure(new RestClientException(error(503)))).isTrue();
    }

    @Test
    void aSchemaTheRegistryDoesNotHaveOrBytesThatDoNotDecodeAreTheRecordsFault() {
        assertThat(RegistryUnavailableException.isRegistryFailure(new ArtifactNotFoundException(error(404)))).isFalse();
        assertThat(RegistryUnavailableException.isRegistryFailure(new RestClientException(error(404)))).isFalse();
        assertThat(RegistryUnavailableException.isRegistryFailure(new UncheckedIOException(new EOFException()))).isFalse();
        assertThat(RegistryUnavailableException.isRegistryFailure(new IllegalArgumentException("magic byte"))).isFalse();
    }
}
