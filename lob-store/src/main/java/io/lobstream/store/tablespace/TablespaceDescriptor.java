package io.lobstream.store.tablespace;

import io.lobstream.store.LaterFormatException;
import io.lobstream.store.LobStoreConfig;

import java.io.IOException;
import java.io.Reader;
import java.io.StringWriter;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Properties;

/**
 * A tablespace's descriptor, {@code tablespace.properties} in its directory ({@link TablespaceDirs}): its format, page
 * size and copy id. Purge workers read it and never the index.
 *
 * @param pageSize the page size the tablespace was created with, whatever {@code lob.page.size} says now
 * @param copyId   this copy of the partition's data, random, made when the tablespace is created:
 *                 another node's copy of the same partition (rebuilt by replay) holds the same values
 *                 under other version numbers and pages, so version numbers and page numbers are
 *                 meaningful only with it (ETags, undo records). {@code null} in a descriptor from
 *                 before copy ids that no writer has opened since.
 */
public record TablespaceDescriptor(int pageSize, String copyId) {

    /**
     * The page file's format (page header and layout) this release reads and writes, in the descriptor's
     * {@code format.version}: a tablespace of a later format is refused by every reader, purge workers too (which read
     * the descriptor and never the index), not misread. The index has a format of its own
     * ({@link io.lobstream.store.index.LobIndex#FORMAT_VERSION}).
     */
    public static final int FORMAT_VERSION = 1;

    /** Reads the descriptor of an existing tablespace. */
    public static TablespaceDescriptor read(Path tablespaceDir) throws IOException {
        Path f = tablespaceDir.resolve(TablespaceDirs.DESCRIPTOR);
        if (!Files.exists(f)) {
            throw new java.nio.file.NoSuchFileException(f.toString(), null, "no tablespace here");
        }
        Properties p = new Properties();
        try (Reader r = Files.newBufferedReader(f)) {
            p.load(r);
        } catch (IllegalArgumentException e) { // a garbled backslash-u escape: the file's damage, held to its one partition by callers
            throw new IOException(f + ": " + e.getMessage() + ": a damaged descriptor: restore it from a backup, or rebuild the partition", e);
        }
        int format = number(f, p, "format.version", "1");
        if (format > FORMAT_VERSION) {
            throw new LaterFormatException("tablespace " + tablespaceDir, format, FORMAT_VERSION);
        }
        int pageSize = number(f, p, "page.size", null);
        if (!LobStoreConfig.isPageSize(pageSize)) { // not blamed on a setting the operator never made; no division by 0 in fsck
            throw new IOException(f + ": page.size " + pageSize + " is no page size (a power of two from " + LobStoreConfig.MIN_PAGE_SIZE
                    + " to " + LobStoreConfig.MAX_PAGE_SIZE + " bytes): a damaged descriptor: restore it from a backup, or rebuild "
                    + "the partition");
        }
        return new TablespaceDescriptor(pageSize, p.getProperty("copy.id"));
    }

    /** A descriptor's number: one missing or garbled is the file's damage, an IOException naming it (not a bare parse error). */
    private static int number(Path descriptor, Properties p, String key, String absent) throws IOException {
        String value = p.getProperty(key, absent);
        try {
            return Integer.parseInt(value == null ? "" : value.trim());
        } catch (NumberFormatException e) {
            throw new IOException(descriptor + ": " + key + (value == null ? " missing" : " is not a number: '" + value + "'")
                    + " (a damaged descriptor: restore it from a backup, or rebuild the partition)");
        }
    }

    /**
     * Writes the descriptor of a new tablespace, or reads that of an existing one; either way with a
     * copy id (one from before copy ids gets one now). The descriptor is written before the page file
     * and the index are made, so a directory that has either but no descriptor lost it (a restore
     * that left it out): refused, not given a new one with the configured page size, under which
     * free space would be counted in other units and live pages handed out again.
     */
    public static TablespaceDescriptor createOrRead(Path tablespaceDir, int pageSize) throws IOException {
        Path f = tablespaceDir.resolve(TablespaceDirs.DESCRIPTOR);
        if (!Files.exists(f) && (Files.exists(tablespaceDir.resolve(TablespaceDirs.PAGES)) || Files.exists(tablespaceDir.resolve(TablespaceDirs.INDEX)))) {
            throw new IOException("tablespace " + tablespaceDir + " has a page file or an index but no " + TablespaceDirs.DESCRIPTOR
                    + ", which says its page size: restore that file with the rest, or move the directory aside to have the "
                    + "partition rebuilt");
        }
        TablespaceDescriptor d = Files.exists(f) ? read(tablespaceDir) : new TablespaceDescriptor(pageSize, null);
        if (d.copyId() != null) {
            return d;
        }
        TablespaceDirs.createDirectoriesDurably(tablespaceDir); // its name, as the descriptor's below
        TablespaceDescriptor made = new TablespaceDescriptor(d.pageSize(), newCopyId());
        write(tablespaceDir, made);
        return made;
    }

    /**
     * Gives an existing tablespace a new copy id, its page size kept; on disk before it returns. For a copy about to
     * apply commands again that a copy of the same id may have applied before (see {@code LobStore#renewCopyId}).
     */
    public static TablespaceDescriptor renewCopyId(Path tablespaceDir) throws IOException {
        TablespaceDescriptor renewed = new TablespaceDescriptor(read(tablespaceDir).pageSize(), newCopyId());
        write(tablespaceDir, renewed);
        return renewed;
    }

    private static String newCopyId() {
        return java.util.UUID.randomUUID().toString().substring(0, 8);
    }

    /**
     * Replaces the descriptor atomically: a power loss leaves the old one or the new one, both forced. It is of this
     * release's format, the only one there is yet: a later format must keep a renewed descriptor's own.
     */
    private static void write(Path tablespaceDir, TablespaceDescriptor d) throws IOException {
        Properties p = new Properties();
        p.setProperty("format.version", Integer.toString(FORMAT_VERSION));
        p.setProperty("page.size", Integer.toString(d.pageSize()));
        p.setProperty("copy.id", d.copyId());
        Path tmp = tablespaceDir.resolve(TablespaceDirs.DESCRIPTOR + ".tmp");
        StringWriter text = new StringWriter();
        p.store(text, "LobStream tablespace");
        try (FileChannel out = FileChannel.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
            out.write(ByteBuffer.wrap(text.toString().getBytes(StandardCharsets.UTF_8))); // as read() reads it
            out.force(true); // before the rename: a power loss must not leave an empty descriptor, which no open accepts
        }
        Files.move(tmp, tablespaceDir.resolve(TablespaceDirs.DESCRIPTOR), java.nio.file.StandardCopyOption.ATOMIC_MOVE);
        TablespaceDirs.syncDirectory(tablespaceDir);
    }
}
