package io.lobstream.store;

/**
 * Where a command came from: an input (e.g. a topic-partition) and its offset there, and the
 * command's own id. The store records the last applied offset per input, and the command id,
 * in the same index batch as the command: that is how the pipeline knows, after a crash, which
 * commands are already in the store, and recognises a command a producer sent twice.
 *
 * @param commandId null if the command has none
 */
public record Source(String name, long offset, String commandId) {
    public Source(String name, long offset) {
        this(name, offset, null);
    }
}
