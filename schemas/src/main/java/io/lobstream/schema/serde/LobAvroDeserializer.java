package io.lobstream.schema.serde;

import io.apicurio.registry.resolver.ParsedSchema;
import io.apicurio.registry.serde.avro.AvroKafkaDeserializer;
import org.apache.avro.AvroRuntimeException;
import org.apache.avro.Schema;
import org.apache.avro.io.DatumReader;
import org.apache.avro.specific.SpecificData;
import org.apache.avro.specific.SpecificDatumReader;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.header.Headers;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.util.Map;

/**
 * Apicurio's Avro deserializer (registry lookups by id, Confluent wire format) that decodes
 * into LobStream's generated classes with one datum reader per writer schema. The stock one
 * builds a new reader, and with it the writer-to-reader resolution, for every record.
 *
 * <p>{@code bytes} fields (a command's data) are slices of the record's array, not copies
 * ({@link ArraySliceDecoder}).
 *
 * <p>Always a specific reader: the reader schema is that of the generated class named by the
 * writer schema. JSON-encoded payloads go through the stock path.
 */
public class LobAvroDeserializer extends AvroKafkaDeserializer<Object> {
    static {
        RegistryHttpClient.install(); // before the first registry client: requests to the registry with a time limit
    }

    /** The magic byte and the schema id before a value's body (Confluent's wire format, 4-byte ids). */
    private static final int WIRE_HEADER = 5;
    /** The last writer schema seen and its reader: a topic has one writer schema at a time. */
    private volatile Cached cached;
    private boolean binary;

    /** {@code copyBytes}: {@link ArraySliceDecoder#sliceUnsafe}, once per writer schema. */
    private record Cached(Schema writer, DatumReader<Object> reader, boolean copyBytes) {
    }

    @Override
    public void configure(Map<String, ?> configs, boolean isKey) {
        RegistryHttpClient.configuring(configs, () -> super.configure(configs, isKey));
        binary = AvroWire.binaryEncoding(configs);
    }

    /**
     * A value not framed as the registry's serializers frame it is refused with what was expected: the stock message,
     * "Unknown magic byte!", is all a producer that sent JSON or bare Avro would read in the dead letter's reason.
     */
    @Override
    public Object deserialize(String topic, byte[] data) {
        requireWireFormat(data);
        try {
            return super.deserialize(topic, data);
        } catch (BodyFailure e) {
            throw e.record;
        } catch (RuntimeException e) {
            throw resolving(data, e);
        }
    }

    /**
     * As {@link #deserialize(String, byte[])}, headers unread: LobStream never moves the schema id to the headers (its
     * configuration refuses that), and the stock path would come back to that method, its failures judged a second time.
     */
    @Override
    public Object deserialize(String topic, Headers headers, byte[] data) {
        return deserialize(topic, data);
    }

    /**
     * A failure before the record's body was read: in looking its schema up. The record's fault only where the registry
     * said there is no such schema, or the schema it gave is no Avro schema (a producer framed its record with a JSON
     * Schema's or Protobuf's id): either way it never decodes. Anything else is the registry's, or the way to it: an
     * answer that is not the registry's (a proxy's HTML page under 200), one cut short, a refusal. Taken for the record's,
     * as {@link RegistryUnavailableException#isRegistryFailure} alone took these, each good command that came while it
     * lasted was dead-lettered, and a redrive would put it after every command sent since.
     */
    private static RuntimeException resolving(byte[] data, RuntimeException e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof RegistryUnavailableException || t instanceof AvroRuntimeException || thrownByAvro(t)) {
                return e; // Avro's parser refused the schema: mostly a SchemaParseException, but a bad field order is Java's
            }
        }
        if (RegistryUnavailableException.isNotFound(e)) {
            return e;
        }
        int id = ByteBuffer.wrap(data, 1, Integer.BYTES).getInt();
        return new RegistryUnavailableException("the schema registry's answer for schema id " + id + " could not be used: " + e, e);
    }

    private static boolean thrownByAvro(Throwable t) {
        StackTraceElement[] at = t.getStackTrace();
        return at.length > 0 && at[0].getClassName().startsWith("org.apache.avro.")
                || at.length > 1 && at[0].getClassName().startsWith("java.") && at[1].getClassName().startsWith("org.apache.avro.");
    }

    /** A failure reading a record's body, its schema in hand: the record's, whatever its type (thrown on as it is). */
    private static final class BodyFailure extends RuntimeException {
        final RuntimeException record;

        BodyFailure(RuntimeException record) {
            super(null, null, false, false);
            this.record = record;
        }
    }

    private static void requireWireFormat(byte[] data) {
        if (data != null && (data.length < WIRE_HEADER || data[0] != 0)) {
            throw new SerializationException("not in the schema registry's wire format, where a value begins with byte 0 and "
                    + "a 4-byte schema id before its Avro body: " + (data.length == 0 ? "an empty value"
                    : data.length < WIRE_HEADER && data[0] == 0 ? "a value of " + data.length + " bytes"
                    : String.format("its first byte is 0x%02X%s", data[0] & 0xff, data[0] == '{' ? " ('{', as JSON's)" : "")));
        }
    }

    /** {@code start} is already an index into {@code buffer.array()}, as in the stock implementation. */
    @Override
    protected Object readData(ParsedSchema<Schema> schema, ByteBuffer buffer, int start, int length) {
        try {
            return binary ? readBinary(schema, buffer, start, length) : super.readData(schema, buffer, start, length);
        } catch (BodyFailure e) {
            throw e; // the stock JSON path reads through the headers' one below
        } catch (RuntimeException e) {
            throw new BodyFailure(e);
        }
    }

    /** The stock path's own reading (JSON encoding goes through it), its failures the record's too. */
    @Override
    protected Object readData(Headers headers, ParsedSchema<Schema> schema, ByteBuffer buffer, int start, int length) {
        try {
            return super.readData(headers, schema, buffer, start, length);
        } catch (BodyFailure e) {
            throw e;
        } catch (RuntimeException e) {
            throw new BodyFailure(e);
        }
    }

    private Object readBinary(ParsedSchema<Schema> schema, ByteBuffer buffer, int start, int length) {
        Schema writer = schema.getParsedSchema();
        Cached c = cached;
        if (c == null || c.writer != writer) {
            SpecificDatumReader<Object> reader = readerFor(writer);
            c = new Cached(writer, reader, ArraySliceDecoder.sliceUnsafe(writer, reader.getExpected()));
            cached = c;
        }
        try {
            // bytes left after the record are not refused: an older writer applied such records (a client that framed a
            // newer record with an older schema's id), and a rebuild must apply them as it did
            return c.reader.read(null, new ArraySliceDecoder(buffer.array(), start, length, c.copyBytes));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static SpecificDatumReader<Object> readerFor(Schema writer) {
        Class<?> type = SpecificData.get().getClass(writer);
        if (type == null) {
            throw new IllegalArgumentException("no generated class for writer schema " + writer.getFullName());
        }
        return new SpecificDatumReader<>(writer, SpecificData.get().getSchema(type));
    }
}
