package io.lobstream.store.impl;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Which boot of the machine's kernel this process runs in. It tells a crash of the process, after which the kernel
 * still holds every write the process made, from a restart of the machine, which a power loss may have caused: only
 * then can pages the process wrote and never forced be lost. Linux says it in {@code /proc}; elsewhere it is unknown,
 * and every unclean open is treated as one after a restart.
 *
 * <p>What it cannot tell: a disk that lost writes while the machine kept running (a volume detached and attached again,
 * a snapshot of the disk restored under a running system). Without lob.sync such a tablespace is trusted.
 */
final class BootId {
    /** The index meta key each open records the boot in. */
    static final String META_KEY = "boot.id";

    private static final Path LINUX = Path.of("/proc/sys/kernel/random/boot_id");

    private BootId() {
    }

    /** Read at each call, a few bytes: a JVM restored from a checkpoint taken on another boot must not carry that one. */
    static Optional<String> current() {
        return read(LINUX);
    }

    /** Whether {@code recorded}, the boot an earlier open recorded, is this one. */
    static boolean isCurrent(Optional<byte[]> recorded) {
        Optional<String> current = current();
        return current.isPresent() && recorded.map(b -> new String(b, StandardCharsets.UTF_8)).equals(current);
    }

    private static Optional<String> read(Path path) {
        try {
            return Optional.of(Files.readString(path, StandardCharsets.US_ASCII).trim()).filter(s -> !s.isEmpty());
        } catch (IOException | SecurityException e) {
            return Optional.empty();
        }
    }
}
