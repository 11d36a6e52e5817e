package io.lobstream.schema.serde;

import io.lobstream.avro.LobCommand;
import io.lobstream.avro.Extent;
import io.lobstream.avro.LobOp;
import io.lobstream.avro.ReclaimRecord;
import io.lobstream.schema.LobSerdes;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.EncoderFactory;
import org.apache.avro.specific.SpecificDatumReader;
import org.apache.avro.specific.SpecificDatumWriter;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ArraySliceDecoderTest {
    private static final int PREFIX = 5; // as a wire-format header would sit before the record

    @BeforeAll
    static void trustGeneratedClasses() throws ClassNotFoundException {
        Class.forName(LobSerdes.class.getName()); // its initializer tells Avro to trust the generated classes
    }

    @Test
    void bytesFieldIsASliceOfTheRecordArrayAndEveryOtherFieldDecodes() throws IOException {
        byte[] data = new byte[300_000];
        Arrays.fill(data, (byte) 7);
        data[0] = 1;
        data[data.length - 1] = 9;
        LobCommand sent = LobCommand.newBuilder().setCommandId("c-1").setLobId("lob-1").setOp(LobOp.PUT).setUploadId("u")
                .setChunkIndex(2).setChunkCount(3).setOffset(1L << 40).setTotalLength(900_000).setCrc32c(-5)
                .setData(ByteBuffer.wrap(data)).setContentType("application/octet-stream").setMetadata(Map.of("k", "v"))
                .setProducedAt(java.time.Instant.ofEpochMilli(1234)).build();
        byte[] wire = encode(sent);

        LobCommand got = new SpecificDatumReader<>(LobCommand.class)
                .read(null, new ArraySliceDecoder(wire, PREFIX, wire.length - PREFIX - 3));

        assertThat(got).isEqualTo(sent);
        ByteBuffer slice = got.getData();
        assertThat(slice.array()).isSameAs(wire);
        assertThat(slice.position()).isZero();
        assertThat(slice.remaining()).isEqualTo(data.length);
        assertThat(slice.get(0)).isEqualTo((byte) 1);
        assertThat(slice.get(data.length - 1)).isEqualTo((byte) 9);
    }

    @Test
    void aBytesLengthPastTheRecordIsAnError() throws IOException {
        LobCommand sent = LobCommand.newBuilder().setCommandId("c").setLobId("l").setOp(LobOp.PUT)
                .setData(ByteBuffer.wrap(new byte[1000])).build();
        byte[] wire = encode(sent);
        int cut = wire.length - PREFIX - 3 - 600; // ends inside the data field

        assertThatThrownBy(() -> new SpecificDatumReader<>(LobCommand.class).read(null, new ArraySliceDecoder(wire, PREFIX, cut)))
                .isInstanceOf(IOException.class).hasMessageContaining("overruns the record");
    }

    @Test
    void anArrayCountPastTheRecordIsAnErrorNotAnAllocation() throws IOException {
        // lobId, version, then an extents block claiming 2^31 - 9 items in a record of a few bytes:
        // Avro's own decoder sizes the list by the count, and ends the thread with an OutOfMemoryError
        byte[] wire = forged(enc -> {
            enc.writeString("lob-1");
            enc.writeLong(7);
            enc.writeLong(Integer.MAX_VALUE - 8);
        });

        assertThatThrownBy(() -> new SpecificDatumReader<>(ReclaimRecord.class).read(null, new ArraySliceDecoder(wire, 0, wire.length)))
                .isInstanceOf(IOException.class).hasMessageContaining("array block of 2147483639 items overruns the record");
    }

    @Test
    void aStringLengthPastTheRecordIsAnErrorNotAnAllocation() throws IOException {
        byte[] wire = forged(enc -> enc.writeLong(1L << 30)); // a lobId of 1 GiB, and nothing after it

        assertThatThrownBy(() -> new SpecificDatumReader<>(ReclaimRecord.class).read(null, new ArraySliceDecoder(wire, 0, wire.length)))
                .isInstanceOf(IOException.class).hasMessageContaining("string of 1073741824 bytes overruns the record");
    }

    @Test
    void stringsAndArraysThatFitDecode() throws IOException {
        ReclaimRecord sent = ReclaimRecord.newBuilder().setLobId("lob-é").setVersion(3)
                .setExtents(List.of(new Extent(10L, 4), new Extent(20L, 1))).setWorkerId("w").setTime(java.time.Instant.ofEpochMilli(5))
                .build();
        byte[] wire = forged(enc -> new SpecificDatumWriter<>(ReclaimRecord.class).write(sent, enc));

        assertThat(new SpecificDatumReader<>(ReclaimRecord.class).read(null, new ArraySliceDecoder(wire, 0, wire.length))).isEqualTo(sent);
    }

    /**
     * A writer schema someone registered with an array of nulls, whose items encode in no bytes: each block may claim
     * as many items as bytes are left, and many blocks would keep the writer skipping for hours. All the counts of a
     * record together may not pass its length.
     */
    @Test
    void itemsClaimedInAllPastTheRecordsLengthAreAnError() throws IOException {
        org.apache.avro.Schema writer = new org.apache.avro.Schema.Parser().parse(LobCommand.getClassSchema().toString()
                .replaceFirst("\\]\\s*}\\s*$", ",{\"name\":\"junk\",\"type\":{\"type\":\"array\",\"items\":\"null\"},\"default\":[]}]}"));
        assertThat(writer.getField("junk")).isNotNull();
        LobCommand sent = LobCommand.newBuilder().setCommandId("c").setLobId("l").setOp(LobOp.PUT).setData(ByteBuffer.wrap(new byte[1]))
                .build();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        BinaryEncoder enc = EncoderFactory.get().binaryEncoder(out, null);
        new SpecificDatumWriter<>(LobCommand.class).write(sent, enc); // the fields before junk, as the writer schema has them
        for (int block = 0; block < 2000; block++) {
            enc.writeLong(1500); // no more than the bytes left after it: each block alone passes
        }
        enc.writeLong(0);
        enc.flush();
        byte[] wire = out.toByteArray();

        assertThatThrownBy(() -> new SpecificDatumReader<LobCommand>(writer, LobCommand.getClassSchema())
                .read(null, new ArraySliceDecoder(wire, 0, wire.length)))
                .isInstanceOf(IOException.class).hasMessageContaining("items in all");
    }

    /**
     * A producer in another language that registered its strings as bytes (a promotion Avro's compatibility allows): Avro
     * resolves such a field with readBytes(..).array(), and of a slice that was the whole record, so every such field was
     * the record's bytes as text. LobStream's own schema keeps its chunk data a slice.
     */
    @Test
    void aStringTheWriterSentAsBytesIsThatStringNotTheWholeRecord() throws IOException {
        org.apache.avro.Schema own = LobCommand.getClassSchema();
        org.apache.avro.Schema writer = new org.apache.avro.Schema.Parser().parse(own.toString()
                .replace("{\"name\":\"commandId\",\"type\":{\"type\":\"string\",\"avro.java.string\":\"String\"}",
                        "{\"name\":\"commandId\",\"type\":\"bytes\"")
                .replace("{\"name\":\"contentType\",\"type\":[\"null\",{\"type\":\"string\",\"avro.java.string\":\"String\"}]",
                        "{\"name\":\"contentType\",\"type\":[\"null\",\"bytes\"]"));
        assertThat(writer.getField("commandId").schema().getType()).isEqualTo(org.apache.avro.Schema.Type.BYTES);
        assertThat(writer.getField("contentType").schema().getTypes().get(1).getType()).isEqualTo(org.apache.avro.Schema.Type.BYTES);
        assertThat(ArraySliceDecoder.sliceUnsafe(writer, own)).isTrue();
        assertThat(ArraySliceDecoder.sliceUnsafe(own, own)).as("the chunk data of LobStream's own records").isFalse();

        org.apache.avro.generic.GenericRecord sent = new org.apache.avro.generic.GenericRecordBuilder(writer)
                .set("commandId", ByteBuffer.wrap("c-1".getBytes(java.nio.charset.StandardCharsets.UTF_8))).set("lobId", "lob-1")
                .set("op", new org.apache.avro.generic.GenericData.EnumSymbol(writer.getField("op").schema(), "PUT"))
                .set("data", ByteBuffer.wrap(new byte[] {4, 5, 6}))
                .set("contentType", ByteBuffer.wrap("text/plain".getBytes(java.nio.charset.StandardCharsets.UTF_8))).build();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.write(new byte[PREFIX]);
        BinaryEncoder enc = EncoderFactory.get().binaryEncoder(out, null);
        new org.apache.avro.generic.GenericDatumWriter<org.apache.avro.generic.GenericRecord>(writer).write(sent, enc);
        enc.flush();
        byte[] wire = out.toByteArray();

        LobCommand got = new SpecificDatumReader<LobCommand>(writer, own)
                .read(null, new ArraySliceDecoder(wire, PREFIX, wire.length - PREFIX, ArraySliceDecoder.sliceUnsafe(writer, own)));
        assertThat(got.getCommandId()).isEqualTo("c-1");
        assertThat(got.getContentType()).isEqualTo("text/plain");
        assertThat(got.getData()).isEqualTo(ByteBuffer.wrap(new byte[] {4, 5, 6}));
    }

    /** A field only the writer schema has is skipped: a negative length there must not be skipped as 0. */
    @Test
    void aNegativeLengthInASkippedStringIsAnError() throws IOException {
        org.apache.avro.Schema writer = new org.apache.avro.Schema.Parser().parse(ReclaimRecord.getClassSchema().toString()
                .replaceFirst("\\[\\s*\\{", "[{\"name\":\"junk\",\"type\":\"string\"},{"));
        assertThat(writer.getFields().get(0).name()).isEqualTo("junk");
        byte[] wire = forged(enc -> enc.writeLong(-3));

        assertThatThrownBy(() -> new SpecificDatumReader<ReclaimRecord>(writer, ReclaimRecord.getClassSchema())
                .read(null, new ArraySliceDecoder(wire, 0, wire.length)))
                .isInstanceOf(IOException.class).hasMessageContaining("string of -3 bytes");
    }

    /** An int written as a wider varint (a CRC32C sent unsigned) is an error, not another number; the int range decodes. */
    @Test
    void anIntPastThirtyTwoBitsIsAnErrorNotAnotherNumber() throws IOException {
        byte[] unsigned = forged(enc -> enc.writeLong(3_000_000_000L));
        assertThatThrownBy(() -> new ArraySliceDecoder(unsigned, 0, unsigned.length).readInt())
                .isInstanceOf(IOException.class).hasMessageContaining("holds 3000000000");
        for (int n : new int[] {Integer.MIN_VALUE, -1, 0, Integer.MAX_VALUE}) {
            byte[] wire = forged(enc -> enc.writeInt(n));
            assertThat(new ArraySliceDecoder(wire, 0, wire.length).readInt()).isEqualTo(n);
        }
    }

    private interface Writing {
        void to(BinaryEncoder enc) throws IOException;
    }

    private static byte[] forged(Writing writing) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        BinaryEncoder enc = EncoderFactory.get().binaryEncoder(out, null);
        writing.to(enc);
        enc.flush();
        return out.toByteArray();
    }

    /** The record between {@value #PREFIX} bytes of header and 3 bytes of trailing garbage. */
    private static byte[] encode(LobCommand c) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.write(new byte[PREFIX]);
        BinaryEncoder enc = EncoderFactory.get().binaryEncoder(out, null);
        new SpecificDatumWriter<>(LobCommand.class).write(c, enc);
        enc.flush();
        out.write(new byte[] {1, 2, 3});
        return out.toByteArray();
    }
}
