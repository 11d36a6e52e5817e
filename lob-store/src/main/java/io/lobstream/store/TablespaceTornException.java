package io.lobstream.store;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

/**
 * An unclean open found versions whose index entries reached the disk and whose pages did not ({@code TornWrites}): a
 * power loss between two flushes (or, without lob.sync, at any time), the kernel or RocksDB having written the index
 * back before the page file. Their commands count as applied, so the tablespace would never mend them: it is not
 * opened. A writer node moves it aside and rebuilds the partition from {@code lob.commands}, as after a failed sync.
 */
public class TablespaceTornException extends IOException {
    public TablespaceTornException(Path dir, List<String> problems) {
        super("tablespace " + dir + ": versions no flush had covered lost pages in a crash (" + String.join("; ", problems)
                + "); it is not opened (a writer node moves it aside and rebuilds the partition from lob.commands)");
    }
}
