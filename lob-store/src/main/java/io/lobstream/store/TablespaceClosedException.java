package io.lobstream.store;

import java.io.IOException;

/**
 * The tablespace was closed before or while it was used: its partition moved to another task or
 * node, or the node is stopping. Not a fault of the tablespace; a reader asks again.
 */
public class TablespaceClosedException extends IOException {
    public TablespaceClosedException(String name) {
        super("tablespace " + name + " is closed");
    }
}
