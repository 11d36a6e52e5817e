package io.lobstream.app;

import io.lobstream.app.embedded.EmbeddedCluster;
import io.lobstream.client.LobClient;
import io.lobstream.ingest.LobNode;
import io.lobstream.purge.PurgeWorker;
import io.lobstream.schema.LobStreamConfig;
import io.lobstream.store.LobStoreConfig;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * A purge worker whose transactional id an ACL denies cannot purge, and its producer, refused,
 * refuses every later call (Kafka's producer does not recover from an authorization error). Once
 * the ACL is gone the worker purges without a restart: it replaces a producer that failed for good.
 * A client denied the writer group is told at once that it cannot know whether its writes were
 * applied. A real broker with Kafka's own authorizer, allowing everything no ACL names.
 */
class PurgeAuthorizationIT {
    @TempDir
    static Path dir;
    static EmbeddedCluster cluster;
    static LobStreamConfig config;
    static LobNode node; // no purge worker of its own
    static Admin admin;
    static LobClient client;

    @BeforeAll
    static void start() throws Exception {
        cluster = EmbeddedCluster.start(dir.resolve("cluster"), 0, 0, 0, Map.of(
                "authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                "allow.everyone.if.no.acl.found", "true"));
        config = new LobStreamConfig(Map.of(
                LobStreamConfig.BOOTSTRAP.name(), cluster.bootstrap(),
                LobStreamConfig.REGISTRY_URL.name(), cluster.registryUrl(),
                LobStreamConfig.DATA_DIR.name(), dir.resolve("node").toString(),
                LobStreamConfig.HTTP_PORT.name(), "0",
                LobStreamConfig.PARTITIONS.name(), "2"));
        node = new LobNode(config, LobStoreConfig.defaults()).start();
        admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap()));
        client = new LobClient(config);
        node.awaitRunning(Duration.ofSeconds(120));
    }

    @AfterAll
    static void stop() {
        if (admin != null) {
            admin.close();
        }
        Nodes.closeAll(client, cluster, node);
    }

    @Test
    void aWorkerDeniedItsTransactionalIdPurgesOnceTheAclIsGone() throws Exception {
        AclBinding deny = new AclBinding(
                new ResourcePattern(ResourceType.TRANSACTIONAL_ID, config.get(LobStreamConfig.PURGE_GROUP) + "-denied", PatternType.LITERAL),
                new AccessControlEntry("User:ANONYMOUS", "*", AclOperation.ALL, AclPermissionType.DENY));
        admin.createAcls(List.of(deny)).all().get();

        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        PurgeWorker worker = PurgeWorker.subscribed(config, LobStoreConfig.defaults(), "denied", 0, meters);
        Thread thread = new Thread(worker, "purge-denied");
        thread.start();
        try {
            for (int i = 0; i < 20; i++) {
                client.put("doc-" + (i % 4), TestPipeline.bytes(50_000, i), null).applied().get(60, TimeUnit.SECONDS);
            }
            // 16 versions superseded; for as long as the ACL stands, none is purged: once refused (not merely not yet started)
            await().atMost(Duration.ofSeconds(60)).until(() -> meters.find("lob_purge_failures").counter() != null
                    && meters.find("lob_purge_failures").counter().count() > 0);
            await().during(Duration.ofSeconds(5)).atMost(Duration.ofSeconds(30))
                    .until(() -> node.tablespaces().totals().historyLength() == 16 && worker.versionsPurged() == 0);

            admin.deleteAcls(List.of(deny.toFilter())).all().get();
            // refused, the worker's retries back off to a minute apart: the next one may come up to 60 s after the ACL goes
            await().atMost(Duration.ofSeconds(150)).until(() -> node.tablespaces().totals().historyLength() == 0);
            await().atMost(Duration.ofSeconds(30)).until(() -> worker.versionsPurged() == 16); // counted after its commit: the node may apply it first
            assertThat(node.tablespaces().fsckAll(true).ok()).isTrue();
        } finally {
            worker.close();
            thread.join(15_000);
        }
    }

    /**
     * A client that may write but not read the writer group's offsets cannot tell whether its write
     * was applied: it says so at once, with why, where it used to retry for the caller's whole
     * timeout and then report the write not applied (the CLI: exit 3, "is a writer node running?").
     * The group denied is one no node uses, so the node here runs on.
     */
    @Test
    void aClientDeniedTheWriterGroupSaysWhyItCannotTellApplied() throws Exception {
        String group = "denied-writers";
        AclBinding deny = new AclBinding(new ResourcePattern(ResourceType.GROUP, group, PatternType.LITERAL),
                new AccessControlEntry("User:ANONYMOUS", "*", AclOperation.ALL, AclPermissionType.DENY));
        admin.createAcls(List.of(deny)).all().get();
        try (LobClient denied = new LobClient(config.with(LobStreamConfig.APPLICATION_ID.name(), group))) {
            var applied = denied.put("auth-doc", TestPipeline.bytes(1000, 1), null).applied();
            assertThatThrownBy(() -> applied.get(60, TimeUnit.SECONDS))
                    .isInstanceOf(ExecutionException.class)
                    .hasMessageContaining("cannot tell whether the write was applied")
                    .hasRootCauseInstanceOf(AuthorizationException.class);
        } finally {
            admin.deleteAcls(List.of(deny.toFilter())).all().get();
        }
    }
}
