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
    }
}
