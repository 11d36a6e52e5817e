package io.lobstream.store;

import io.lobstream.store.index.Rejection;

import java.io.IOException;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;

/**
 * What a tablespace records of the log its commands come from, beside the values: the offset applied per source, the
 * log's id, the settings the commands were judged by, the ids of the commands applied within the de-duplication
 * window, and the commands refused. Each mark is written in the same index batch as the change it goes with (a
 * {@link Source} given to a write), so a crash keeps both or neither: that is what makes a command's effect happen once
 * (README, "Exactly once in effect"). The engine only keeps them; the applier that reads Kafka (ingest's writer) reads them.
 */
public interface CommandLedger {
    /** Offset of the last command applied from {@code source}, or -1. */
    long appliedOffset(String source) throws IOException;

    /**
     * The latest time ({@link Source#atMillis()}) of the records read from {@code source} so far, applied, skipped or
     * refused, recorded with its {@link #appliedOffset}; {@link Source#UNKNOWN_TIME} if none is (nothing read yet, or a
     * release before session 55 recorded the offset last: the next record starts it again, at its own time). The
     * de-duplication window ends there: it only moves forward, so ids {@link #forgetCommandsBefore forgotten} before it are
     * ids no later lookup would find, and a copy that forgets none (replay) finds what the writer finds.
     */
    long latestTime(String source) throws IOException;

    /**
     * The id of the log {@code source}'s offsets are offsets of (a Kafka topic's id: a topic deleted and made again under
     * its name has another), as {@link #recordLogId} recorded it; empty if none was.
     */
    Optional<String> logId(String source) throws IOException;

    /** Records which log {@code source}'s offsets are offsets of (see {@link #logId}). */
    void recordLogId(String source, String logId) throws IOException;

    /** A setting the commands applied here were judged by, as {@link #recordSetting} recorded it; empty if none was. */
    OptionalLong setting(String key) throws IOException;

    /**
     * Records a setting the next commands applied here are judged by (a de-duplication window, an upload timeout): the
     * store does not read it, its applier does ({@code JudgingSettings} in ingest), to say when it changes.
     */
    void recordSetting(String key, long value) throws IOException;

    /** Every source whose {@link #logId} was recorded (a copy that applied another's commands than its writer's is not its copy). */
    Set<String> sourcesWithLogIds() throws IOException;

    /**
     * Whether a command with this id (see {@link Source#commandId()}) was applied, at a time (the
     * {@link #latestTime} at it, its own included) not before {@code sinceMillis}: the de-duplication window, measured
     * in the commands' time, so that it does not matter when {@link #forgetCommandsBefore} last ran.
     *
     * @return its {@link Source#fingerprint()} (0 when none was recorded), or empty if it was not applied within the window
     */
    OptionalLong commandApplied(String commandId, long sinceMillis) throws IOException;

    /**
     * Forgets the ids of commands applied at times (as {@link #commandApplied} reads them) before
     * {@code idsBeforeMillis}, past the de-duplication window, and the rejections recorded before
     * {@code rejectionsBeforeMillis}; returns how many. Rejections are stamped with the clock, not
     * the command's time: one must outlive the transaction that holds its dead letter, and a
     * transaction can span more of the commands' time than the window (a writer catching up). A call reads a bounded
     * share of them, going on from where the last stopped (ids are not kept in time order): one may be forgotten a few
     * calls late, which changes no decision (an id is judged by its time too; a rejection kept longer keeps the first).
     */
    int forgetCommandsBefore(long idsBeforeMillis, long rejectionsBeforeMillis) throws IOException;

    /** {@link #forgetCommandsBefore(long, long)} with one time for both. */
    default int forgetCommandsBefore(long beforeMillis) throws IOException {
        return forgetCommandsBefore(beforeMillis, beforeMillis);
    }

    /**
     * Records that the command at {@code source} was not applied, and why, as applied from that
     * source: a command that comes again after a restart (its dead letter lost with an aborted
     * transaction) is then rejected again for the same reason, though the store has moved on, or the
     * writer's code, settings or registry changed in between. The applied offset only moves forward.
     */
    void recordRejected(Source source, Rejection why) throws IOException;

    /**
     * Records the record at {@code source} as applied, changing nothing else: one the writer skips
     * (a command sent twice), so that the applied offset keeps up
     * with the writer group's commits and a restart finds the tablespace current, with nothing to
     * catch up. Forward only: an offset at or below the one recorded changes nothing.
     */
    void recordSkipped(Source source) throws IOException;

    /** The rejection recorded for the command at {@code source}, if not yet forgotten. */
    Optional<Rejection> rejection(Source source) throws IOException;
}
