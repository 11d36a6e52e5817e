package io.lobstream.app;

import io.lobstream.app.embedded.ClusterProcess;
import io.lobstream.client.LobClient;
import io.lobstream.ingest.LobNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.ConnectException;
import java.net.Socket;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * {@code lobstream cluster} in a JVM of its own, the no-Docker way to run several processes:
 * a node started against it with --bootstrap and --registry applies a put, and the cluster
 * stops on SIGTERM with its broker port closed.
 */
class ClusterProcessIT {
    @TempDir
    static Path dir;

    @Test
    void aNodeRunsAgainstTheClusterProcessAndTheClusterStopsCleanly() throws Exception {
        ClusterProcess cluster = ClusterProcess.start(dir.resolve("cluster"), dir.resolve("logs"), Duration.ofSeconds(180));
        LobNode node = null;
        LobClient client = null;
        try {
            node = Nodes.start(Nodes.config(cluster, dir.resolve("node"), 2, "", 1));
            client = new LobClient(Nodes.config(cluster, dir.resolve("client"), 2, "", 1));
            byte[] value = Nodes.bytes(50_000, 7);
            client.put("on-the-cluster-process", value, null).get();
            LobNode n = node;
            await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(100)).untilAsserted(() -> {
                HttpResponse<byte[]> r = Nodes.get(n, "on-the-cluster-process", null);
                assertThat(r.statusCode()).isEqualTo(200);
                assertThat(r.body()).isEqualTo(value);
            });
        } finally {
            Nodes.closeAll(client, cluster, node);
        }
        String[] hostPort = cluster.bootstrap().split(":");
        assertThatThrownBy(() -> new Socket(hostPort[0], Integer.parseInt(hostPort[1])).close()).isInstanceOf(ConnectException.class);
    }
}
