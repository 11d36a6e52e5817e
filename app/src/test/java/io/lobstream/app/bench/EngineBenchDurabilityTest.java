package io.lobstream.app.bench;

import org.junit.jupiter.api.Test;

import java.util.Locale;

import static org.assertj.core.api.Assertions.assertThat;

class EngineBenchDurabilityTest {
    /** Under a Turkish locale "each-write" upper-cased to "EACH-WRİTE" (dotted capital I), no Durability. */
    @Test
    void theDurabilityIsReadTheSameInEveryLocale() {
        Locale before = Locale.getDefault();
        try {
            Locale.setDefault(Locale.forLanguageTag("tr-TR"));
            EngineBench.DurabilityConverter converter = new EngineBench.DurabilityConverter();
            assertThat(converter.convert("each-write")).isEqualTo(EngineBench.Durability.EACH_WRITE);
            assertThat(converter.convert("commit")).isEqualTo(EngineBench.Durability.COMMIT);
        } finally {
            Locale.setDefault(before);
        }
    }
}
