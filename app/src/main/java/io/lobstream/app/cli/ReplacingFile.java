package io.lobstream.app.cli;

import java.io.Closeable;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.channels.Channels;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.GroupPrincipal;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.EnumSet;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;

/**
 * A regular file written whole or not at all: the bytes go to a new {@code FILE.RANDOM.part} beside it, renamed over FILE
 * by {@link #commit()}; {@link #close()} without it removes the part and leaves FILE as it was. Not synced: a power loss
 * may still leave FILE short, as with curl or wget.
 * <p>
 * The part is made by this run ({@code CREATE_NEW}: never a file or a link already there, so two downloads to one FILE
 * never write into each other's, and a link planted at the name is not followed). Where FILE exists on a POSIX file
 * system, the part gets FILE's group (where this user may give it) and permission bits before its first byte: a FILE
 * kept from other users stays so. Until it has FILE's group, its group's members count as others, so the part gives
 * others only what FILE gives both; without that group it keeps no group bits. The owner can always read and write it
 * while it is written (a read-only FILE's bits come last). Every change is made on the part itself, not through a link
 * put in its place, but for a chmod retried where JDK 17 refused it (a umask without the owner's read), which follows one.
 */
final class ReplacingFile implements Closeable {
    /** The longest FILE name kept in its part's name, in UTF-8 bytes: file systems take 255, and the rest is the suffix's. */
    private static final int NAME_BYTES = 200;
    private static final Set<PosixFilePermission> OWNER_RW = EnumSet.of(PosixFilePermission.OWNER_READ,
            PosixFilePermission.OWNER_WRITE);

    private final Path target;
    private final Path part;
    private final OutputStream out;
    private final Set<PosixFilePermission> last; // bits to give the part after its bytes, or null: it has them already
    private boolean committed;

    private ReplacingFile(Path target, Path part, OutputStream out, Set<PosixFilePermission> last) {
        this.target = target;
        this.part = part;
        this.out = out;
        this.last = last;
    }

    static ReplacingFile create(Path target) throws IOException {
        PosixFileAttributes was = attributes(target);
        Path part = target.resolveSibling(partName(target));
        FileAttribute<?>[] attrs = was == null ? new FileAttribute<?>[0] : new FileAttribute<?>[] {
                PosixFilePermissions.asFileAttribute(withOwnersReadWrite(withoutGroup(was.permissions())))};
        OutputStream out = Channels.newOutputStream(Files.newByteChannel(part,
                EnumSet.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE), attrs));
        try {
            part.toFile().deleteOnExit(); // stopped by Ctrl-C or SIGTERM, where close() never runs (once renamed: nothing to delete)
            Set<PosixFilePermission> last = null;
            if (was != null) {
                Set<PosixFilePermission> end = tookGroup(part, was.group()) ? was.permissions() : withoutGroup(was.permissions());
                Set<PosixFilePermission> whileWritten = withOwnersReadWrite(end);
                setMode(part, whileWritten);
                last = whileWritten.equals(end) ? null : end;
            }
            return new ReplacingFile(target, part, out, last);
        } catch (Throwable e) { // an Error, or deleteOnExit in a shutdown already begun (the views' failures are let go)
            try {
                out.close();
            } catch (IOException closing) {
                e.addSuppressed(closing);
            }
            try {
                Files.deleteIfExists(part);
            } catch (IOException deleting) {
                e.addSuppressed(deleting);
            }
            throw e;
        }
    }

    OutputStream stream() {
        return out;
    }

    /** Closes the stream, gives the part FILE's bits where the owner's were added, and renames it over FILE. */
    void commit() throws IOException {
        out.close();
        if (last != null) {
            setMode(part, last);
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

    private static Set<PosixFilePermission> withOwnersReadWrite(Set<PosixFilePermission> bits) {
        Set<PosixFilePermission> s = EnumSet.copyOf(OWNER_RW);
        s.addAll(bits);
        return s;
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

    /** Whether the part now has {@code group}, read back: a user may give only a group they are in, and some file systems take a chown silently. */
    private static boolean tookGroup(Path part, GroupPrincipal group) {
        try {
            PosixFileAttributeView view = view(part);
            view.setGroup(group);
            return view.readAttributes().group().equals(group);
        } catch (IOException e) {
            return false;
        }
    }

    /** Where the file system refuses (CIFS, some NFS): the bits it has, made no wider than FILE's for group or others. */
    private static void setMode(Path part, Set<PosixFilePermission> bits) {
        try {
            view(part).setPermissions(bits);
        } catch (AccessDeniedException e) {
            // JDK 17 opens the file to read for its fchmod: a umask that takes the owner's read (0477) refuses that. The
            // retry goes by the path, following a link put there since the check: only where that umask is set
            try {
                if (Files.isRegularFile(part, LinkOption.NOFOLLOW_LINKS)) {
                    Files.setPosixFilePermissions(part, bits);
                }
            } catch (IOException again) {
                // not worth failing a download for
            }
        } catch (IOException e) {
            // not worth failing a download for
        }
    }

    /** The part's own attributes: if something put a link in its place, the change fails rather than reach the file it names. */
    private static PosixFileAttributeView view(Path part) {
        return Files.getFileAttributeView(part, PosixFileAttributeView.class, LinkOption.NOFOLLOW_LINKS);
    }

    /** FILE's owner bits, no group's, and the others' that FILE's group has too: the part's while its group is not FILE's. */
    private static Set<PosixFilePermission> withoutGroup(Set<PosixFilePermission> bits) {
        Set<PosixFilePermission> s = EnumSet.noneOf(PosixFilePermission.class);
        for (PosixFilePermission p : bits) {
            switch (p) {
                case OWNER_READ, OWNER_WRITE, OWNER_EXECUTE -> s.add(p);
                case OTHERS_READ -> addIf(s, p, bits.contains(PosixFilePermission.GROUP_READ));
                case OTHERS_WRITE -> addIf(s, p, bits.contains(PosixFilePermission.GROUP_WRITE));
                case OTHERS_EXECUTE -> addIf(s, p, bits.contains(PosixFilePermission.GROUP_EXECUTE));
                default -> { } // the group's
            }
        }
        return s;
    }

    private static void addIf(Set<PosixFilePermission> s, PosixFilePermission p, boolean groupHasIt) {
        if (groupHasIt) {
            s.add(p);
        }
    }
}
