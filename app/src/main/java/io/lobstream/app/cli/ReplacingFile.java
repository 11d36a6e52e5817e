package io.lobstream.app.cli;

import java.io.Closeable;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.channels.Channels;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.EnumSet;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;

/**
 * A regular file written whole or not at all: the bytes go to a new {@code FILE.RANDOM.part} beside it, renamed over FILE
 * by {@link #commit()}; {@link #close()} without it removes the part and leaves FILE as it was.
 * <p>
 * The part is made by this run ({@code CREATE_NEW}: never a file or a link already there, so two downloads to one FILE
 * never write into each other's, and a link planted at the name is not followed). Where FILE exists on a POSIX file
 * system, the part gets FILE's group and permission bits: a FILE kept from other users stays so. While it is written, it
 * has the owner's read and write and the bits FILE gives others, and its group's bits only once it has FILE's group (the
 * creator's may be another); FILE's exact bits come last, after the bytes (a read-only FILE's included).
 */
final class ReplacingFile implements Closeable {
    /** The longest FILE name kept in its part's name, in UTF-8 bytes: file systems take 255, and the rest is the suffix's. */
    private static final int NAME_BYTES = 200;
    private static final Set<PosixFilePermission> GROUP = EnumSet.of(PosixFilePermission.GROUP_READ,
            PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_EXECUTE);
    private static final Set<PosixFilePermission> OTHERS = EnumSet.of(PosixFilePermission.OTHERS_READ,
            PosixFilePermission.OTHERS_WRITE, PosixFilePermission.OTHERS_EXECUTE);

    private final Path target;
    private final Path part;
    private final OutputStream out;
    private final Set<PosixFilePermission> mode; // FILE's bits, less the group's if the part could not take its group
    private boolean committed;

    private ReplacingFile(Path target, Path part, OutputStream out, Set<PosixFilePermission> mode) {
        this.target = target;
        this.part = part;
        this.out = out;
        this.mode = mode;
    }

    static ReplacingFile create(Path target) throws IOException {
        PosixFileAttributes was = attributes(target);
        Path part = target.resolveSibling(partName(target));
        FileAttribute<?>[] attrs = was == null ? new FileAttribute<?>[0]
                : new FileAttribute<?>[] {PosixFilePermissions.asFileAttribute(whileWritten(was.permissions()))};
        OutputStream out = Channels.newOutputStream(Files.newByteChannel(part,
                EnumSet.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE), attrs));
        try {
            part.toFile().deleteOnExit(); // stopped by Ctrl-C or SIGTERM, where close() never runs (once renamed: nothing to delete)
            Set<PosixFilePermission> mode = null;
            if (was != null) {
                mode = EnumSet.copyOf(was.permissions());
                if (tookGroup(part, was)) {
                    Set<PosixFilePermission> now = whileWritten(mode);
                    mode.stream().filter(GROUP::contains).forEach(now::add);
                    setMode(part, now);
                } else {
                    mode.removeAll(GROUP);
                }
            }
            return new ReplacingFile(target, part, out, mode);
        } catch (RuntimeException e) { // deleteOnExit in a shutdown already begun
            out.close();
            Files.deleteIfExists(part);
            throw e;
        }
    }

    OutputStream stream() {
        return out;
    }

    /** Closes the stream, gives the part FILE's bits and renames it over FILE. */
    void commit() throws IOException {
        out.close();
        if (mode != null) {
            setMode(part, mode);
        }
        Files.move(part, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        committed = true;
    }

    @Override
    public void close() throws IOException {
        if (!committed) {
            try {
                out.close();
            } finally {
                Files.deleteIfExists(part);
            }
        }
    }

    /** FILE's name, or a stand-in for one too long to take the suffix, then a random part and {@code .part}. */
    private static String partName(Path target) {
        String name = target.getFileName().toString();
        String kept = name.getBytes(StandardCharsets.UTF_8).length <= NAME_BYTES ? name : "lobstream-get";
        return kept + "." + Long.toUnsignedString(ThreadLocalRandom.current().nextLong(), 36) + ".part";
    }

    /** A regular file's POSIX attributes, or null: none there, or a file system without them. */
    private static PosixFileAttributes attributes(Path file) {
        try {
            return Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS)
                    && Files.getFileAttributeView(file, PosixFileAttributeView.class, LinkOption.NOFOLLOW_LINKS) != null
                    ? Files.readAttributes(file, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS) : null;
        } catch (IOException e) {
            return null; // as for a new FILE: the umask's
        }
    }

    /** The owner's read and write (to fill it), and what FILE gives others; its group's bits wait for its group. */
    private static Set<PosixFilePermission> whileWritten(Set<PosixFilePermission> bits) {
        Set<PosixFilePermission> s = EnumSet.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE);
        bits.stream().filter(OTHERS::contains).forEach(s::add);
        return s;
    }

    /** Whether the part now has FILE's group: a user may give a file only a group they are in. */
    private static boolean tookGroup(Path part, PosixFileAttributes was) {
        try {
            Files.getFileAttributeView(part, PosixFileAttributeView.class).setGroup(was.group());
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    /** Where the file system refuses (CIFS, some NFS): the bits it has, never wider than FILE's but the owner's. */
    private static void setMode(Path file, Set<PosixFilePermission> bits) {
        try {
            Files.setPosixFilePermissions(file, bits);
        } catch (IOException e) {
            // not worth failing a download for
        }
    }
}
