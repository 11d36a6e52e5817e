package io.lobstream.store.fsck;

import io.lobstream.store.LobStore;
import io.lobstream.store.LobStoreConfig;
import io.lobstream.store.index.LobIndex;
import io.lobstream.store.index.VersionEntry;
import io.lobstream.store.tablespace.TablespaceDirs;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayInputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** fsck of a stopped tablespace reads it as it is: no recovery, nothing written, and what a normal open refuses is reported. */
class OfflineFsckTest {
    @TempDir
    Path dir;

    private static byte[] bytes(int n, long seed) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return b;
    }

    @Test
    void aCleanTablespaceIsCleanAndLeftAsItWas() throws Exception {
        try (LobStore store = LobStore.open(dir, LobStoreConfig.defaults())) {
            for (int i = 0; i < 5; i++) {
                byte[] v = bytes(50_000 + i, i);
                store.put("v" + i, new ByteArrayInputStream(v), v.length, null, null);
            }
        }
        byte[] pages = Files.readAllBytes(dir.resolve(TablespaceDirs.PAGES));
        FsckReport r = LobStore.fsckClosed(dir, true);
        assertThat(r.problems()).isEmpty();
        assertThat(r.lobs()).isEqualTo(5);
        assertThat(r.pagesChecked()).as("each page read once, the checksum pass not counted again").isEqualTo(r.pagesLive());
        assertThat(Files.readAllBytes(dir.resolve(TablespaceDirs.PAGES))).as("the page file, untouched").isEqualTo(pages);
    }

    /** The open's torn-write check failing (an entry that does not add up) is a problem of its own; fsck's pass goes on. */
    @Test
    void aTornWriteCheckThatFailsIsReportedAndTheRestChecked() throws Exception {
        try (LobStore store = LobStore.open(dir, LobStoreConfig.defaults())) {
            byte[] v = bytes(50_000, 1);
            store.put("a", new ByteArrayInputStream(v), v.length, null, null);
        }
        FsckReport r = Fsck.offline(dir, true, (file, index) -> {
            throw new java.io.IOException("checking the pages of a@1: boom");
        });
        assertThat(r.lobs()).isEqualTo(1);
        assertThat(r.problems()).singleElement().asString()
                .contains("the open's check of the pages written after the last flush fails: checking the pages of a@1: boom");
    }

    /** A page file cut short (a restore, an extension lost) is reported without reading data pages: its end once stretched to the index's. */
    @Test
    void pagesPastTheEndOfAShortPageFileAreReported() throws Exception {
        VersionEntry live;
        try (LobStore store = LobStore.open(dir, LobStoreConfig.defaults())) {
            byte[] v = bytes(200_000, 3);
            live = store.put("a", new ByteArrayInputStream(v), v.length, null, null).written();
        }
        try (java.nio.channels.FileChannel pages = java.nio.channels.FileChannel.open(dir.resolve(TablespaceDirs.PAGES),
                java.nio.file.StandardOpenOption.WRITE)) {
            pages.truncate((live.rootPage() + 1) * LobStoreConfig.defaults().pageSize()); // the root kept, its data pages cut
        }
        FsckReport r = LobStore.fsckClosed(dir, false);
        assertThat(r.ok()).isFalse();
        assertThat(r.problems()).anyMatch(p -> p.contains("live a@") && p.contains("past the end of the page file"));
    }

    @Test
    void versionsClaimingTheSamePagesAreReportedWhereAnOpenRefuses() throws Exception {
        VersionEntry live;
        try (LobStore store = LobStore.open(dir, LobStoreConfig.defaults())) {
            byte[] v = bytes(40_000, 1);
            live = store.put("a", new ByteArrayInputStream(v), v.length, null, null).written();
        }
        try (LobIndex index = LobIndex.open(dir.resolve(TablespaceDirs.INDEX))) { // a corrupt index: another version on the same pages
            index.write(index.newBatch().putPending(VersionEntry.current("b", 99, live.rootPage(), live.byteLength(), live.valueCrc32c(),
                    live.extents()).superseded(VersionEntry.Cause.DELETE, 7)));
        }
        assertThatThrownBy(() -> LobStore.open(dir, LobStoreConfig.defaults()).close()).hasMessageContaining("run fsck");
        FsckReport r = LobStore.fsckClosed(dir, true);
        assertThat(r.ok()).isFalse();
        assertThat(r.problems()).anyMatch(p -> p.contains("overlap") && p.contains(Long.toString(live.rootPage())));
        assertThat(r.problems()).noneMatch(p -> p.contains("leaked"));
        assertThat(r.lobs()).as("the rest of the report is there").isEqualTo(1);
    }

    @Test
    void versionsOverlappingFromDifferentFirstPagesAreReportedToo() throws Exception {
        VersionEntry live;
        try (LobStore store = LobStore.open(dir, LobStoreConfig.defaults())) {
            byte[] v = bytes(100_000, 2);
            live = store.put("a", new ByteArrayInputStream(v), v.length, null, null).written();
        }
        long from = live.rootPage() + 2;
        try (LobIndex index = LobIndex.open(dir.resolve(TablespaceDirs.INDEX))) {
            index.write(index.newBatch().putPending(VersionEntry.current("b", 99, from, 1000, 0,
                    java.util.List.of(new io.lobstream.store.allocator.Extent(from, 20))).superseded(VersionEntry.Cause.DELETE, 7)));
        }
        FsckReport r = LobStore.fsckClosed(dir, false);
        assertThat(r.problems()).anyMatch(p -> p.contains("overlap"));
        assertThat(r.lobs()).isEqualTo(1);
    }

    /** A copy rebuilt without commands retention deleted says so in every fsck, online and offline, for good. */
    @Test
    void aCopyMarkedIncompleteFailsFsckWithEveryRangeItMisses() throws Exception {
        try (LobStore store = LobStore.open(dir, LobStoreConfig.defaults())) {
            byte[] v = bytes(30_000, 3);
            store.put("a", new ByteArrayInputStream(v), v.length, null, null);
            assertThat(store.fsck(true).ok()).isTrue();
            assertThat(store.incompleteness()).isEmpty();
            store.markIncomplete("offsets [0, 7) of lob.commands-0");
            store.markIncomplete("offsets [9, 12) of lob.commands-0");
            assertThat(store.incompleteness()).contains("offsets [0, 7) of lob.commands-0; offsets [9, 12) of lob.commands-0");
            FsckReport online = store.fsck(true);
            assertThat(online.ok()).isFalse();
            assertThat(online.problems()).singleElement().asString()
                    .contains("built without commands it needed", "[0, 7)", "[9, 12)");
        }
        FsckReport offline = LobStore.fsckClosed(dir, true);
        assertThat(offline.ok()).isFalse();
        assertThat(offline.problems()).singleElement().asString().contains("[0, 7) of lob.commands-0; offsets [9, 12)");
        assertThat(offline.lobs()).as("the pages themselves check out").isEqualTo(1);
        try (LobStore reopened = LobStore.open(dir, LobStoreConfig.defaults())) { // not refused: it serves what it has
            assertThat(reopened.current("a")).isPresent();
            assertThat(reopened.incompleteness()).as("read at open").isPresent();
        }
    }
}
