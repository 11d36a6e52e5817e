package io.confluent.kafka.schemaregistry.client.rest.exceptions;

/**
 * Stands in for Confluent's registry client error (its name, status and error code) in RegistryUnavailableExceptionTest,
 * which LobStream tells apart by name: Confluent's client is not a dependency.
 */
public class RestClientException extends Exception {
    private final int status;
    private final int errorCode;

    public RestClientException(String message, int status, int errorCode) {
        super(message + "; error code: " + errorCode);
        this.status = status;
        this.errorCode = errorCode;
    }

    public int getStatus() {
        return status;
    }

    public int getErrorCode() {
        return errorCode;
    }
}
