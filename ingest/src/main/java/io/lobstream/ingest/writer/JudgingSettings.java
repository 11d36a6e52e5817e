package io.lobstream.ingest.writer;

import io.lobstream.schema.LobStreamConfig;
import io.lobstream.store.LobStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;

/**
 * The settings a command is judged by, besides the log and the tablespace: whether a commandId sent again is a duplicate
 * ({@code lob.command.dedupe.window.ms}), whether a chunk finds its upload ({@code lob.upload.timeout.ms}), whether a value
 * is too large ({@code lob.value.max.bytes}). Each tablespace records those its commands were judged by, and the writer and
 * a node's catch-up say when they open one with others.
 *
 * <p>Why: a copy rebuilt from {@code lob.commands} (replay, a partition moved to a node without its copy) judges the whole
 * log by the settings it runs with, while the copy that ran through a change judged the commands before it by the old
 * ones, and had already forgotten ids, or expired uploads, by them. Around the change the two can decide a command
 * differently (a retry within the window applied twice in one, an upload resumed in one and refused in the other, a value
 * refused as too large in a rebuild with a lower limit), and every later command on that LOB then differs. The setting
 * is not in the log, so nothing can make them agree but the same settings, or a rebuild of every copy after the change.
 * {@code GET /status} shows each partition's ({@code judged_by}), and {@code replay --verify} compares them with its own.
 */
public record JudgingSettings(long dedupeWindowMs, long uploadTimeoutMs, long valueMaxBytes) {
    private static final Logger log = LoggerFactory.getLogger(JudgingSettings.class);
    /** After a setting's key: the offset from which the store's commands were judged by its value now, if it changed. */
    private static final String CHANGED_AT = ".changed.at.offset";
    /** The settings' keys, in the order {@link #byKey} gives them. */
    private static final List<String> KEYS = List.of(LobStreamConfig.DEDUPE_WINDOW_MS.name(), LobStreamConfig.UPLOAD_TIMEOUT_MS.name(),
            LobStreamConfig.VALUE_MAX_BYTES.name());

    public static JudgingSettings of(LobStreamConfig config) {
        return new JudgingSettings(config.get(LobStreamConfig.DEDUPE_WINDOW_MS), config.get(LobStreamConfig.UPLOAD_TIMEOUT_MS),
                config.get(LobStreamConfig.VALUE_MAX_BYTES));
    }

    /** Each setting by its key, in a fixed order. */
    public Map<String, Long> byKey() {
        Map<String, Long> m = new LinkedHashMap<>();
        List<Long> values = List.of(dedupeWindowMs, uploadTimeoutMs, valueMaxBytes);
        for (int i = 0; i < KEYS.size(); i++) {
            m.put(KEYS.get(i), values.get(i));
        }
        return m;
    }

    /**
     * What {@code store} recorded of each setting, by its key; those it never recorded (a copy a release before session 55
     * wrote, that applied no command since) are left out.
     */
    public static Map<String, Long> recordedIn(LobStore store) throws IOException {
        return recorded(store, "");
    }

    /**
     * Where {@code store}'s commands began to be judged by the value it records of each setting, by its key, for those that
     * changed: the copy judged the commands before by another value, as no replay does.
     */
    public static Map<String, Long> changedIn(LobStore store) throws IOException {
        return recorded(store, CHANGED_AT);
    }

    private static Map<String, Long> recorded(LobStore store, String suffix) throws IOException {
        Map<String, Long> m = new LinkedHashMap<>();
        for (String key : KEYS) {
            OptionalLong v = store.setting(key + suffix);
            if (v.isPresent()) {
                m.put(key, v.getAsLong());
            }
        }
        return m;
    }

    /**
     * Records these settings in {@code store} before the commands from {@code offset} on are applied, warning of each
     * that differs from what the store recorded before (nothing is said of a store that recorded none: a new one, or one a
     * release before session 55 wrote). {@code lobstream replay} builds a new copy, so only the writer and a node's
     * catch-up can warn; {@code replay --verify} compares with the node's instead.
     */
    public void recordIn(LobStore store, long offset) throws IOException {
        for (Map.Entry<String, Long> e : byKey().entrySet()) {
            OptionalLong before = store.setting(e.getKey());
            if (before.isPresent() && before.getAsLong() == e.getValue()) {
                continue;
            }
            if (before.isPresent()) {
                log.warn("{}: {} is {} now; the commands this tablespace applied were judged by {}. It judges those from offset {} "
                        + "on by the new value, and a copy rebuilt from lob.commands (replay, a partition moved to a node without "
                        + "its copy) judges the whole log by the value it runs with: the two can decide differently a command "
                        + "re-sent, an upload resumed or a value near the limit around the change, and replay --verify then finds "
                        + "a difference. Keep the same value on every node, or rebuild every partition after changing it "
                        + "(README: The same judging settings on every node).", store.name(), e.getKey(), e.getValue(),
                        before.getAsLong(), offset);
                store.recordSetting(e.getKey() + CHANGED_AT, offset);
            }
            store.recordSetting(e.getKey(), e.getValue());
        }
    }
}
