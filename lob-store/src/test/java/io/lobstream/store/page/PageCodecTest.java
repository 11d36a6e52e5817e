package io.lobstream.store.page;

import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;

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
