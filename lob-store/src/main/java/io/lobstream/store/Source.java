package io.lobstream.store;

/**
 * Where a command came from: an input (e.g. a topic-partition) and its offset there, the
 * command's own id, and its time. The store records the last applied offset per input, and the
 * command id, in the same index batch as the command: that is how the pipeline knows, after a
 * crash, which commands are already in the store, and recognises a command a producer sent twice.
 *
 * @param commandId null if the command has none
 * @param atMillis  the command's time in its input (a Kafka record's timestamp), which the store
 *                  keeps the latest of ({@link LobStore#latestTime}) and stamps the command id with that
 *                  latest: the de-duplication window is measured in it, so that
 *                  a replay of the input decides as the writer did; {@link #UNKNOWN_TIME}: the clock
 * @param fingerprint what the command asked for, in a number, kept with its id: the same id sent again
 *                  with another fingerprint is another command under a reused id, not the same one sent
 *                  twice ({@link LobStore#commandApplied}); 0 for none
 */
public record Source(String name, long offset, String commandId, long atMillis, long fingerprint) {
    public static final long UNKNOWN_TIME = Long.MIN_VALUE;

    public Source(String name, long offset) {
        this(name, offset, null, UNKNOWN_TIME);
    }

    public Source(String name, long offset, String commandId) {
        this(name, offset, commandId, UNKNOWN_TIME);
    }

    public Source(String name, long offset, long atMillis) {
        this(name, offset, null, atMillis);
    }

    public Source(String name, long offset, String commandId, long atMillis) {
        this(name, offset, commandId, atMillis, 0);
    }

    /** The same source, with the command's id and fingerprint. */
    public Source withCommandId(String id, long fingerprint) {
        return new Source(name, offset, id, atMillis, fingerprint);
    }

    /** The command's time, or the clock's when the input gave none. */
    public long atMillisOrNow() {
        return atMillis == UNKNOWN_TIME ? System.currentTimeMillis() : atMillis;
    }
}
