package io.lobstream.app.logging;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class DebugSwitchTest {
    /** LOBSTREAM_DEBUG=0 turned debugging on while only the variable's presence was asked. */
    @Test
    void offUnsetEmptyZeroOrFalse() {
        assertThat(DebugSwitch.on(null)).isFalse();
        assertThat(DebugSwitch.on("")).isFalse();
        assertThat(DebugSwitch.on("0")).isFalse();
        assertThat(DebugSwitch.on("FALSE")).isFalse();
        assertThat(DebugSwitch.on("1")).isTrue();
        assertThat(DebugSwitch.on("yes")).isTrue();
    }
}
