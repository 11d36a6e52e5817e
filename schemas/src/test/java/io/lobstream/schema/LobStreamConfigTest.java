package io.lobstream.schema;

import io.lobstream.schema.LobStreamConfig.ClientKind;
import io.lobstream.store.config.ConfigException;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class LobStreamConfigTest {
    private final LobStreamConfig config = new LobStreamConfig(Map.of(
            "bootstrap.servers", "broker:9092",
            "security.protocol", "SASL_SSL",
            "linger.ms", "20",
            "session.timeout.ms", "10000",
            "lob.chunk.size", "65536"));

    /** A client gets the Kafka settings it knows, security above all; nothing of LobStream's own, nor routing. */
    @Test
    void eachClientGetsTheKafkaSettingsItKnows() {
        assertThat(config.clientConfig(ClientKind.PRODUCER))
                .containsEntry("bootstrap.servers", "broker:9092")
                .containsEntry("security.protocol", "SASL_SSL")
                .containsEntry("linger.ms", "20")
                .doesNotContainKeys("session.timeout.ms", "lob.chunk.size", "partitioner.ignore.keys");
        assertThat(config.clientConfig(ClientKind.CONSUMER))
                .containsEntry("session.timeout.ms", "10000")
                .containsEntry("security.protocol", "SASL_SSL")
                .doesNotContainKeys("linger.ms", "lob.chunk.size");
        assertThat(config.clientConfig(ClientKind.ADMIN))
                .containsOnlyKeys("bootstrap.servers", "security.protocol");
    }

    /**
     * A password kept in a file through Kafka's config providers: the provider's own settings, which no client lists
     * among its names, are taken plain and per kind, and every client resolves the reference with them.
     */
    @Test
    void aConfigProviderResolvesASecretInEveryClient(@TempDir Path dir) throws IOException {
        Path secrets = Files.writeString(dir.resolve("kafka.properties"), "password=s3cret\n");
        LobStreamConfig withProvider = new LobStreamConfig(Map.of("config.providers", "file",
                "config.providers.file.class", "org.apache.kafka.common.config.provider.FileConfigProvider",
                "ssl.truststore.password", "${file:" + secrets + ":password}",
                "lob.admin.config.providers.file.param.unused", "x"));
        Map<String, Object> producer = new HashMap<>(withProvider.clientConfig(ClientKind.PRODUCER));
        producer.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        producer.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        assertThat(new ProducerConfig(producer).getPassword("ssl.truststore.password").value()).isEqualTo("s3cret");
        // Kafka Streams' settings, which it hands to all its clients
        assertThat(new AdminClientConfig(withProvider.commonClientConfig()).getPassword("ssl.truststore.password").value())
                .isEqualTo("s3cret");
        assertThat(withProvider.clientConfig(ClientKind.ADMIN)).containsEntry("config.providers.file.param.unused", "x");
    }

    /**
     * A setting given for one kind of client reaches that kind alone and wins over the plain one; an interceptor, which
     * one kind takes and the other refuses, is taken only so.
     */
    @Test
    void aSettingForOneKindOfClientReachesThatKindAlone() {
        LobStreamConfig perKind = new LobStreamConfig(Map.of("lob.producer.interceptor.classes", "a.P",
                "lob.consumer.interceptor.classes", "a.C", "client.id", "app", "lob.consumer.client.id", "app-reader",
                "lob.admin.retries", "3"));
        assertThat(perKind.clientConfig(ClientKind.PRODUCER)).containsEntry("interceptor.classes", "a.P")
                .containsEntry("client.id", "app").doesNotContainKey("retries");
        assertThat(perKind.clientConfig(ClientKind.CONSUMER)).containsEntry("interceptor.classes", "a.C")
                .containsEntry("client.id", "app-reader");
        assertThat(perKind.clientConfig(ClientKind.ADMIN)).containsOnlyKeys("bootstrap.servers", "client.id", "retries");
        assertThat(perKind.commonClientConfig()).containsOnlyKeys("bootstrap.servers", "client.id");

        assertThatThrownBy(() -> new LobStreamConfig(Map.of("interceptor.classes", "a.P")))
                .isInstanceOf(ConfigException.class)
                .hasMessage("interceptor.classes is not taken as it is: a producer's fails a consumer, and the other way round; "
                        + "set lob.producer.interceptor.classes or lob.consumer.interceptor.classes");
        assertThatThrownBy(() -> new LobStreamConfig(Map.of("lob.consumer.linger.ms", "5")))
                .isInstanceOf(ConfigException.class)
                .hasMessage("unknown configuration key lob.consumer.linger.ms: linger.ms is no Kafka consumer setting");
        assertThatThrownBy(() -> new LobStreamConfig(Map.of("lob.producer.partitioner.class", "a.Q")))
                .hasMessageContaining("a LOB's commands go to its key's partition");
        // plain, no client would take them: refused, not dropped without a word
        for (String k : List.of("partitioner.class", "partitioner.ignore.keys")) {
            assertThatThrownBy(() -> new LobStreamConfig(Map.of(k, "a.Q"))).as(k).isInstanceOf(ConfigException.class)
                    .hasMessage(k + " is not taken: a LOB's commands go to its key's partition, whose tablespace holds it");
        }
        assertThatThrownBy(() -> new LobStreamConfig(Map.of("lob.admin.bootstrap.servers", "other:9092")))
                .hasMessageContaining("every client takes bootstrap.servers");
        // Kafka Streams would give a plain one to producers and consumers alike too
        assertThatThrownBy(() -> new LobStreamConfig(Map.of("lob.streams.interceptor.classes", "a.P")))
                .hasMessageContaining("set lob.streams.producer.interceptor.classes or lob.streams.consumer.interceptor.classes");
        assertThat(new LobStreamConfig(Map.of("lob.streams.producer.interceptor.classes", "a.P")).originals()).hasSize(1);
        // the writer's sinks leave the partition to its producer's partitioner: undo records elsewhere than their tablespace's
        for (String k : List.of("lob.streams.producer.partitioner.class", "lob.streams.partitioner.class",
                "lob.streams.producer.partitioner.ignore.keys", "lob.streams.partitioner.ignore.keys")) {
            assertThatThrownBy(() -> new LobStreamConfig(Map.of(k, "a.R"))).as(k).hasMessageContaining("go to the partition numbered as their tablespace's");
        }
    }

    /**
     * A Kafka client setting's value, plain or per kind, and bootstrap.servers' addresses are checked here: Kafka would say
     * so only as it made a client, after a node had started its embedded broker, and as no bad argument.
     */
    @Test
    void kafkaClientValuesAreCheckedUpFront() {
        assertThatThrownBy(() -> new LobStreamConfig(Map.of("linger.ms", "abc"))).isInstanceOf(ConfigException.class)
                .hasMessageStartingWith("linger.ms=abc: ").hasMessageContaining("linger.ms");
        assertThatThrownBy(() -> new LobStreamConfig(Map.of("lob.consumer.max.poll.records", "0"))).isInstanceOf(ConfigException.class)
                .hasMessageStartingWith("lob.consumer.max.poll.records=0: ");
        assertThatThrownBy(() -> new LobStreamConfig(Map.of("acks", "most"))).isInstanceOf(ConfigException.class)
                .hasMessageStartingWith("acks=most: ");
        assertThatThrownBy(() -> new LobStreamConfig(Map.of("bootstrap.servers", "a:9092, localhost")))
                .isInstanceOf(ConfigException.class).hasMessage("bootstrap.servers=a:9092, localhost: localhost is no host:port");
        // good values pass, and one a config provider resolves is left to the client
        assertThat(new LobStreamConfig(Map.of("linger.ms", "7", "lob.producer.acks", "all", "request.timeout.ms", "${env:T}",
                "bootstrap.servers", "a:9092,[::1]:9093")).originals()).hasSize(4);
        assertThat(new LobStreamConfig(Map.of("bootstrap.servers", "${env:KAFKA}")).bootstrap()).isEqualTo("${env:KAFKA}");
    }

    /** A serde class that is missing, or no serializer or deserializer, is a bad setting of its key (exit 2), not a failure. */
    @Test
    void aSerdeClassThatIsNoneIsABadSetting() {
        assertThatThrownBy(() -> LobSerdes.valueSerializer(new LobStreamConfig(Map.of("lob.value.serializer", "com.Typo"))))
                .isInstanceOf(ConfigException.class).hasMessageStartingWith("lob.value.serializer=com.Typo: no such class");
        assertThatThrownBy(() -> LobSerdes.valueDeserializer(new LobStreamConfig(Map.of("lob.value.deserializer", "java.lang.String"))))
                .isInstanceOf(ConfigException.class).hasMessage("lob.value.deserializer=java.lang.String: not a Kafka Deserializer");
    }

    /** What LobStream decides for each client it creates is refused, plain or per kind, naming what to set instead. */
    @Test
    void settingsLobStreamDecidesForItsClientsAreRefused() {
        assertThatThrownBy(() -> new LobStreamConfig(Map.of("group.instance.id", "n1")))
                .isInstanceOf(ConfigException.class)
                .hasMessage("group.instance.id is not taken: set lob.node.id, which makes the writer's members static (<id>-<thread>)");
        assertThatThrownBy(() -> new LobStreamConfig(Map.of("lob.consumer.group.instance.id", "n1")))
                .hasMessageStartingWith("lob.consumer.group.instance.id is not taken: set lob.node.id");
        assertThatThrownBy(() -> new LobStreamConfig(Map.of("group.id", "g"))).hasMessageContaining("lob.purge.group");
        assertThatThrownBy(() -> new LobStreamConfig(Map.of("lob.producer.transactional.id", "t"))).hasMessageContaining("name their own");
        assertThatThrownBy(() -> new LobStreamConfig(Map.of("bootstrap.controllers", "c:9093"))).hasMessageContaining("bootstrap.servers");
    }

    @Test
    void bootstrapIsAlwaysThere() {
        assertThat(new LobStreamConfig(Map.of()).clientConfig(ClientKind.PRODUCER))
                .containsOnlyKeys("bootstrap.servers")
                .containsEntry("bootstrap.servers", LobStreamConfig.BOOTSTRAP.defaultValue());
    }

    /** A misspelt lob.* key is refused; the engine's keys, Streams settings and any other Kafka setting pass. */
    @Test
    void anUnknownLobKeyIsRefusedAndEveryKnownOnePasses() {
        assertThat(new LobStreamConfig(Map.of("lob.page.size", "4096", "lob.streams.poll.ms", "50",
                "ssl.truststore.location", "/t", "apicurio.registry.auto-register", "false")).originals()).hasSize(4);
        assertThatThrownBy(() -> new LobStreamConfig(Map.of("lob.chunk.sise", "1")))
                .isInstanceOf(ConfigException.class)
                .hasMessage("unknown configuration key lob.chunk.sise (./lobstream config lists them)");
    }

    /**
     * A misspelt Kafka key is refused too: without bootstrap.servers a node would start the embedded broker, far from the
     * cluster it was meant for. A serde's own settings pass.
     */
    @Test
    void anUnknownKafkaKeyIsRefusedAndSerdeSettingsPass() {
        assertThatThrownBy(() -> new LobStreamConfig(Map.of("bootstrap.server", "prod:9092")))
                .isInstanceOf(ConfigException.class)
                .hasMessageStartingWith("unknown configuration key bootstrap.server: not LobStream's");
        assertThatThrownBy(() -> new LobStreamConfig(Map.of("num.standby.replicas", "1")))
                .hasMessageContaining("Kafka Streams settings take the prefix lob.streams.");
        assertThat(new LobStreamConfig(Map.of("schema.registry.url", "http://r", "basic.auth.user.info", "u:p",
                "specific.avro.reader", "true", "sasl.jaas.config", "x", "client.rack", "r")).originals()).hasSize(5);
        // any other serde's setting, under lob.serde.
        assertThat(new LobStreamConfig(Map.of("lob.serde.my.serde.option", "on")).serdeConfig()).containsEntry("my.serde.option", "on")
                .containsEntry("apicurio.registry.fault-tolerant-refresh", "true"); // a registry away keeps the cached schemas
    }

    /**
     * Apicurio 2.6's client factory renamed a client certificate's keys to the truststore's: the certificate never reached the
     * registry, and its path replaced the truststore. The location reaches its HTTP client under the name it reads; the bare
     * keystore key, which that client does not read, no longer replaces the truststore either.
     */
    @Test
    void aClientCertificateForTheRegistryGoesUnderTheNamesApicuriosHttpClientReads() {
        Map<String, Object> serdes = new LobStreamConfig(Map.of("apicurio.registry.request.ssl.keystore.location", "/k.p12",
                "apicurio.registry.request.ssl.keystore.password", "kp", "apicurio.registry.request.ssl.keystore.type", "PKCS12",
                "apicurio.registry.request.ssl.truststore.location", "/t.p12")).serdeConfig();
        assertThat(serdes).containsEntry("apicurio.rest.request.ssl.keystore.location", "/k.p12")
                .containsEntry("apicurio.registry.request.ssl.truststore.location", "/t.p12")
                .doesNotContainKey("apicurio.registry.request.ssl.keystore.location")
                // translated right by Apicurio: left to it
                .containsEntry("apicurio.registry.request.ssl.keystore.password", "kp");
        assertThat(new LobStreamConfig(Map.of("lob.serde.apicurio.registry.request.ssl.keystore", "PEM...")).serdeConfig())
                .containsEntry("apicurio.rest.request.ssl.keystore", "PEM...").doesNotContainKey("apicurio.registry.request.ssl.keystore");
    }

    /** The writer alone secured: the node's other clients (catch-up, purge, topic setup) would speak PLAINTEXT to the cluster. */
    @Test
    void aSecurityProtocolForTheWriterAloneIsRefusedUntilEveryClientHasOne() {
        assertThatThrownBy(() -> new LobStreamConfig(Map.of("lob.streams.security.protocol", "SASL_SSL")))
                .hasMessageStartingWith("lob.streams.security.protocol is not taken alone: set security.protocol");
        assertThatThrownBy(() -> new LobStreamConfig(Map.of("lob.streams.main.consumer.security.protocol", "SSL")))
                .hasMessageContaining("is not taken alone");
        assertThat(new LobStreamConfig(Map.of("security.protocol", "SASL_SSL", "lob.streams.security.protocol", "SASL_SSL",
                "lob.streams.sasl.jaas.config", "writer's own")).originals()).hasSize(3);
    }

    /** The node reads these itself, under their lob.writer.* keys: given to Kafka Streams alone, the two would disagree. */
    @Test
    void streamsSettingsTheNodeReadsItselfAreRefusedNamingItsKey() {
        assertThatThrownBy(() -> new LobStreamConfig(Map.of("lob.streams.application.id", "w2")))
                .hasMessage("lob.streams.application.id is not taken: set lob.writer.application.id, which the node reads too");
        assertThatThrownBy(() -> new LobStreamConfig(Map.of("lob.streams.num.stream.threads", "4")))
                .hasMessageContaining("set lob.writer.threads");
        assertThatThrownBy(() -> new LobStreamConfig(Map.of("lob.streams.commit.interval.ms", "500")))
                .hasMessageContaining("set lob.writer.commit.interval.ms");
        for (String prefix : List.of("", "consumer.", "main.consumer.")) { // the static-member warning quotes the node's
            assertThatThrownBy(() -> new LobStreamConfig(Map.of("lob.streams." + prefix + "session.timeout.ms", "10000")))
                    .hasMessageContaining("set lob.writer.session.timeout.ms");
        }
    }

    /**
     * The cluster and the registry, given to one part of the node alone (the writer's clients, Apicurio's serdes), would
     * split it: the writer on another cluster than purge, catch-up and topic setup; the serdes on another registry than
     * the node's check of it.
     */
    @Test
    void theClusterAndTheRegistryAreTakenForTheWholeNodeOnly() {
        for (String form : List.of("", "producer.", "main.consumer.", "admin.", "restore.consumer.")) {
            assertThatThrownBy(() -> new LobStreamConfig(Map.of("lob.streams." + form + "bootstrap.servers", "elsewhere:9092")))
                    .isInstanceOf(ConfigException.class).hasMessageStartingWith("lob.streams." + form + "bootstrap.servers is not "
                            + "taken: set bootstrap.servers, which every client of the node takes");
        }
        // an interceptor's own setting of the same name is its own
        assertThat(new LobStreamConfig(Map.of("lob.streams.producer.monitoring.interceptor.bootstrap.servers", "m:9092"))
                .originals()).hasSize(1);
        for (String key : List.of("apicurio.registry.url", "lob.serde.apicurio.registry.url")) {
            assertThatThrownBy(() -> new LobStreamConfig(Map.of(key, "http://elsewhere:8081")))
                    .hasMessage(key + " is not taken: set lob.registry.url, which the node reads too");
        }
        assertThat(new LobStreamConfig(Map.of("lob.registry.url", "http://r:8081/apis/registry/v2")).serdeConfig())
                .containsEntry("apicurio.registry.url", "http://r:8081/apis/registry/v2")
                .containsEntry("schema.registry.url", "http://r:8081/apis/registry/v2");
        // Confluent's serializer swapped in takes its own, at the registry's Confluent-compatible API
        assertThat(new LobStreamConfig(Map.of("schema.registry.url", "http://r:8081/apis/ccompat/v7")).serdeConfig())
                .containsEntry("schema.registry.url", "http://r:8081/apis/ccompat/v7");
    }

    /** Names Kafka would refuse after the broker and the HTTP port were taken: refused before anything starts. */
    @Test
    void aNodeIdOrTopicPrefixKafkaWouldRefuseIsRefusedFirst() {
        assertThatThrownBy(() -> new LobStreamConfig(Map.of("lob.node.id", "node 1")))
                .hasMessage("lob.node.id=node 1: must be ASCII letters, digits, '.', '_' or '-', at most 240 of them (as Kafka "
                        + "takes in a name)");
        assertThatThrownBy(() -> new LobStreamConfig(Map.of("lob.topic.prefix", "lob/")))
                .hasMessageStartingWith("lob.topic.prefix=lob/: must be ASCII letters");
        assertThatThrownBy(() -> new LobStreamConfig(Map.of("lob.topic.prefix", "p".repeat(238))))
                .hasMessageContaining("at most 237 of them");
        LobStreamConfig fine = new LobStreamConfig(Map.of("lob.node.id", " node-1.a_b ", "lob.topic.prefix", "p".repeat(237)));
        assertThat(fine.get(LobStreamConfig.NODE_ID)).isEqualTo("node-1.a_b");
        assertThat(fine.topics().undoHistory()).hasSize(249);
    }

    /** What the writer's topology decides itself: given, it would change nothing, or bypass the writer's own assignor. */
    @Test
    void streamsSettingsTheTopologyDecidesAreRefusedSayingWhy() {
        assertThatThrownBy(() -> new LobStreamConfig(Map.of("lob.streams.default.timestamp.extractor", "x.Y")))
                .isInstanceOf(ConfigException.class).hasMessageContaining("time their records themselves");
        assertThatThrownBy(() -> new LobStreamConfig(Map.of("lob.streams.auto.offset.reset", "latest")))
                .hasMessageContaining("from their beginning");
        assertThatThrownBy(() -> new LobStreamConfig(Map.of("lob.streams.num.standby.replicas", "1")))
                .hasMessageContaining("no changelog");
        assertThatThrownBy(() -> new LobStreamConfig(Map.of("lob.streams.group.protocol", "streams")))
                .hasMessageContaining("only the classic protocol");
        assertThatThrownBy(() -> new LobStreamConfig(Map.of("lob.streams.application.server", "elsewhere:8080")))
                .hasMessageContaining("lob.http.advertised.host");
        assertThat(new LobStreamConfig(Map.of("lob.streams.group.protocol", "classic")).originals()).hasSize(1);
        // the purge workers' consumer, plain or for consumers: their assignor runs only in the classic protocol
        for (String key : List.of("group.protocol", "lob.consumer.group.protocol")) {
            assertThatThrownBy(() -> new LobStreamConfig(Map.of(key, "consumer"))).isInstanceOf(ConfigException.class)
                    .hasMessageStartingWith(key + "=consumer is not taken").hasMessageContaining("only the classic protocol");
            assertThat(new LobStreamConfig(Map.of(key, "CLASSIC")).originals()).hasSize(1);
        }
        assertThatThrownBy(() -> new LobStreamConfig(Map.of("lob.streams.task.assignor.class", "x.Y")))
                .hasMessageContaining("assigns its tasks itself");
        // Kafka Streams checks these plain and as consumer.*, not as main.consumer.*, which would win over its own
        assertThatThrownBy(() -> new LobStreamConfig(Map.of("lob.streams.main.consumer.enable.auto.commit", "true")))
                .hasMessageContaining("exactly-once reads");
        for (String form : List.of("", "consumer.", "main.consumer.")) {
            assertThatThrownBy(() -> new LobStreamConfig(Map.of("lob.streams." + form + "group.instance.id", "n1")))
                    .hasMessageContaining("set lob.node.id");
        }
        assertThat(new LobStreamConfig(Map.of("lob.streams.main.consumer.fetch.max.bytes", "1000000")).originals()).hasSize(1);
    }

    /** Taken, every command was dead-lettered as undecodable: the readers look for the schema id in the value. */
    @Test
    void aSchemaIdInHeadersOrAnotherFramingIsRefused() {
        assertThatThrownBy(() -> new LobStreamConfig(Map.of("apicurio.registry.headers.enabled", "true")))
                .isInstanceOf(ConfigException.class).hasMessageContaining("take the schema id from the record's value");
        assertThatThrownBy(() -> new LobStreamConfig(Map.of("lob.serde.apicurio.registry.headers.enabled", true)))
                .hasMessageContaining("is not taken");
        assertThat(new LobStreamConfig(Map.of("apicurio.registry.headers.enabled", "false")).serdeConfig())
                .containsEntry("apicurio.registry.headers.enabled", "false");
        // global ids: producers in other languages frame content ids (README), which would be looked up as another schema
        assertThatThrownBy(() -> new LobStreamConfig(Map.of("apicurio.registry.use-id", "globalId")))
                .isInstanceOf(ConfigException.class).hasMessageContaining("use-id=contentId");
        assertThatThrownBy(() -> new LobStreamConfig(Map.of("lob.serde.apicurio.registry.as-confluent", "false")))
                .hasMessageContaining("is not taken");
        assertThat(new LobStreamConfig(Map.of("apicurio.registry.use-id", "contentId")).serdeConfig())
                .containsEntry("apicurio.registry.as-confluent", "true");
        assertThat(new LobStreamConfig(Map.of("apicurio.registry.id-handler", io.apicurio.registry.serde.Legacy4ByteIdHandler.class,
                "apicurio.registry.as-confluent", Boolean.TRUE)).serdeConfig()).as("a class, a Boolean: as Apicurio takes them")
                .containsEntry("apicurio.registry.as-confluent", Boolean.TRUE);
    }

    /** Kafka Streams refuses a commit interval over the transaction timeout, naming neither LobStream key, after a broker started. */
    @Test
    void aCommitIntervalOverTheTransactionTimeoutIsRefused() {
        assertThatThrownBy(() -> new LobStreamConfig(Map.of("lob.writer.commit.interval.ms", "30000")))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("not shorter than the writer's transaction timeout, 10000 ms");
        assertThatThrownBy(() -> new LobStreamConfig(Map.of("lob.writer.commit.interval.ms", "10000")))
                .as("equal: a commit's transaction runs past it by the commit itself").isInstanceOf(ConfigException.class);
        LobStreamConfig raised = new LobStreamConfig(Map.of("lob.writer.commit.interval.ms", "30000",
                "lob.streams.producer.transaction.timeout.ms", "60000"));
        assertThat(raised.writerTransactionTimeoutMs()).isEqualTo(60_000);
        // Kafka Streams' check reads the producer's key alone: the plain one raises the timeout, not what it checks against
        assertThatThrownBy(() -> new LobStreamConfig(Map.of("lob.writer.commit.interval.ms", "30000",
                "lob.streams.transaction.timeout.ms", "60000"))).hasMessageContaining("(lob.streams.producer.transaction.timeout.ms)");
        // ... and the plain one can lower what the producers get below what Kafka Streams checks
        assertThatThrownBy(() -> new LobStreamConfig(Map.of("lob.writer.commit.interval.ms", "8000",
                "lob.streams.transaction.timeout.ms", "5000"))).hasMessageContaining("5000 ms (lob.streams.transaction.timeout.ms)");
        // without transactions there is nothing to fit in
        assertThat(new LobStreamConfig(Map.of("lob.writer.commit.interval.ms", "30000",
                "lob.streams.processing.guarantee", "at_least_once")).get(LobStreamConfig.COMMIT_INTERVAL_MS)).isEqualTo(30_000);
        assertThatThrownBy(() -> new LobStreamConfig(Map.of("lob.streams.transaction.timeout.ms", "60s")).writerTransactionTimeoutMs())
                .isInstanceOf(ConfigException.class)
                .hasMessage("lob.streams.transaction.timeout.ms=60s: a number of milliseconds");
    }

    /** 0 would let the broker delete the redo log at once; -1 keeps every command. */
    @Test
    void aCommandsRetentionUnderTheDedupeWindowIsRefused() {
        assertThatThrownBy(() -> new LobStreamConfig(Map.of("lob.commands.retention.ms", "0")))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("-1 (keep every command) or at least lob.command.dedupe.window.ms (3600000)");
        assertThat(new LobStreamConfig(Map.of("lob.commands.retention.ms", "604800000")).get(LobStreamConfig.COMMANDS_RETENTION_MS))
                .isEqualTo(604_800_000L);
    }

    /** A handler that continues would turn the writer's failures (a log cut under it, a disk error) into skipped commands. */
    @Test
    void aProcessingExceptionHandlerForTheWriterIsRefused() {
        assertThatThrownBy(() -> new LobStreamConfig(Map.of("lob.streams.processing.exception.handler",
                "org.apache.kafka.streams.errors.LogAndContinueProcessingExceptionHandler")))
                .isInstanceOf(ConfigException.class).hasMessageContaining("must stop its task, not skip a command");
    }

    /** Values past 2 GiB: the limit is a long, up to 1 TiB (chunk counts stay ints at the smallest chunk size). */
    @Test
    void theValueLimitGoesPastTwoGiB() {
        assertThat(new LobStreamConfig(Map.of("lob.value.max.bytes", "4294967296")).get(LobStreamConfig.VALUE_MAX_BYTES))
                .isEqualTo(4L << 30);
        assertThatThrownBy(() -> new LobStreamConfig(Map.of("lob.value.max.bytes", Long.toString((1L << 40) + 1))))
                .isInstanceOf(ConfigException.class).hasMessageContaining("must be between 1 and 1099511627776");
    }

    /** A registry URL carrying credentials (Confluent's basic.auth.credentials.source=URL) is never printed with them. */
    @Test
    void aRegistryUrlIsShownWithoutItsCredentials() {
        LobStreamConfig withKey = new LobStreamConfig(Map.of(LobStreamConfig.REGISTRY_URL.name(), "https://KEY:SECRET@registry:8081/apis"));
        assertThat(withKey.registryShown()).isEqualTo("https://***@registry:8081/apis");
        LobStreamConfig pasted = new LobStreamConfig(Map.of(LobStreamConfig.REGISTRY_URL.name(), "https://KEY:a/b+c d@registry/apis"));
        assertThat(pasted.registryShown()).as("a secret pasted unencoded").isEqualTo("https://***@registry/apis");
        assertThat(pasted.withoutRegistryUserInfo("Illegal character in authority at index 17: https://KEY:a/b+c d@registry/apis"))
                .doesNotContain("KEY").doesNotContain("b+c");
        assertThat(config.registryShown()).isEqualTo(config.get(LobStreamConfig.REGISTRY_URL));
        LobStreamConfig emptyUser = new LobStreamConfig(Map.of(LobStreamConfig.REGISTRY_URL.name(), "http://@registry:8081/apis"));
        assertThat(emptyUser.registryShown()).isEqualTo("http://@registry:8081/apis");
    }

    /** One consumer group for the writers and the purge workers, or none, fails in Kafka after a broker started: refused now. */
    @Test
    void theWritersAndThePurgeWorkersNeedAGroupEach() {
        assertThatThrownBy(() -> new LobStreamConfig(Map.of("lob.purge.group", "lobstream-writer")))
                .isInstanceOf(ConfigException.class).hasMessage("lob.purge.group=lobstream-writer is lob.writer.application.id too: "
                        + "the purge workers and the writers need a consumer group each");
        assertThatThrownBy(() -> new LobStreamConfig(Map.of("lob.writer.application.id", " ")))
                .isInstanceOf(ConfigException.class).hasMessage("lob.writer.application.id is empty: it names a consumer group");
        assertThatThrownBy(() -> new LobStreamConfig(Map.of("lob.purge.group", ""))).isInstanceOf(ConfigException.class);
    }

    /**
     * application.server is HOST:PORT: a scheme or a port in the host would make no node know itself as an owner, and an
     * IPv6 literal comes back from Kafka without its brackets, so it is given without them.
     */
    @Test
    void theAdvertisedHostIsAHostAlone() {
        for (String bad : new String[] {"http://node", "node:8080", "10.0.0.7:8080", "node/x", "my node", "[fe80::1]", "[::1]:8080",
                "1::2::3", ":::", "fe80::1%eth0"}) {
            assertThatThrownBy(() -> new LobStreamConfig(Map.of("lob.http.advertised.host", bad))).as(bad)
                    .isInstanceOf(ConfigException.class).hasMessageContaining("a host name or IP address alone");
        }
        for (String wildcard : new String[] {"0.0.0.0", "0", "0.0", "::", "0:0:0:0:0:0:0:0", "::0.0.0.0"}) {
            assertThatThrownBy(() -> new LobStreamConfig(Map.of("lob.http.advertised.host", wildcard))).as(wildcard)
                    .isInstanceOf(ConfigException.class).hasMessageContaining("a wildcard address names no host");
        }
        for (String good : new String[] {"node-1", "10.0.0.7", "node.example.com", "::1", "fd00::5", "2001:db8::10.0.0.7", ""}) {
            assertThat(new LobStreamConfig(Map.of("lob.http.advertised.host", good)).get(LobStreamConfig.HTTP_ADVERTISED_HOST))
                    .as(good).isEqualTo(good);
        }
    }
}
