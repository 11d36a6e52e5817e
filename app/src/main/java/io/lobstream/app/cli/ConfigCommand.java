package io.lobstream.app.cli;

import io.lobstream.schema.LobStreamConfig;
import io.lobstream.store.LobStoreConfig;
import io.lobstream.store.config.ConfigKey;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;

/** Prints every configuration key with its default, the values it takes and its meaning, as a Markdown table. */
@Command(name = "config", mixinStandardHelpOptions = true,
        description = "List every configuration key, its default, the values it takes and its meaning.")
final class ConfigCommand implements Runnable {
    @Spec
    CommandSpec spec;

    @Override
    public void run() {
        PrintWriter out = spec.commandLine().getOut();
        List<ConfigKey<?>> keys = new ArrayList<>(LobStoreConfig.KEYS);
        keys.addAll(LobStreamConfig.KEYS);
        out.println("| key | default | allowed | meaning |");
        out.println("|---|---|---|---|");
        for (ConfigKey<?> k : keys) {
            out.println("| `" + k.name() + "` | `" + k.defaultValue() + "` | " + k.allowed() + " | " + k.doc() + " |");
        }
        // on stderr: the table on stdout is README's, as it is (ConfigCommandTest)
        spec.commandLine().getErr().println(OTHER_KEYS);
    }

    /** Where the keys that are not LobStream's go: an unknown key's error sends the user here. */
    static final String OTHER_KEYS = "Besides these: a Kafka client setting (security.protocol, sasl.*, ssl.*, timeouts) goes to "
            + "every client, as lob.producer.*, lob.consumer.* or lob.admin.* to LobStream's own clients of one kind, as "
            + "lob.streams.* to the writer's Kafka Streams; the registry's serdes take apicurio.* (and a Confluent serde's keys) "
            + "as they are, any other serde setting as lob.serde.*. README, Configuration, says which are refused and why.";
}
