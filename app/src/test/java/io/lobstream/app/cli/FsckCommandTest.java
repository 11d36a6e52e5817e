package io.lobstream.app.cli;

import io.lobstream.store.LobStore;
import io.lobstream.store.LobStoreConfig;
import io.lobstream.store.index.VersionEntry;
import io.lobstream.store.tablespace.TablespaceDescriptor;
import io.lobstream.store.tablespace.TablespaceDirs;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code fsck}: its directory named as the node does ({@code --data-dir}) or as a plain argument, and its exit codes. */
class FsckCommandTest {
    private final CliRun cli = new CliRun();

    private int fsck(String... args) {
        String[] all = new String[args.length + 1];
        all[0] = "fsck";
        System.arraycopy(args, 0, all, 1, args.length);
        return cli.run(all);
    }

    @Test
    void checksADataDirectoryNamedEitherWay(@TempDir Path dataDir) throws Exception {
        try (LobStore store = LobStore.open(TablespaceDirs.partitionDir(dataDir, 0), LobStoreConfig.defaults())) {
            byte[] value = new byte[40_000];
            store.put("a", new ByteArrayInputStream(value), value.length, null, null);
        }
        assertThat(fsck("--data-dir", dataDir.toString(), "--json")).isZero();
        assertThat(fsck(dataDir.toString(), "--json")).isZero();
        assertThat(fsck(dataDir.toString(), "--data-dir", dataDir.resolve("tablespaces").resolve("..").toString())).isZero();
    }

    @Test
    void twoDifferentDirectoriesAreAUsageError(@TempDir Path a, @TempDir Path b) {
        assertThat(fsck(a.toString(), "--data-dir", b.resolve("other").toString())).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("give the directory once").contains("Usage: lobstream fsck");
    }

    @Test
    void aCorruptDataPageIsAProblemNamedByItsPageAndExit1(@TempDir Path dataDir) throws Exception {
        long page;
        LobStoreConfig config = LobStoreConfig.defaults();
        try (LobStore store = LobStore.open(TablespaceDirs.partitionDir(dataDir, 0), config)) {
            byte[] value = new byte[200_000];
            store.put("a", new ByteArrayInputStream(value), value.length, null, null);
            VersionEntry e = store.current("a").orElseThrow();
            page = e.extents().get(e.extents().size() - 1).endPage() - 1; // a data page: the root is the first
        }
        try (FileChannel pages = FileChannel.open(TablespaceDirs.partitionDir(dataDir, 0).resolve(TablespaceDirs.PAGES),
                StandardOpenOption.WRITE)) {
            pages.write(ByteBuffer.wrap(new byte[]{1, 2, 3, 4, 5, 6, 7, 8}), page * config.pageSize() + 100);
        }

        String out = stdout(() -> assertThat(fsck(dataDir.toString(), "--json")).isEqualTo(1));
        assertThat(out).contains("\"fsck_ok\":false").contains("page " + page);
        assertThat(fsck(dataDir.toString(), "--no-data")).as("data pages not read").isZero();
    }

    /**
     * Copies a node or a replay kept aside are listed with their size (nothing removes them), and a p-N that lost its
     * descriptor, which every open refuses, is a problem: fsck used to pass over both in silence.
     */
    @Test
    void copiesKeptAsideAreListedAndAPartitionWithoutADescriptorIsAProblem(@TempDir Path dataDir) throws Exception {
        try (LobStore store = LobStore.open(TablespaceDirs.partitionDir(dataDir, 0), LobStoreConfig.defaults())) {
            store.put("a", new ByteArrayInputStream(new byte[40_000]), 40_000, null, null);
        }
        Path aside = TablespaceDirs.SetAside.SYNC_FAILED.path(TablespaceDirs.partitionDir(dataDir, 0), 1234);
        java.nio.file.Files.createDirectories(aside);
        java.nio.file.Files.write(aside.resolve(TablespaceDirs.PAGES), new byte[3 << 20]);
        String out = stdout(() -> assertThat(fsck(dataDir.toString(), "--json")).isZero());
        assertThat(out).contains("\"kept_aside\":[{\"path\":\"" + aside + "\",\"bytes\":" + (3 << 20) + ",\"replay_staging\":false}]");

        java.nio.file.Files.createDirectories(TablespaceDirs.partitionDir(dataDir, 1).resolve(TablespaceDirs.INDEX));
        out = stdout(() -> assertThat(fsck(dataDir.toString())).isEqualTo(1));
        assertThat(out).contains("p-1: no " + TablespaceDirs.DESCRIPTOR).contains("kept aside (3 MB)");
    }

    /** A copy a later release wrote is not this fsck's to judge: not checked (exit 2), never a problem (exit 1) a script acts on. */
    @Test
    void aTablespaceOfALaterFormatIsNotCheckedRatherThanDamaged(@TempDir Path dataDir) throws Exception {
        for (int p = 0; p < 2; p++) {
            try (LobStore store = LobStore.open(TablespaceDirs.partitionDir(dataDir, p), LobStoreConfig.defaults())) {
                store.put("a", new ByteArrayInputStream(new byte[40_000]), 40_000, null, null);
            }
        }
        Path descriptor = TablespaceDirs.partitionDir(dataDir, 1).resolve(TablespaceDirs.DESCRIPTOR);
        java.nio.file.Files.writeString(descriptor, java.nio.file.Files.readString(descriptor)
                .replace("format.version=" + TablespaceDescriptor.FORMAT_VERSION, "format.version=" + (TablespaceDescriptor.FORMAT_VERSION + 1)));
        String out = stdout(() -> assertThat(fsck(dataDir.toString(), "--json")).isEqualTo(2));
        assertThat(out).contains("\"fsck_ok\":true").contains("\"not_readable\":[1]").contains("\"complete\":false");
    }

    /** What {@code run} prints to System.out, where the commands print their reports. */
    private static String stdout(Runnable run) {
        PrintStream was = System.out;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
            run.run();
        } finally {
            System.setOut(was);
        }
        return captured.toString(StandardCharsets.UTF_8);
    }

    @Test
    void aDirectoryWithoutTablespacesCannotBeChecked(@TempDir Path empty) {
        assertThat(fsck("--data-dir", empty.toString())).isEqualTo(2); // "no tablespaces under ...", not "clean"
        String out = stdout(() -> assertThat(fsck("--data-dir", empty.toString(), "--json")).isEqualTo(2));
        assertThat(out).as("--json: one JSON object on stdout, whatever the exit").contains("\"fsck_ok\":false")
                .contains("\"error\":\"no tablespaces under");
    }
}
