package io.lobstream.schema.serde;

import io.apicurio.registry.resolver.ParsedSchema;
import io.apicurio.registry.serde.avro.AvroKafkaDeserializer;
import org.apache.avro.Schema;
import org.apache.avro.io.DatumReader;
import org.apache.avro.specific.SpecificData;
import org.apache.avro.specific.SpecificDatumReader;

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
    /** The last writer schema seen and its reader: a topic has one writer schema at a time. */
    private volatile Cached cached;
    private boolean binary;

    private record Cached(Schema writer, DatumReader<Object> reader) {
    }

    @Override
    public void configure(Map<String, ?> configs, boolean isKey) {
        super.configure(configs, isKey);
        binary = AvroWire.binaryEncoding(configs);
    }

    /** {@code start} is already an index into {@code buffer.array()}, as in the stock implementation. */
    @Override
    protected Object readData(ParsedSchema<Schema> schema, ByteBuffer buffer, int start, int length) {
        if (!binary) {
            return super.readData(schema, buffer, start, length);
        }
        Schema writer = schema.getParsedSchema();
        Cached c = cached;
        if (c == null || c.writer != writer) {
            c = new Cached(writer, readerFor(writer));
            cached = c;
        }
        try {
            // bytes left after the record are not refused: an older writer applied such records (a client that framed a
            // newer record with an older schema's id), and a rebuild must apply them as it did
            return c.reader.read(null, new ArraySliceDecoder(buffer.array(), start, length));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static DatumReader<Object> readerFor(Schema writer) {
        Class<?> type = SpecificData.get().getClass(writer);
        if (type == null) {
            throw new IllegalArgumentException("no generated class for writer schema " + writer.getFullName());
        }
        return new SpecificDatumReader<>(writer, SpecificData.get().getSchema(type));
    }
}
