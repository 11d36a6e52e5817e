package io.lobstream.app.cli;

import io.lobstream.store.LobStore;
import io.lobstream.store.DefaultLobStore;
import io.lobstream.store.LobStoreConfig;
import io.lobstream.store.tablespace.TablespaceDirs;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

import java.io.ByteArrayInputStream;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code fsck} names its directory as the node does ({@code --data-dir}) or as a plain argument. */
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
        try (LobStore store = DefaultLobStore.open(TablespaceDirs.partitionDir(dataDir, 0), LobStoreConfig.defaults())) {
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
    void aDirectoryWithoutTablespacesCannotBeChecked(@TempDir Path empty) {
        assertThat(fsck("--data-dir", empty.toString())).isEqualTo(2); // "no tablespaces under ...", not "clean"
    }
}
