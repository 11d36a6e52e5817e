package io.lobstream.store.layout;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class VersionLayoutTest {

    @ParameterizedTest
    @ValueSource(ints = {4096, 8192, 16384, 32768, 65536})
    void everyValueUpToMaxValueBytesHasALayoutAndNoLongerOneIsStreamed(int pageSize) {
        long max = VersionLayout.layoutMaxBytes(pageSize);
        for (long length : new long[]{max - 1, max}) {
            assertThat(VersionLayout.plan(pageSize, length).byteLength()).isEqualTo(length);
            assertThat(VersionLayout.planStreamed(pageSize, length).byteLength()).isEqualTo(length);
        }
        assertThatThrownBy(() -> VersionLayout.planStreamed(pageSize, max + 1)).isInstanceOf(IllegalArgumentException.class);
    }

    @ParameterizedTest
    @ValueSource(ints = {4096, 16384})
    void theLimitIsWhatTheReviewFound(int pageSize) {
        // 4 KiB pages: about 440 MiB (a 1 GiB value does not fit); 16 KiB: about 28 GiB
        assertThat(VersionLayout.layoutMaxBytes(pageSize)).isEqualTo(pageSize == 4096 ? 461_540_352L : 30_289_136_640L);
    }
}
