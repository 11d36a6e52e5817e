package io.lobstream.store;

import java.io.IOException;

/**
 * A value longer than a tablespace of its page size can hold ({@link LobStoreConfig#layoutMaxBytes()}):
 * nothing was allocated or written. The command can never succeed on this tablespace.
 */
public class ValueTooLargeException extends IOException {
    private final String lobId;
    private final long length;
    private final long maxBytes;

    public ValueTooLargeException(String lobId, long length, long maxBytes, int pageSize) {
        super("lob " + lobId + ": a value of " + length + " bytes is over the " + maxBytes + " bytes a tablespace of " + pageSize
                + "-byte pages can hold (lob.page.size)");
        this.lobId = lobId;
        this.length = length;
        this.maxBytes = maxBytes;
    }

    /** Refuses, before anything is allocated, a value longer than a tablespace of {@code config}'s page size holds. */
    public static void check(LobStoreConfig config, String lobId, long length) throws ValueTooLargeException {
        if (length > config.layoutMaxBytes()) {
            throw new ValueTooLargeException(lobId, length, config.layoutMaxBytes(), config.pageSize());
        }
    }

    public String lobId() {
        return lobId;
    }

    /** The length of the value refused. */
    public long length() {
        return length;
    }

    /** The longest value the tablespace holds. */
    public long maxBytes() {
        return maxBytes;
    }
}
