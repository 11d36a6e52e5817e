package io.lobstream.ingest.writer;

import io.lobstream.store.DefaultLobStore;
import io.lobstream.store.LobStoreConfig;
import io.lobstream.store.tablespace.TablespaceDirs;
import io.micrometer.core.instrument.MeterRegistry;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.processor.StateStoreContext;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;

/**
 * The task's tablespace as a Kafka Streams state store, so that Streams drives its lifecycle
 * and calls {@link #flush()} before every commit of the task's transaction: pages and index
 * are durable before the offsets that produced them are committed.
 *
 * <p>It is not changelogged. Its files live under the node's data directory, outside the Streams
 * state directory, because Streams wipes a task's state directory after an unclean shutdown
 * under exactly-once, and this store needs no wipe: it recovers itself (see
 * {@link DefaultLobStore}) and records which offsets it has applied.
 */
public final class LobStateStore implements StateStore {
    public static final String NAME = "lob-tablespace";

    private final Path dataDir;
    private final LobStoreConfig config;
    private final MeterRegistry meters;
    private final TablespaceRegistry registry;
    private final CommandReplay replay;
    private DefaultLobStore store;
    private int partition = -1;

    public LobStateStore(Path dataDir, LobStoreConfig config, MeterRegistry meters, TablespaceRegistry registry) {
        this(dataDir, config, meters, registry, null);
    }

    /** With {@code replay}, a tablespace behind the writer group's committed offset is caught up from lob.commands on init. */
    public LobStateStore(Path dataDir, LobStoreConfig config, MeterRegistry meters, TablespaceRegistry registry, CommandReplay replay) {
        this.dataDir = dataDir;
        this.config = config;
        this.meters = meters;
        this.registry = registry;
        this.replay = replay;
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public void init(StateStoreContext context, StateStore root) {
        partition = context.taskId().partition();
        try {
            store = DefaultLobStore.open(TablespaceDirs.partitionDir(dataDir, partition), config, meters, "p-" + partition);
            if (replay != null) {
                // before the task consumes (from the committed offset) and before readers see the store
                replay.catchUp(partition, store);
            }
        } catch (IOException | RuntimeException e) {
            if (store != null) {
                try {
                    store.close();
                } catch (IOException suppressed) {
                    e.addSuppressed(suppressed);
                }
                store = null;
            }
            throw e instanceof RuntimeException re ? re : new UncheckedIOException("cannot open tablespace of partition " + partition, (IOException) e);
        }
        context.register(root, (key, value) -> {
            // no changelog: nothing to restore from Kafka Streams' side
        });
        registry.register(partition, store);
    }

    public DefaultLobStore store() {
        return store;
    }

    public int partition() {
        return partition;
    }

    @Override
    public void flush() {
        try {
            store.flush();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    public void close() {
        if (store == null) {
            return;
        }
        registry.unregister(partition, store);
        try {
            store.close();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } finally {
            store = null;
        }
    }

    @Override
    public boolean persistent() {
        return true;
    }

    @Override
    public boolean isOpen() {
        return store != null;
    }
}
