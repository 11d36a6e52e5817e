package io.lobstream.app.cli;

import io.lobstream.app.embedded.EmbeddedCluster;
import io.lobstream.schema.LobStreamConfig;
import picocli.CommandLine;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** The ports of the embedded default, for {@code node} (without --bootstrap) and {@code cluster}. */
final class EmbeddedClusterOptions {
    private static final int KAFKA_PORT = LobStreamConfig.DEFAULT_KAFKA_PORT;
    private static final int CONTROLLER_PORT = 9093;
    private static final int REGISTRY_PORT = LobStreamConfig.DEFAULT_REGISTRY_PORT;
    private static final String[] NAMES = {"--kafka-port", "--controller-port", "--registry-port"};

    @Option(names = "--kafka-port", description = "Embedded broker port (default: " + KAFKA_PORT + ").")
    Integer kafkaPort;

    @Option(names = "--controller-port", description = "Embedded KRaft controller port (default: " + CONTROLLER_PORT + ").")
    Integer controllerPort;

    @Option(names = "--registry-port", description = "Embedded registry port (default: " + REGISTRY_PORT + ").")
    Integer registryPort;

    /**
     * Refuses, as a usage error, a port out of range (0 = any free one) or one given for two roles (with the others'
     * defaults): found only as the broker starts, it was an error exit 1, "failed to start".
     */
    void check(CommandLine cli) {
        int[] ports = ports();
        for (int i = 0; i < ports.length; i++) {
            if (ports[i] < 0 || ports[i] > 65_535) {
                throw new ParameterException(cli, NAMES[i] + " " + ports[i] + ": a port from 1 to 65535 (0: any free one)");
            }
            for (int j = 0; j < i; j++) {
                if (ports[i] != 0 && ports[i] == ports[j]) {
                    throw new ParameterException(cli, NAMES[j] + " and " + NAMES[i] + " are both " + ports[i]
                            + ": the broker, the KRaft controller and the registry need ports of their own");
                }
            }
        }
    }

    /**
     * Refuses, as a usage error, a port of the node's own ({@code what}, bound on {@code host}) that one of the embedded
     * cluster's has too: found only once the broker and registry had started, it was exit 1 and a message blaming "another
     * node or server". They listen on 127.0.0.1 alone, so only a host that takes in the loopback address can clash.
     */
    void checkApart(CommandLine cli, String what, String host, int port) {
        if (port == 0 || !takesInLoopback(host)) {
            return;
        }
        int[] ports = ports();
        for (int i = 0; i < ports.length; i++) {
            if (port != 0 && port == ports[i]) {
                throw new ParameterException(cli, what + " " + port + " is the embedded cluster's " + NAMES[i]
                        + " too: give one of them another port");
            }
        }
    }

    private static boolean takesInLoopback(String host) {
        try {
            InetAddress a = InetAddress.getByName(host);
            return a.isLoopbackAddress() || a.isAnyLocalAddress();
        } catch (UnknownHostException e) {
            return false; // the node's own bind check names it
        }
    }

    private int[] ports() {
        return new int[] {or(kafkaPort, KAFKA_PORT), or(controllerPort, CONTROLLER_PORT), or(registryPort, REGISTRY_PORT)};
    }

    /** Starts broker and registry under {@code dataDir} ({@code kafka/}, {@code registry/}). */
    EmbeddedCluster start(Path dataDir) throws Exception {
        return EmbeddedCluster.start(dataDir, or(kafkaPort, KAFKA_PORT), or(controllerPort, CONTROLLER_PORT), or(registryPort, REGISTRY_PORT));
    }

    /** Says on stderr which of these options {@code command} ignores, as it uses a Kafka of its own (--bootstrap). */
    void warnIgnored(String command) {
        List<String> given = new ArrayList<>();
        if (kafkaPort != null) {
            given.add("--kafka-port");
        }
        if (controllerPort != null) {
            given.add("--controller-port");
        }
        if (registryPort != null) {
            given.add("--registry-port");
        }
        if (!given.isEmpty()) {
            System.err.println("lobstream " + command + ": " + String.join(", ", given) + " ignored: they are the embedded broker's, "
                    + "which --bootstrap replaces");
        }
    }

    private static int or(Integer port, int otherwise) {
        return port == null ? otherwise : port;
    }
}
