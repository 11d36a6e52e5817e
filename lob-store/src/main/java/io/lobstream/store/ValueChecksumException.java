package io.lobstream.store;

import java.io.IOException;

/** The bytes written do not match the CRC32C the producer computed: the version is not published. */
public class ValueChecksumException extends IOException {
    public ValueChecksumException(String lobId, int expected, int actual) {
        super(String.format("lob %s: value CRC32C %08x does not match the expected %08x", lobId, actual, expected));
    }
}
