package io.lobstream.store.page;

/**
 * CRC32C arithmetic that {@link java.util.zip.CRC32C} lacks: combining the CRCs of two
 * adjacent byte runs into the CRC of their concatenation without reading the bytes again
 * (zlib's {@code crc32_combine}, for the Castagnoli polynomial). A chunked upload keeps a
 * running CRC of the value this way across chunks, restarts and Kafka Streams commits.
 */
public final class Crc32c {
    /** The Castagnoli polynomial, reflected. */
    private static final int POLY = 0x82F63B78;

    private Crc32c() {
    }

    /** The CRC32C of A followed by B, given crc(A), crc(B) and the length of B. */
    public static int combine(int crcA, int crcB, long lengthB) {
        if (lengthB <= 0) {
            return crcA;
        }
        int[] even = new int[32];
        int[] odd = new int[32];
        // the operator for one zero bit
        odd[0] = POLY;
        int row = 1;
        for (int n = 1; n < 32; n++) {
            odd[n] = row;
            row <<= 1;
        }
        square(even, odd); // two zero bits
        square(odd, even); // four zero bits
        long len = lengthB;
        int crc = crcA;
        // apply len zero bytes to crcA: one squaring per bit of len (the first gives one byte)
        do {
            square(even, odd);
            if ((len & 1) != 0) {
                crc = times(even, crc);
            }
            len >>>= 1;
            if (len == 0) {
                break;
            }
            square(odd, even);
            if ((len & 1) != 0) {
                crc = times(odd, crc);
            }
            len >>>= 1;
        } while (len != 0);
        return crc ^ crcB;
    }

    private static int times(int[] matrix, int vec) {
        int sum = 0;
        int i = 0;
        while (vec != 0) {
            if ((vec & 1) != 0) {
                sum ^= matrix[i];
            }
            vec >>>= 1;
            i++;
        }
        return sum;
    }

    private static void square(int[] square, int[] matrix) {
        for (int n = 0; n < 32; n++) {
            square[n] = times(matrix, matrix[n]);
        }
    }
}
