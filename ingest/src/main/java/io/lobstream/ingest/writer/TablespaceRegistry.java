package io.lobstream.ingest.writer;

import io.lobstream.store.DefaultLobStore;
import io.lobstream.store.StoreStats;

import java.util.Map;
import java.util.Optional;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The tablespaces open on this node, by partition: the writer tasks register theirs, the HTTP
 * read API and status look them up.
 */
public final class TablespaceRegistry {
    private final Map<Integer, DefaultLobStore> open = new ConcurrentHashMap<>();

    void register(int partition, DefaultLobStore store) {
        open.put(partition, store);
    }

    void unregister(int partition, DefaultLobStore store) {
        open.remove(partition, store);
    }

    public Optional<DefaultLobStore> get(int partition) {
        return Optional.ofNullable(open.get(partition));
    }

    public SortedMap<Integer, DefaultLobStore> all() {
        return new TreeMap<>(open);
    }

    public StoreStats totals() {
        StoreStats t = StoreStats.empty();
        for (DefaultLobStore s : open.values()) {
            t = t.plus(s.stats());
        }
        return t;
    }
}
