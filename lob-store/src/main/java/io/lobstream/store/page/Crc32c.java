package io.lobstream.store.page;

/**
 * CRC32C arithmetic that {@link java.util.zip.CRC32C} lacks: combining the CRCs of two
 * adjacent byte runs into the CRC of their concatenation without reading the bytes again
 * (zlib's {@code crc32_combine}, for the Castagnoli polynomial). A chunked upload keeps a
 * running CRC of the value this way across chunks, restarts and Kafka Streams commits; the
 * writer reads each byte of a page once and derives both the page's checksum and the value's
 * CRC from that one pass.
 *
 * <p>Appending {@code n} bytes multiplies a CRC by x<sup>8n</sup> modulo the polynomial (zlib
 * 1.2.12's method: a product of precomputed x<sup>2<sup>k</sup></sup>, one per set bit of
 * {@code 8n}). The writer combines at every page with the same few lengths (a page's payload
 * capacity), so the last few multipliers are kept.
 */
public final class Crc32c {
    /** The Castagnoli polynomial, reflected. */
    private static final int POLY = 0x82F63B78;
    /** x^0, the multiplicative identity, in the reflected bit order. */
    private static final int ONE = 1 << 31;
    /**
     * X_TO_2_TO[k] = x^(2^k) modulo the polynomial, for every k a length in bytes (a long) can need: up to 3 + 62. Not
     * 32 of them read cyclically as zlib does, which holds only for a polynomial whose x^(2^32) is x.
     */
    private static final int[] X_TO_2_TO = new int[3 + 63];
    /** Multipliers for recent lengths, by a hash of the length: racy, but each entry is immutable. */
    private static final Multiplier[] RECENT = new Multiplier[16];

    static {
        int p = ONE >>> 1; // x^1
        X_TO_2_TO[0] = p;
        for (int k = 1; k < X_TO_2_TO.length; k++) {
            X_TO_2_TO[k] = p = multiply(p, p);
        }
    }

    private record Multiplier(long length, int xTo8n) {
    }

    private Crc32c() {
    }

    /** The CRC32C of A followed by B, given crc(A), crc(B) and the length of B. */
    public static int combine(int crcA, int crcB, long lengthB) {
        if (lengthB <= 0) {
            return crcA;
        }
        return multiply(multiplierFor(lengthB), crcA) ^ crcB;
    }

    private static int multiplierFor(long length) {
        int slot = (int) (length ^ length >>> 17) & (RECENT.length - 1);
        Multiplier m = RECENT[slot];
        if (m == null || m.length != length) {
            m = new Multiplier(length, xToThe2ToK(length, 3)); // 8 bits a byte: x^(8n) = x^(n * 2^3)
            RECENT[slot] = m;
        }
        return m.xTo8n;
    }

    /** x^(n * 2^k) modulo the polynomial. */
    private static int xToThe2ToK(long n, int k) {
        int p = ONE;
        for (; n != 0; n >>>= 1, k++) {
            if ((n & 1) != 0) {
                p = multiply(X_TO_2_TO[k], p);
            }
        }
        return p;
    }

    /** a times b modulo the polynomial; {@code a} must not be 0 (the multipliers never are). */
    private static int multiply(int a, int b) {
        int product = 0;
        for (int m = ONE; ; m >>>= 1) {
            if ((a & m) != 0) {
                product ^= b;
                if ((a & (m - 1)) == 0) {
                    return product;
                }
            }
            b = (b & 1) != 0 ? b >>> 1 ^ POLY : b >>> 1;
        }
    }
}
