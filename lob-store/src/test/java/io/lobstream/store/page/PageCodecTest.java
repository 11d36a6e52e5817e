package io.lobstream.store.page;

import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.Random;
import java.util.zip.CRC32C;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class PageCodecTest {
    private static final int PAGE = 4096;

    private static ByteBuffer page(long pageNo, byte[] payload) {
        ByteBuffer p = ByteBuffer.allocate(PAGE);
        p.put(PageCodec.HEADER_SIZE, payload);
        PageCodec.seal(p, pageNo, new PageHeader(PageType.DATA, 42L, 7L, 3, payload.length));
        return p;
    }

    @Test
    void pageRoundTrips() throws Exception {
        byte[] payload = "hello, pages".getBytes();
        ByteBuffer p = page(9, payload);
        PageHeader h = PageCodec.verify(p, 9);
        assertThat(h).isEqualTo(new PageHeader(PageType.DATA, 42L, 7L, 3, payload.length));
        byte[] back = new byte[payload.length];
        p.get(PageCodec.HEADER_SIZE, back);
        assertThat(back).isEqualTo(payload);
    }

    @Test
    void aPageSealedWithItsPayloadsCrcIsTheSameAsOneSealedByReadingIt() throws Exception {
        Random random = new Random(5);
        for (int i = 0; i < 300; i++) {
            byte[] payload = new byte[random.nextInt(PageCodec.payloadCapacity(PAGE) + 1)];
            random.nextBytes(payload);
            long pageNo = i % 2 == 0 ? random.nextInt(1 << 20) : random.nextLong() >>> 1;
            PageHeader header = new PageHeader(PageType.DATA, random.nextLong(), random.nextLong() >>> 1, random.nextInt(1000), payload.length);
            CRC32C crc = new CRC32C();
            crc.update(payload);
            ByteBuffer read = ByteBuffer.allocate(PAGE).put(PageCodec.HEADER_SIZE, payload);
            ByteBuffer given = ByteBuffer.allocateDirect(PAGE).put(PageCodec.HEADER_SIZE, payload);
            PageCodec.seal(read, pageNo, header);
            PageCodec.seal(given, pageNo, header, (int) crc.getValue());
            assertThat(given).isEqualTo(read);
            assertThat(PageCodec.verify(given, pageNo)).isEqualTo(header);
        }
    }

    @Test
    void everySingleBitFlipIsDetectedAndNamesThePage() {
        byte[] payload = new byte[100];
        for (int i = 0; i < payload.length; i++) {
            payload[i] = (byte) i;
        }
        int covered = PageCodec.HEADER_SIZE + payload.length;
        for (int bit = 0; bit < covered * 8; bit++) {
            ByteBuffer p = page(12345, payload);
            int at = bit / 8;
            p.put(at, (byte) (p.get(at) ^ (1 << (bit % 8))));
            assertThatThrownBy(() -> PageCodec.verify(p, 12345))
                    .isInstanceOf(CorruptPageException.class)
                    .hasMessageContaining("page 12345")
                    .satisfies(e -> assertThat(((CorruptPageException) e).pageNo()).isEqualTo(12345));
        }
    }

    @Test
    void aPageReadFromTheWrongPlaceFailsItsChecksum() {
        ByteBuffer p = page(10, new byte[]{1, 2, 3});
        assertThatThrownBy(() -> PageCodec.verify(p, 11)).hasMessageContaining("page 11").hasMessageContaining("CRC32C");
    }

    @Test
    void aStalePageIsReported() {
        ByteBuffer p = page(10, new byte[]{1, 2, 3});
        assertThatThrownBy(() -> PageCodec.verifyExpected(p, 10, PageType.DATA, 42L, 8L, 3))
                .isInstanceOf(StalePageException.class).hasMessageContaining("stale").hasMessageContaining("page 10");
        assertThatThrownBy(() -> PageCodec.verifyExpected(p, 10, PageType.ROOT, 42L, 7L, 3))
                .isInstanceOf(StalePageException.class).hasMessageContaining("expected a ROOT page");
    }
}
