package io.lobstream.schema.serde;

import io.apicurio.registry.resolver.SchemaLookupResult;
import io.apicurio.registry.serde.avro.AvroKafkaSerializer;
import io.apicurio.registry.serde.data.KafkaSerdeMetadata;
import io.apicurio.registry.serde.data.KafkaSerdeRecord;
import org.apache.avro.Schema;
import org.apache.avro.SchemaNormalization;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.EncoderFactory;
import org.apache.avro.specific.SpecificDatumWriter;
import org.apache.avro.specific.SpecificRecord;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.header.Headers;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Apicurio's Avro serializer (same registry lookups, same Confluent wire format: magic byte,
 * 4-byte id, Avro binary), made fit for values of hundreds of KB. The stock one resolves the
 * schema of every record (rendering it as JSON) and encodes into a {@code ByteArrayOutputStream}
 * that starts at 32 bytes and doubles, so a 512 KiB chunk is copied about five times. Here the
 * schema of a generated class is resolved once per topic, the record is encoded once to count
 * its bytes (the {@code bytes} field is only measured, not copied) and once into an array of
 * exactly that size: one copy of the value.
 *
 * <p>Specific records in Avro binary with the id in the payload take this path; anything else
 * (generic records, headers mode, JSON encoding) goes through the stock serializer unchanged.
 */
public class LobAvroSerializer extends AvroKafkaSerializer<Object> {
    static {
        RegistryHttpClient.install(); // before the first registry client: requests to the registry with a time limit
    }

    private final Map<Key, Prepared> prepared = new ConcurrentHashMap<>();
    private boolean binaryPayloadIds;

    private record Key(String topic, Class<?> type) {
    }

    /** What every record of one class on one topic shares: the wire prefix and the datum writer. */
    private record Prepared(byte[] prefix, SpecificDatumWriter<Object> writer) {
    }

    @Override
    public void configure(Map<String, ?> configs, boolean isKey) {
        RegistryHttpClient.configuring(configs, () -> super.configure(configs, isKey));
        binaryPayloadIds = headersHandler == null && AvroWire.binaryEncoding(configs);
    }

    @Override
    public byte[] serialize(String topic, Headers headers, Object data) {
        if (!binaryPayloadIds || !(data instanceof SpecificRecord record)) {
            return super.serialize(topic, headers, data);
        }
        Prepared p = prepared.computeIfAbsent(new Key(topic, data.getClass()), k -> prepare(topic, headers, record));
        try {
            Counter counter = new Counter();
            p.writer.write(data, encoder(counter));
            byte[] out = new byte[p.prefix.length + counter.count];
            System.arraycopy(p.prefix, 0, out, 0, p.prefix.length);
            ArrayFiller filler = new ArrayFiller(out, p.prefix.length);
            p.writer.write(data, encoder(filler));
            if (filler.position != out.length) {
                throw new IllegalStateException("record changed while it was serialized: " + filler.position + " != " + out.length);
            }
            return out;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * The id the registry gives, for the class's own schema. The record is encoded with the class's schema, so the id
     * must name that schema (up to what binary encoding ignores: docs, properties, defaults). With auto-registering
     * off, the resolver answers with the subject's latest version ({@code apicurio.registry.find-latest}), which a
     * newer producer may have registered: framed with its id, this client's bytes would be read with the wrong writer
     * schema (dead-lettered at best, fields shifted at worst). Refused instead, saying why.
     */
    private Prepared prepare(String topic, Headers headers, SpecificRecord record) {
        SchemaLookupResult<Schema> schema;
        try {
            schema = getSchemaResolver().resolveSchema(new KafkaSerdeRecord<>(new KafkaSerdeMetadata(topic, isKey(), headers), record));
        } catch (RuntimeException e) {
            // said as the registry's (a writer task's failure counted as registry_away, a purge worker's abort not taken
            // for a bug), as decoding says it; the record is sent again either way
            if (RegistryUnavailableException.isRegistryFailure(e) && !RegistryUnavailableException.isRefusal(e)) {
                throw new RegistryUnavailableException("cannot encode a record of " + topic + ": the schema registry did not answer: " + e, e);
            }
            throw e;
        }
        Schema resolved = schema.getParsedSchema() == null ? null : schema.getParsedSchema().getParsedSchema();
        if (resolved != null
                && SchemaNormalization.parsingFingerprint64(resolved) != SchemaNormalization.parsingFingerprint64(record.getSchema())) {
            throw new SerializationException("the registry's schema for " + topic + " (" + schema.getArtifactId() + " version "
                    + schema.getVersion() + ", content id " + schema.getContentId() + ") is not " + record.getSchema().getFullName()
                    + "'s as this client knows it (with apicurio.registry.auto-register=false the latest version is used, and a "
                    + "newer producer registered it): name the version of this client's schema with apicurio.registry.artifact.version");
        }
        ByteArrayOutputStream prefix = new ByteArrayOutputStream();
        prefix.write(MAGIC_BYTE);
        try {
            getIdHandler().writeId(schema.toArtifactReference(), prefix);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return new Prepared(prefix.toByteArray(), new SpecificDatumWriter<>(record.getSchema()));
    }

    private static BinaryEncoder encoder(OutputStream out) {
        return EncoderFactory.get().directBinaryEncoder(out, null);
    }

    /** Counts what is written; large writes (the value) cost nothing. */
    private static final class Counter extends OutputStream {
        int count;

        @Override
        public void write(int b) {
            count++;
        }

        @Override
        public void write(byte[] b, int off, int len) {
            count = Math.addExact(count, len);
        }
    }

    /** Writes into a preallocated array; never grows it. */
    private static final class ArrayFiller extends OutputStream {
        private final byte[] array;
        int position;

        ArrayFiller(byte[] array, int position) {
            this.array = array;
            this.position = position;
        }

        @Override
        public void write(int b) {
            array[position++] = (byte) b;
        }

        @Override
        public void write(byte[] b, int off, int len) {
            System.arraycopy(b, off, array, position, len);
            position += len;
        }
    }
}
