package io.lobstream.schema.serde;

import java.util.Map;

/** The Apicurio settings LobStream's serdes honour before taking their fast path. */
final class AvroWire {
    /** Apicurio's {@code AvroKafkaSerdeConfig.AVRO_ENCODING}: BINARY (default) or JSON. */
    static final String ENCODING = "apicurio.registry.avro.encoding";

    private AvroWire() {
    }

    static boolean binaryEncoding(Map<String, ?> configs) {
        Object e = configs.get(ENCODING);
        return e == null || "BINARY".equalsIgnoreCase(e.toString());
    }
}
