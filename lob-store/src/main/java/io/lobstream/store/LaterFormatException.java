package io.lobstream.store;

import java.io.IOException;

/**
 * A tablespace, or its index, written in a format a later LobStream release introduced: this release cannot read it, which
 * says nothing of whether it is sound (fsck reports it as not checked, not as damage).
 */
public class LaterFormatException extends IOException {
    public LaterFormatException(String what, long format, long newestRead) {
        super(what + " is of format " + format + ", written by a later LobStream release; this one reads format " + newestRead
                + " and below (releases go forward only: run the one that wrote it)");
    }
}
