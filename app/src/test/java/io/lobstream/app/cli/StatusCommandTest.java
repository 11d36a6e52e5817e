package io.lobstream.app.cli;

import com.sun.net.httpserver.HttpServer;
import io.lobstream.ingest.http.HttpServers;
import io.lobstream.ingest.http.LobHttpServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code status --wait}'s exit codes, which scripts start a node by: 0 running, 1 no node answered,
 * 3 a node answered but is not running. The node is a stand-in that answers {@code /status}; the
 * purge lag's broker is a closed port (its error is printed, and does not change the exit code).
 */
class StatusCommandTest {
    private final CliRun cli = new CliRun();
    private HttpServer node;
    /** Lets go of a stub node's handler that hangs. */
    private final CountDownLatch hung = new CountDownLatch(1);

    @AfterEach
    void stop() {
        hung.countDown();
        if (node != null) {
            node.stop(0);
        }
    }

    @Test
    void aRunningNodeIs0() throws IOException {
        assertThat(status(nodeIn("RUNNING"), "--wait", "5s")).isZero();
    }

    @Test
    void aNodeStillRebalancingAfterTheWaitIs3() throws IOException {
        assertThat(status(nodeIn("REBALANCING"), "--wait", "1s")).isEqualTo(3);
    }

    /** A node that answered, not running, and then hangs: its answer and exit 3 once the wait is over, not a failure. */
    @Test
    void aNodeThatAnsweredAndThenHangsIs3() throws IOException {
        assertThat(status(nodeIn("REBALANCING", true), "--wait", "3s")).isEqualTo(3);
    }

    @Test
    void noNodeAnsweringIs1() throws IOException {
        assertThat(status("http://127.0.0.1:" + closedPort(), "--wait", "1s")).isEqualTo(1);
    }

    /** Checked first, as every command checks its keys: not after the wait for a node that does not answer. */
    @Test
    void aMisspeltKeyIsAUsageErrorWithNoNodeToAsk() throws IOException {
        assertThat(status("http://127.0.0.1:" + closedPort(), "--wait", "1s", "-c", "lob.purge.grup=x")).isEqualTo(2);
        assertThat(cli.err()).contains("unknown configuration key lob.purge.grup");
    }

    /** {@code /status} said it, the table did not: a copy that lacks commands looked like any other. */
    @Test
    void anIncompleteCopyIsSaid() throws IOException {
        String why = "offsets [0, 2) of lob.commands-0 were deleted by retention before this copy was built";
        assertThat(status(node("{\"state\":\"RUNNING\",\"catching_up\":[],\"partitions\":[{\"partition\":0,\"incomplete\":\""
                + why + "\"},{\"partition\":1}],\"totals\":{}}", false))).isZero();
        assertThat(cli.out()).contains("partition 0 is incomplete: " + why).doesNotContain("partition 1 is");
    }

    /** The writer reads RUNNING through an outage: the node's own failed check of the cluster is what says it. */
    @Test
    void aNodeKafkaDoesNotAnswerIsSaid() throws IOException {
        assertThat(status(node("{\"state\":\"RUNNING\",\"kafka\":{\"answered_s_ago\":95,\"checked_every_s\":30.0,"
                + "\"error\":\"no answer within 10 s\"},\"catching_up\":[],\"partitions\":[],\"totals\":{}}", false))).isZero();
        assertThat(cli.out()).contains("kafka: the node's last check of the cluster failed (no answer within 10 s); it last answered 95 s ago");
    }

    @Test
    void aBadDurationIsAUsageError() {
        assertThat(cli.run("status", "--wait", "soon")).isEqualTo(2);
        assertThat(cli.err()).contains("--wait");
    }

    private int status(String nodeUrl, String... args) throws IOException {
        // the purge lag's admin client asks the closed port for 5 s by default: half a second says the same
        List<String> all = new ArrayList<>(List.of("status", "--node", nodeUrl, "--bootstrap", "127.0.0.1:" + closedPort(),
                "-c", "default.api.timeout.ms=500", "-c", "request.timeout.ms=500"));
        all.addAll(List.of(args));
        return cli.run(all.toArray(String[]::new));
    }

    private String nodeIn(String state) throws IOException {
        return nodeIn(state, false);
    }

    /** @param hangsAfterOne answers once, then leaves every request unanswered */
    private String nodeIn(String state, boolean hangsAfterOne) throws IOException {
        return node("{\"state\":\"" + state + "\",\"catching_up\":[],\"partitions\":[],\"totals\":{}}", hangsAfterOne);
    }

    /** @param hangsAfterOne answers once, then leaves every request unanswered */
    private String node(String status, boolean hangsAfterOne) throws IOException {
        node = HttpServers.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        byte[] body = status.getBytes(StandardCharsets.UTF_8);
        AtomicInteger asked = new AtomicInteger();
        node.createContext("/status", ex -> {
            if (hangsAfterOne && asked.incrementAndGet() > 1) {
                try {
                    hung.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            try (ex) {
                ex.getResponseHeaders().add(LobHttpServer.NODE, "test:1");
                ex.sendResponseHeaders(200, body.length);
                ex.getResponseBody().write(body);
            }
        });
        node.start();
        return "http://127.0.0.1:" + node.getAddress().getPort();
    }

    private static int closedPort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }
}
