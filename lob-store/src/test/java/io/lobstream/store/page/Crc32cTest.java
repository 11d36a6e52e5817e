package io.lobstream.store.page;

import org.junit.jupiter.api.Test;

import java.util.Random;
import java.util.zip.CRC32C;

import static org.assertj.core.api.Assertions.assertThat;

class Crc32cTest {
    private static int crc(byte[] b, int off, int len) {
        CRC32C c = new CRC32C();
        c.update(b, off, len);
        return (int) c.getValue();
    }

    @Test
    void combiningTheCrcsOfTwoRunsGivesTheCrcOfBoth() {
        Random random = new Random(7);
        for (int i = 0; i < 200; i++) {
            byte[] b = new byte[random.nextInt(100_000)];
            random.nextBytes(b);
            int cut = b.length == 0 ? 0 : random.nextInt(b.length + 1);
            int combined = Crc32c.combine(crc(b, 0, cut), crc(b, cut, b.length - cut), b.length - cut);
            assertThat(combined).isEqualTo(crc(b, 0, b.length));
        }
    }

    /** Lengths far past what a test can hash: appending B then C must be appending B and C's combination, at any size. */
    @Test
    void combiningIsAssociativeAtAnyLength() {
        Random random = new Random(3);
        for (int i = 0; i < 1000; i++) {
            int a = random.nextInt();
            int b = random.nextInt();
            int c = random.nextInt();
            long lengthB = 1 + (random.nextLong() >>> (2 + random.nextInt(60)));
            long lengthC = 1 + (random.nextLong() >>> (2 + random.nextInt(60)));
            assertThat(Crc32c.combine(Crc32c.combine(a, b, lengthB), c, lengthC))
                    .as("lengths %d and %d", lengthB, lengthC)
                    .isEqualTo(Crc32c.combine(a, Crc32c.combine(b, c, lengthC), lengthB + lengthC));
        }
    }
}
