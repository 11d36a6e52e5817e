package io.lobstream.ingest.writer;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.lobstream.store.LobStore;
import io.lobstream.store.LobStoreConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

import java.nio.file.Path;
import java.util.OptionalLong;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.entry;

class JudgingSettingsTest {
    @TempDir
    Path dir;

    /** A tablespace says which settings its commands were judged by, and a change of one is warned of, once. */
    @Test
    void aChangedSettingIsRecordedAndWarnedOfOnce() throws Exception {
        ListAppender<ILoggingEvent> said = new ListAppender<>();
        said.start();
        Logger logger = (Logger) LoggerFactory.getLogger(JudgingSettings.class);
        logger.addAppender(said);
        try (LobStore store = LobStore.open(dir.resolve("p"), LobStoreConfig.defaults())) {
            new JudgingSettings(3_600_000, 600_000, 1 << 30).recordIn(store, 0);
            store.flush();
            new JudgingSettings(3_600_000, 600_000, 1 << 30).recordIn(store, 5);
            assertThat(said.list).as("a new tablespace, then the same settings").isEmpty();
            assertThat(store.needsSync()).as("the same settings again: nothing written").isFalse();

            new JudgingSettings(7_200_000, 600_000, 1 << 30).recordIn(store, 9);
            new JudgingSettings(7_200_000, 600_000, 1 << 30).recordIn(store, 12);
            assertThat(said.list).singleElement().satisfies(e -> {
                assertThat(e.getLevel()).isEqualTo(Level.WARN);
                assertThat(e.getFormattedMessage()).contains("lob.command.dedupe.window.ms is 7200000 now",
                        "judged by 3600000", "from offset 9", "replay --verify");
            });
            assertThat(store.setting("lob.command.dedupe.window.ms")).isEqualTo(OptionalLong.of(7_200_000));
            assertThat(store.setting("lob.upload.timeout.ms")).isEqualTo(OptionalLong.of(600_000));
            assertThat(JudgingSettings.recordedIn(store)).containsExactly(entry("lob.command.dedupe.window.ms", 7_200_000L),
                    entry("lob.upload.timeout.ms", 600_000L), entry("lob.value.max.bytes", (long) (1 << 30)));
            assertThat(JudgingSettings.changedIn(store)).as("from where the value now recorded applies")
                    .containsExactly(entry("lob.command.dedupe.window.ms", 9L));
        } finally {
            logger.detachAppender(said);
        }
    }
}
