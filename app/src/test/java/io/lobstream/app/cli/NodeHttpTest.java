package io.lobstream.app.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The CLI's small requests ({@code status}, the version after a write) are bounded, their bodies too. */
class NodeHttpTest {
    /**
     * A node that sends the headers of {@code /status} and then stalls mid-body: HttpClient's own
     * timeout ended at the headers, and {@code status} waited for the rest without end.
     */
    @Test
    @Timeout(60) // a regression hangs: HttpClient alone waits for the body without end
    void aBodyThatStallsAfterItsHeadersFailsWithinTheTimeout() throws Exception {
        CountDownLatch done = new CountDownLatch(1);
        try (ServerSocket node = new ServerSocket(0, 10, InetAddress.getLoopbackAddress())) {
            Thread t = new Thread(() -> {
                try (Socket s = node.accept()) {
                    s.getInputStream().read(new byte[4096]);
                    OutputStream out = s.getOutputStream();
                    out.write("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"state\":".getBytes(StandardCharsets.US_ASCII));
                    out.flush();
                    done.await(); // and nothing more
                } catch (IOException | InterruptedException ignored) {
                    // the test is over
                }
            });
            t.setDaemon(true);
            t.start();
            NodeHttp http = new NodeHttp("http://127.0.0.1:" + node.getLocalPort(), Duration.ofSeconds(3));
            // "within 3 s" when a starved machine takes that long for the headers; a regression hangs (@Timeout)
            assertThatThrownBy(() -> http.getText("/status")).isInstanceOf(IOException.class)
                    .message().containsAnyOf("did not answer in full", "did not answer within");
        } finally {
            done.countDown();
        }
    }

    /** A proxy in front of a node removes the path segments . and .. (RFC 3986): the ids that are one go encoded. */
    @Test
    void theIdsDotAndDotDotAreSentEncoded() {
        NodeHttp http = new NodeHttp("http://127.0.0.1:1", Duration.ofSeconds(3));
        assertThat(http.lobUri("..").getRawPath()).isEqualTo("/lobs/%2E%2E");
        assertThat(http.lobUri(".").getRawPath()).isEqualTo("/lobs/%2E");
        assertThat(http.lobUri("...").getRawPath()).isEqualTo("/lobs/...");
        assertThat(http.lobUri("a/../b").getRawPath()).isEqualTo("/lobs/a%2F..%2Fb");
    }
}
