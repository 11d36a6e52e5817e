package io.lobstream.store;

/**
 * Where a command came from: an input (e.g. a topic-partition) and its offset there. The store
 * records the last applied offset per input in the same index batch as the command, which is
 * how the pipeline knows, after a crash, which commands are already in the store.
 */
public record Source(String name, long offset) {
}
