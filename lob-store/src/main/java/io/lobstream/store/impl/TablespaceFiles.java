package io.lobstream.store.impl;

import io.lobstream.store.LobStoreConfig;
import io.lobstream.store.TablespaceSyncFailedException;
import io.lobstream.store.index.IndexMemory;
import io.lobstream.store.index.LobIndex;
import io.lobstream.store.tablespace.PageFile;
import io.lobstream.store.tablespace.TablespaceDescriptor;
import io.lobstream.store.tablespace.TablespaceDirs;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A tablespace directory's files, checked and open for reading and writing: its descriptor, its page file and its index.
 * What {@link DefaultLobStore#open} recovers from; until then, whoever opened them closes them. Where the files are, and
 * the marker files' format: {@link io.lobstream.store.tablespace.TablespaceDirs}; the descriptor's:
 * {@link io.lobstream.store.tablespace.TablespaceDescriptor}.
 *
 * @param config the configuration to run with: the one given, with the page size the tablespace was created with
 */
record TablespaceFiles(Path dir, String copyId, LobStoreConfig config, PageFile pages, LobIndex index) implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(TablespaceFiles.class);
    /** The recorded/configured page sizes said at WARN in this process. */
    private static final java.util.Set<String> PAGE_SIZES_SAID = java.util.concurrent.ConcurrentHashMap.newKeySet();

    /**
     * Opens the files in {@code dir}, creating a tablespace there if it has none.
     *
     * @throws TablespaceSyncFailedException a sync of this copy failed: it is never opened again (a node rebuilds it)
     * @throws IOException                   an index without its page file or pages without their index, or a file
     *                                       that cannot be opened
     */
    static TablespaceFiles open(Path dir, LobStoreConfig config) throws IOException {
        var failed = TablespaceDirs.syncFailure(dir);
        if (failed.isPresent()) {
            throw new TablespaceSyncFailedException(dir, "a sync failed (" + failed.get() + ")");
        }
        TablespaceDescriptor descriptor = TablespaceDescriptor.createOrRead(dir, config.pageSize());
        if (SyncGuard.failedHere(descriptor.copyId())) {
            throw new TablespaceSyncFailedException(dir, "a sync failed in this process (and its marker did not reach the disk)");
        }
        int pageSize = descriptor.pageSize();
        if (pageSize != config.pageSize()) {
            // said once a process at WARN, naming the key: a changed lob.page.size reaches new tablespaces only (a node
            // then holds tablespaces of both sizes), which an operator who changed it expects to hear; the others at INFO
            boolean first = PAGE_SIZES_SAID.add(pageSize + "/" + config.pageSize());
            String line = "tablespace {} was created with {}-byte pages and keeps them; {}={} applies to tablespaces created "
                    + "from now on only";
            if (first) {
                log.warn(line, dir, pageSize, LobStoreConfig.PAGE_SIZE.name(), config.pageSize());
            } else {
                log.info(line, dir, pageSize, LobStoreConfig.PAGE_SIZE.name(), config.pageSize());
            }
            config = config.with(LobStoreConfig.PAGE_SIZE.name(), pageSize);
        }
        if (!Files.exists(dir.resolve(TablespaceDirs.PAGES)) && Files.exists(dir.resolve(TablespaceDirs.INDEX))) {
            // the page file is made before the index: an index without one lost it, and an empty file in its place would
            // leave every value the index names unreadable while its commands count as applied
            throw new IOException("tablespace " + dir + " has an index but no " + TablespaceDirs.PAGES + ": restore it with "
                    + "the rest, or move the directory aside to have the partition rebuilt");
        }
        Path indexDir = dir.resolve(TablespaceDirs.INDEX);
        if (Files.exists(dir.resolve(TablespaceDirs.PAGES)) && Files.size(dir.resolve(TablespaceDirs.PAGES)) > 0
                && Files.notExists(indexDir.resolve("CURRENT"))) {
            // the converse: the file grows only once the index is there, so pages without one lost it. RocksDB would make
            // a new empty index, every page would count as free, and the next writes would overwrite the values. notExists,
            // not !exists: an index directory this user may not read is RocksDB's "Permission denied", not a lost index
            throw new IOException("tablespace " + dir + " has pages but no index (" + indexDir + " holds no RocksDB CURRENT "
                    + "file): restore it with the rest, or move the directory aside to have the partition rebuilt");
        }
        PageFile pages = PageFile.openReadWrite(dir.resolve(TablespaceDirs.PAGES), pageSize);
        LobIndex index = null;
        try {
            index = LobIndex.open(dir.resolve(TablespaceDirs.INDEX), IndexMemory.shared(config.indexMemoryBytes()));
            // the names of both: an index without its page file is refused above. On every open, not only the one
            // that made them: a kill between making them and this sync leaves both there, their names maybe not durable
            TablespaceDirs.syncDirectory(dir);
        } catch (IOException | RuntimeException e) {
            try (pages; LobIndex opened = index) { // closed as the failure leaves, the index first
                throw e;
            }
        }
        return new TablespaceFiles(dir, descriptor.copyId(), config, pages, index);
    }

    /** Closes the index, then the page file. */
    @Override
    public void close() throws IOException {
        try {
            index.close();
        } finally {
            pages.close();
        }
    }
}
