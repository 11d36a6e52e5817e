package io.lobstream.app.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.lobstream.client.LobClient;
import io.lobstream.ingest.http.StreamedResponse;
import io.lobstream.schema.LobStreamConfig;
import io.lobstream.schema.LobStreamConfig.ClientKind;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import picocli.CommandLine;
import picocli.CommandLine.Command;

import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;

/**
 * {@code ./lobstream train-class-data} (hidden): goes through what the client commands load —
 * the commands' model and help (picocli's own classes, of class file version 49, cannot be
 * archived; what it reflects on can), a producer with its serializer, an admin client, a
 * consumer, the node's HTTP clients, JSON, the Kafka protocol's classes — against a loopback port
 * where nothing listens, and exits.
 *
 * <p>The launcher runs it once after each build with {@code -XX:ArchiveClassesAtExit}: the archive
 * of these classes takes about a second off every later client command's start (README,
 * Configuration). A run of its own, rather than the first client command dumping what it happened
 * to load: an archive dumped by {@code --version} held a quarter of these classes and saved
 * nothing, while this one nearly matches one dumped by a {@code put} (a small {@code put} 2.4–2.7 s
 * against 2.2–2.5 s, alternating), whatever the user runs first; and every client command then
 * starts as a plain {@code exec}.
 */
@Command(name = "train-class-data", hidden = true,
        description = "Load the client commands' classes without a network (the launcher's class-data archive).")
final class ClassDataTraining implements Callable<Integer> {
    @Override
    public Integer call() throws Exception {
        String nowhere = "127.0.0.1:" + closedPort(); // a connection is refused at once
        CommandLine cli = LobStreamCli.commandLine();
        PrintStream discard = new PrintStream(OutputStream.nullOutputStream());
        for (String command : List.of("put", "write", "append", "truncate", "delete", "get", "status", "config")) {
            cli.getSubcommands().get(command).usage(discard);
        }
        cli.setOut(new PrintWriter(discard)).setErr(new PrintWriter(discard)).execute("put", "--range"); // a usage error

        LobStreamConfig config = new LobStreamConfig(Map.of(LobStreamConfig.BOOTSTRAP.name(), nowhere,
                LobStreamConfig.REGISTRY_URL.name(), "http://" + nowhere + "/apis/registry/v2",
                ProducerConfig.MAX_BLOCK_MS_CONFIG, "1"));
        try (LobClient client = new LobClient(config)) {
            client.put("training", new byte[16], null).exceptionally(e -> null).get(); // no metadata within 1 ms: fails
        } catch (RuntimeException expected) {
            // the send path is loaded
        }
        Map<String, Object> adminSettings = config.clientConfig(ClientKind.ADMIN);
        try (Admin admin = Admin.create(adminSettings)) {
            admin.describeCluster(new DescribeClusterOptions().timeoutMs(1)).nodes().get(); // as BrokerCheck asks
        } catch (ExecutionException expected) {
            // no broker within 1 ms
        }
        Map<String, Object> consumerSettings = config.clientConfig(ClientKind.CONSUMER);
        new KafkaConsumer<>(consumerSettings, new ByteArrayDeserializer(), new ByteArrayDeserializer()).close(CloseOptions.timeout(Duration.ZERO));
        try (StreamedResponse r = StreamedResponse.send(URI.create("http://" + nowhere + "/lobs/training"), "GET", Map.of(),
                Duration.ofSeconds(1), Duration.ofSeconds(1))) {
            r.statusCode();
        } catch (IOException expected) {
            // connection refused
        }
        try {
            new NodeHttp("http://" + nowhere).getText("/status");
        } catch (IOException expected) {
            // connection refused
        }
        // what only a broker's answers would load: the protocol's request and response classes,
        // its errors, the clients' internals (loaded, not initialised: nothing runs)
        loadPackages(KafkaConsumer.class, "org/apache/kafka/common/protocol/", "org/apache/kafka/common/message/",
                "org/apache/kafka/common/requests/", "org/apache/kafka/common/errors/", "org/apache/kafka/clients/");
        loadPackages(LobClient.class, "io/lobstream/");
        loadPackages(ClassDataTraining.class, "io/lobstream/app/cli/");
        ObjectMapper json = new ObjectMapper();
        json.writeValueAsString(json.readTree("{\"state\":\"RUNNING\",\"partitions\":[{\"partition\":0}]}"));
        return 0;
    }

    /** A loopback port nothing listens on: one the system gave and took back. */
    private static int closedPort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        }
    }

    /**
     * Loads every class of the jar (or classes directory, as in tests) that holds {@code of} whose
     * name starts with one of {@code prefixes}.
     */
    private static void loadPackages(Class<?> of, String... prefixes) throws IOException, URISyntaxException {
        Path source = Path.of(of.getProtectionDomain().getCodeSource().getLocation().toURI());
        List<String> names;
        if (Files.isDirectory(source)) {
            try (var files = Files.walk(source)) {
                names = files.map(f -> source.relativize(f).toString().replace(File.separatorChar, '/')).toList();
            }
        } else {
            try (JarFile jar = new JarFile(source.toFile())) {
                names = jar.stream().map(JarEntry::getName).toList();
            }
        }
        for (String name : names) {
            if (name.endsWith(".class") && !name.endsWith("module-info.class") && Arrays.stream(prefixes).anyMatch(name::startsWith)) {
                try {
                    Class.forName(name.substring(0, name.length() - ".class".length()).replace('/', '.'), false, of.getClassLoader());
                } catch (ClassNotFoundException | LinkageError optional) {
                    // a class whose optional dependency is absent: not one the CLI uses
                }
            }
        }
    }
}
