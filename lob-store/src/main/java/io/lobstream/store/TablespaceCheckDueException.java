package io.lobstream.store;

import java.io.IOException;
import java.nio.file.Path;

/**
 * A tablespace that must have the pages of every version checked before it opens, asked not to do it here: no flush
 * covered them (lob.sync off, or a release before flushes recorded what they covered), the last run ended uncleanly, and
 * the machine may have restarted since ({@code BootId}), so a power loss may have taken pages its index names; or the
 * record of what the last flush covered does not decode. The check reads the whole tablespace once; the caller opens it
 * again where that may take long.
 */
public class TablespaceCheckDueException extends IOException {
    public TablespaceCheckDueException(Path dir, String why) {
        super("tablespace " + dir + ": the pages of every version must be checked before it opens (" + why + ")");
    }
}
