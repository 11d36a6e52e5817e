package io.lobstream.schema.serde;

import io.lobstream.schema.LobSerdes;
import io.lobstream.schema.LobStreamConfig;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.Deserializer;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

class LobAvroDeserializerTest {
    /** Refused before any registry lookup: the registry named here is never asked. */
    private final Deserializer<Object> deserializer = LobSerdes.valueDeserializer(
            new LobStreamConfig(Map.of(LobStreamConfig.REGISTRY_URL.name(), "http://127.0.0.1:9/apis/registry/v2")));

    /** A producer that sent JSON, or Avro without the registry's framing, reads what was expected in the dead letter. */
    @Test
    void aValueNotInTheWireFormatSaysWhatWasExpected() {
        assertThatThrownBy(() -> deserializer.deserialize("lob.commands", "{\"op\":\"PUT\"}".getBytes(StandardCharsets.UTF_8)))
                .isInstanceOf(SerializationException.class)
                .hasMessage("not in the schema registry's wire format, where a value begins with byte 0 and a 4-byte schema id "
                        + "before its Avro body: its first byte is 0x7B ('{', as JSON's)");
        assertThatThrownBy(() -> deserializer.deserialize("lob.commands", new byte[] {(byte) 0x8c, 1, 2, 3, 4, 5}))
                .hasMessageEndingWith("its first byte is 0x8C");
        assertThatThrownBy(() -> deserializer.deserialize("lob.commands", new byte[0])).hasMessageEndingWith("an empty value");
        assertThatThrownBy(() -> deserializer.deserialize("lob.commands", new byte[] {0, 0, 1})).hasMessageEndingWith("a value of 3 bytes");
        // as a consumer given lob.value.deserializer calls it, with the record's headers
        assertThatThrownBy(() -> deserializer.deserialize("lob.commands", new RecordHeaders(), new byte[] {'{'}))
                .hasMessageEndingWith("its first byte is 0x7B ('{', as JSON's)");
    }
}
