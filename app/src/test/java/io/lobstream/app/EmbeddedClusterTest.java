package io.lobstream.app;

import io.lobstream.app.embedded.EmbeddedCluster;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** A busy port is named, with the option that moves it, before anything starts (Kafka would halt the JVM). */
class EmbeddedClusterTest {
    @TempDir
    Path dir;

    @Test
    void aBusyBrokerPortIsAClearErrorNamingTheOption() throws Exception {
        try (ServerSocket busy = new ServerSocket(0, 0, InetAddress.getLoopbackAddress())) {
            assertThatThrownBy(() -> EmbeddedCluster.start(dir, busy.getLocalPort(), 0, 0))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("cannot open port " + busy.getLocalPort() + " for the embedded broker (")
                    .hasMessageContaining("another LobStream node or cluster may have it")
                    .hasMessageContaining("--kafka-port");
        }
    }

    /** Another process's embedded cluster on the directory (here, a lock this JVM holds): refused before anything starts. */
    @Test
    void aDataDirectoryInUseIsAClearError() throws Exception {
        try (FileChannel held = FileChannel.open(dir.resolve("embedded.lock"), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
             FileLock lock = held.lock()) {
            assertThatThrownBy(() -> EmbeddedCluster.start(dir, 0, 0, 0))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("is in use by another LobStream node");
        }
    }
}
