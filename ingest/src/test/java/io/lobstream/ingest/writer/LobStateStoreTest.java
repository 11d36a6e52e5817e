package io.lobstream.ingest.writer;

import io.lobstream.schema.LobStreamConfig;
import io.lobstream.store.LobStore;
import io.lobstream.store.LobStoreConfig;
import io.lobstream.store.index.Attributes;
import io.lobstream.store.index.LobIndex;
import io.lobstream.store.tablespace.TablespaceDirs;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.apache.kafka.streams.errors.LockException;
import org.apache.kafka.streams.processor.api.MockProcessorContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The task's tablespace as Kafka Streams opens it. */
class LobStateStoreTest {
    @TempDir
    Path dir;

    /**
     * A copy whose pages must all be read before it opens (no flush covered them, and the machine restarted since: lob.sync
     * off) is not checked on the stream thread, which must poll: its init gives way, and the check runs on the partition's
     * catch-up thread, which opens the copy and closes it.
     */
    @Test
    void aCopyWhosePagesMustAllBeCheckedIsCheckedOffTheStreamThread() throws Exception {
        Path p0 = TablespaceDirs.partitionDir(dir, 0);
        byte[] value = "a value".getBytes(StandardCharsets.UTF_8);
        try (LobStore store = LobStore.open(p0, LobStoreConfig.defaults())) {
            store.put("a", new ByteArrayInputStream(value), value.length, null, Attributes.NONE, null);
        }
        try (LobIndex index = LobIndex.open(p0.resolve(TablespaceDirs.INDEX))) {
            // the engine's meta keys (Recovery, SyncedFrontier, BootId): an unclean end, no frontier, another boot
            index.writeSync(index.newBatch().deleteMeta("clean.shutdown").deleteMeta("synced.frontier")
                    .putMeta("boot.id", "a boot before this one".getBytes(StandardCharsets.UTF_8)));
        }

        LobStreamConfig config = new LobStreamConfig(Map.of(LobStreamConfig.BOOTSTRAP.name(), "127.0.0.1:1")); // never asked
        try (TablespaceCatchUp catchUp = new TablespaceCatchUp(config, new WriterMetrics(new SimpleMeterRegistry()))) {
            LobStateStore tablespace = new LobStateStore(dir, LobStoreConfig.defaults(), null, new TablespaceRegistry(), catchUp);
            MockProcessorContext<Object, Object> context = new MockProcessorContext<>(); // task 0_0
            assertThatThrownBy(() -> tablespace.init(context.getStateStoreContext(), tablespace)).isInstanceOf(LockException.class)
                    .hasMessageContaining("lob-rebuild-0");
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            while (!catchUp.catchingUp().isEmpty() && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            assertThat(catchUp.catchingUp()).as("the check ended").isEmpty();
            catchUp.awaitRebuilt(0); // it did not fail
        }
        try (LobIndex index = LobIndex.open(p0.resolve(TablespaceDirs.INDEX))) {
            assertThat(index.metaLong("clean.shutdown", 0)).as("opened, checked and closed there").isEqualTo(1);
        }
        try (var siblings = Files.list(p0.getParent())) {
            assertThat(siblings.map(f -> f.getFileName().toString()).toList()).as("every page there: kept").containsExactly("p-0");
        }
        try (LobStore store = LobStore.open(p0, LobStoreConfig.defaults(), null, "p-0", false)) { // nothing left to check
            assertThat(store.current("a")).isPresent();
        }
    }

    /**
     * A copy that does not open (its index without its page file) is a task that waits and tries again, as a LockException:
     * anything else would end the stream thread, closing and opening its other tasks at every try.
     */
    @Test
    void aCopyThatDoesNotOpenIsATaskThatWaitsNotAThreadThatEnds() throws Exception {
        Path p0 = TablespaceDirs.partitionDir(dir, 0);
        try (LobStore store = LobStore.open(p0, LobStoreConfig.defaults())) {
            store.put("a", new ByteArrayInputStream(new byte[] {1}), 1, null, Attributes.NONE, null);
        }
        Files.delete(p0.resolve(TablespaceDirs.PAGES));

        TablespaceRegistry registry = new TablespaceRegistry();
        LobStateStore tablespace = new LobStateStore(dir, LobStoreConfig.defaults(), null, registry, null);
        MockProcessorContext<Object, Object> context = new MockProcessorContext<>(); // task 0_0
        assertThatThrownBy(() -> tablespace.init(context.getStateStoreContext(), tablespace)).isInstanceOf(LockException.class)
                .hasMessageContaining("has an index but no " + TablespaceDirs.PAGES);
        assertThat(registry.waitingTasks()).singleElement().satisfies(f -> {
            assertThat(f.partition()).isZero();
            assertThat(f.failuresInARow()).isEqualTo(1);
            assertThat(f.lastError()).contains("has an index but no");
        });
        assertThat(registry.all()).isEmpty();
    }

    /**
     * A tablespace open for hours is in use (NodeInUse lists it for the purge workers beside the node), and for a while
     * after its task closes it: a task moving to another stream thread, or a thread replaced, opens it again.
     */
    @Test
    void anOpenTablespaceIsInUseAndStaysSoAWhileAfterItsTaskClosesIt() {
        TablespaceRegistry registry = new TablespaceRegistry();
        LobStateStore tablespace = new LobStateStore(dir, LobStoreConfig.defaults(), null, registry, null);
        MockProcessorContext<Object, Object> context = new MockProcessorContext<>(); // task 0_0
        tablespace.init(context.getStateStoreContext(), tablespace);
        assertThat(registry.inUse(System.nanoTime() + Duration.ofHours(3).toNanos())).containsExactly(0);
        long opened = System.nanoTime();
        long beforeClose;
        do { // a later instant than the init's mark: the close's own mark, not the init's, keeps it listed below
            beforeClose = System.nanoTime();
        } while (beforeClose <= opened);
        tablespace.close();
        assertThat(registry.inUse(beforeClose + TablespaceCatchUp.MOVED_AFTER.toNanos())).containsExactly(0);
        long closed = System.nanoTime();
        assertThat(registry.inUse(closed + TablespaceCatchUp.MOVED_AFTER.plusSeconds(1).toNanos())).isEmpty();
    }
}
