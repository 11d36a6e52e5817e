package io.lobstream.schema.serde;

import io.apicurio.registry.rest.client.exception.NotFoundException;
import io.apicurio.registry.rest.client.exception.RestClientException;
import io.apicurio.rest.client.error.ApicurioRestClientException;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.InvalidConfigurationException;

import java.util.Set;

/**
 * A record could not be decoded (or encoded) because the schema registry did not answer (down, unreachable,
 * refusing), not because the record is bad. Whoever decodes must retry, never dead-letter or
 * skip the record: a registry outage would otherwise turn every good record into a dead letter.
 * Whoever encodes retries too (a writer task fails and starts again; a purge worker aborts and reads again).
 * A {@link KafkaException}, so loops that survive Kafka errors survive this one too.
 */
public final class RegistryUnavailableException extends KafkaException {
    public RegistryUnavailableException(String message, Throwable cause) {
        super(message, cause);
    }

    /**
     * Whether {@code e}, thrown while decoding (or encoding), is the registry's failure. A registry that answers
     * "no such schema" (404 with its own error body) has spoken: the record names a schema that does
     * not exist, so it is the record's fault. A 404 without that body is not the registry's answer
     * but a wrong URL's or a proxy's (a wrong path in {@code lob.registry.url}, an ingress with
     * no route): retried, or every good record would become a dead letter.
     */
    public static boolean isRegistryFailure(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof RegistryUnavailableException) {
                return true; // so judged where more is known (LobAvroDeserializer: a failure before the record's body)
            }
            if (isNotFoundItself(t)) {
                return false;
            }
            if (t.getClass().getName().equals(CONFLUENT_REST_ERROR)) {
                // Confluent's serdes swapped in: the registry's own "no such subject, version or schema" is 40401-40403;
                // anything else is its failure (a 5xx while it elects a leader, or 50005 for an answer with no body of its own)
                return confluentErrorCode(t) / 100 != 404;
            }
            // what Confluent's deserializer makes of a bare 4xx (401, 403, 429, a wrong path's 404), without the cause: the
            // credentials, the URL or a rate limit, each the registry's refusal, never the record's
            if (t instanceof InvalidConfigurationException) {
                return true;
            }
            // a network or TLS failure on the way to the registry; not an IOException of the decoder (a truncated record)
            if (t instanceof ApicurioRestClientException || t.getClass().getPackageName().startsWith("java.net")
                    || t.getClass().getPackageName().startsWith("javax.net")) {
                return true;
            }
        }
        return false;
    }

    /** The error Confluent's registry client throws for an answer that is not 2xx (no compile-time dependency on it). */
    private static final String CONFLUENT_REST_ERROR = "io.confluent.kafka.schemaregistry.client.rest.exceptions.RestClientException";

    /** Its error code (the registry's own, as 40403; else the HTTP status, or 50005 for a body it could not parse), or -1. */
    private static int confluentErrorCode(Throwable t) {
        try {
            return t.getClass().getMethod("getErrorCode").invoke(t) instanceof Integer code ? code : -1;
        } catch (ReflectiveOperationException | RuntimeException e) {
            return -1;
        }
    }

    /**
     * Whether the registry refused a schema sent to it (400 invalid, 409 incompatible, 422 a rule violated): its answer
     * about the schema, not a failure to answer. Only with the registry's own error body (named): a proxy's 400 page is
     * no answer of the registry's.
     */
    public static boolean isRefusal(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof RestClientException r && r.getError() != null && r.getError().getErrorCode() != null
                    && r.getError().getName() != null && !r.getError().getName().isEmpty()
                    && Set.of(400, 409, 422).contains(r.getError().getErrorCode())) {
                return true;
            }
        }
        return false;
    }

    static boolean isNotFound(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (isNotFoundItself(t)) {
                return true;
            }
        }
        return false;
    }

    /**
     * Apicurio's client turns the registry's error body into a typed {@link NotFoundException} (or, for a kind it does
     * not know, an error whose name says "NotFound"); a body it cannot parse leaves the name empty.
     */
    private static boolean isNotFoundItself(Throwable t) {
        return t instanceof NotFoundException
                || t instanceof RestClientException r && r.getError() != null && Integer.valueOf(404).equals(r.getError().getErrorCode())
                && r.getError().getName() != null && r.getError().getName().endsWith("NotFoundException");
    }
}
