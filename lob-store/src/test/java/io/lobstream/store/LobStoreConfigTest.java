package io.lobstream.store;

import io.lobstream.store.config.ConfigException;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class LobStoreConfigTest {
    /** Durable writes asked for, and nothing ever forced: refused, where it used to run without a sync, and without a word. */
    @Test
    void syncEachWriteWithoutSyncIsRefused() {
        assertThatThrownBy(() -> new LobStoreConfig(Map.of("lob.sync", "false", "lob.sync.each.write", "true")))
                .isInstanceOf(ConfigException.class)
                .hasMessage("lob.sync.each.write=true needs lob.sync=true");
        assertThat(new LobStoreConfig(Map.of("lob.sync.each.write", "true")).syncEachWrite()).isTrue();
        assertThat(new LobStoreConfig(Map.of("lob.sync", "false")).syncEachWrite()).isFalse();
    }

    @Test
    void aPageSizeNotAPowerOfTwoIsRefused() {
        assertThatThrownBy(() -> new LobStoreConfig(Map.of("lob.page.size", "12288")))
                .isInstanceOf(ConfigException.class)
                .hasMessage("lob.page.size=12288: must be a power of two");
    }

    /** A number with a unit, or past its type, says what the key takes, not Java's 'For input string'. */
    @Test
    void aValueThatIsNoNumberSaysWhatIsTaken() {
        assertThatThrownBy(() -> new LobStoreConfig(Map.of("lob.page.size", "4k")))
                .isInstanceOf(ConfigException.class)
                .hasMessage("lob.page.size=4k: not a whole number up to 2147483647 (plain digits, no unit)");
        assertThatThrownBy(() -> new LobStoreConfig(Map.of("lob.page.size", "3000000000")))
                .hasMessage("lob.page.size=3000000000: not a whole number up to 2147483647 (plain digits, no unit)");
    }
}
