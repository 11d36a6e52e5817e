package io.lobstream.app.cli;

import io.lobstream.schema.LobStreamConfig;
import io.lobstream.store.LobStoreConfig;
import io.lobstream.store.config.ConfigKey;
import picocli.CommandLine.Command;

import java.util.ArrayList;
import java.util.List;

/** Prints every configuration key with its default and meaning, as a Markdown table. */
@Command(name = "config", mixinStandardHelpOptions = true, description = "List every configuration key, its default and meaning.")
final class ConfigCommand implements Runnable {
    @Override
    public void run() {
        List<ConfigKey<?>> keys = new ArrayList<>(LobStoreConfig.KEYS);
        keys.addAll(LobStreamConfig.KEYS);
        System.out.println("| key | default | meaning |");
        System.out.println("|---|---|---|");
        for (ConfigKey<?> k : keys) {
            System.out.println("| `" + k.name() + "` | `" + k.defaultValue() + "` | " + k.doc() + " |");
        }
    }
}
