package io.lobstream.app.cli;

import org.junit.jupiter.api.Test;
import picocli.CommandLine;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class ConfigCommandTest {
    /** README's configuration table is what {@code ./lobstream config} prints: a key's doc changed in one place only fails here. */
    @Test
    void readmesTableIsWhatTheCommandPrints() throws IOException {
        CliRun cli = new CliRun();
        assertThat(cli.run("config")).isEqualTo(CommandLine.ExitCode.OK);
        List<String> printed = cli.out().lines().toList();
        assertThat(printed).hasSizeGreaterThan(40);
        List<String> readme = Files.readAllLines(Path.of("..", "README.md"));
        int header = readme.indexOf(printed.get(0));
        assertThat(header).as("README has the table's header").isNotNegative();
        assertThat(readme.subList(header, Math.min(readme.size(), header + printed.size()))).isEqualTo(printed);
        // and no row of a key the command no longer prints
        assertThat(header + printed.size() == readme.size() || !readme.get(header + printed.size()).startsWith("|")).isTrue();
    }
}
