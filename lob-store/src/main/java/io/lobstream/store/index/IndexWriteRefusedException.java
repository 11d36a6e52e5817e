package io.lobstream.store.index;

import java.io.IOException;

/**
 * The disk refused a write to a tablespace's index (full, or RocksDB stopped after a flush it could not write), or a
 * sync was not tried because one was refused before. Nothing the kernel had accepted was dropped, so this is not a
 * failed fsync and does not fence the tablespace: the command whose write was refused fails its task, no sync is tried
 * after it, and the store, closed as after a crash, reopens from what its last good sync made durable once there is room.
 */
public class IndexWriteRefusedException extends IOException {
    public IndexWriteRefusedException(String message, Throwable cause) {
        super(message, cause);
    }
}
