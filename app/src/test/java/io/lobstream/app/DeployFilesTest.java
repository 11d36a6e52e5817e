package io.lobstream.app;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import io.lobstream.app.cli.LobStreamCli;
import io.lobstream.schema.LobStreamConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import picocli.CommandLine;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

/**
 * The compose files as Docker would run them, checked where CI's {@code docker compose config}, a schema check, cannot
 * look: every LobStream service's command parses as the CLI parses it (options, durations, {@code -c} keys), and every
 * file they mount from the repository is there. No Docker engine needed.
 */
class DeployFilesTest {
    private static final Path ROOT = Path.of("..").toAbsolutePath().normalize(); // tests run in app/
    private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());

    @ParameterizedTest
    @ValueSource(strings = {"docker-compose.yml", "docker-compose.scale-out.yml"})
    void everyLobStreamServiceCommandParsesAndEveryMountedFileExists(String file) throws Exception {
        JsonNode services = YAML.readTree(ROOT.resolve(file).toFile()).path("services");
        assertThat(services.size()).as(file + " services").isPositive();
        // an override file (the scale-out one) is read on top of the base file, as compose -f base -f override reads it
        JsonNode base = YAML.readTree(ROOT.resolve("docker-compose.yml").toFile()).path("services");
        int lobstream = 0;
        for (Map.Entry<String, JsonNode> s : services.properties()) {
            JsonNode service = s.getValue();
            if (!file.equals("docker-compose.yml") && base.has(s.getKey())) {
                com.fasterxml.jackson.databind.node.ObjectNode merged = base.get(s.getKey()).deepCopy();
                merged.setAll((com.fasterxml.jackson.databind.node.ObjectNode) service);
                service = merged;
            }
            if (service.path("image").asText().startsWith("lobstream") && service.has("command")) {
                lobstream++;
                List<String> args = new ArrayList<>();
                service.path("command").forEach(a -> args.add(a.asText()));
                CommandLine.ParseResult parsed = LobStreamCli.commandLine().parseArgs(args.toArray(String[]::new));
                assertThat(parsed.hasSubcommand()).as(file + " " + s.getKey() + ": " + args).isTrue();
                CommandLine.Model.OptionSpec c = parsed.subcommand().commandSpec().findOption("-c");
                Map<String, String> keys = c == null ? Map.of() : c.getValue();
                assertThatCode(() -> new LobStreamConfig(new HashMap<>(keys))).as(file + " " + s.getKey() + " -c").doesNotThrowAnyException();
            }
            for (JsonNode volume : service.path("volumes")) {
                String source = volume.isTextual() ? volume.asText().split(":")[0] : volume.path("source").asText();
                if (source.startsWith("./")) {
                    assertThat(ROOT.resolve(source)).as(file + " " + s.getKey() + " mounts").exists();
                }
            }
        }
        assertThat(lobstream).as("node and purge, or node, node-2 and purge").isEqualTo(file.equals("docker-compose.yml") ? 2 : 3);
    }

    /** The broker and the registry the compose file runs are the versions the build compiles and tests against. */
    @Test
    void composeRunsTheBrokerAndRegistryVersionsTheBuildUses() throws Exception {
        JsonNode services = YAML.readTree(ROOT.resolve("docker-compose.yml").toFile()).path("services");
        List<String> images = new ArrayList<>();
        services.forEach(s -> images.add(s.path("image").asText()));
        // (surefire passes the POM's versions; run outside Maven, the test has nothing to compare with)
        String kafka = System.getProperty("lobstream.kafka.version", "");
        String apicurio = System.getProperty("lobstream.apicurio.version", "");
        org.junit.jupiter.api.Assumptions.assumeFalse(kafka.isEmpty() || apicurio.isEmpty(), "versions not passed");
        assertThat(images).contains("apache/kafka:" + kafka).anyMatch(i -> i.startsWith("apicurio/") && i.endsWith(":" + apicurio));
    }

    /**
     * Every meter the alert rules and the dashboard query is one README's Metrics section documents (Prometheus' names:
     * a counter's {@code _total}, a histogram's {@code _bucket}): a meter renamed in the code and the README, but not
     * here, would leave an alert that never fires. Every Prometheus configuration loads the rules.
     */
    @Test
    void theAlertsAndTheDashboardQueryDocumentedMeters() throws Exception {
        String readme = Files.readString(ROOT.resolve("README.md"));
        String metrics = readme.substring(readme.indexOf("\n## Metrics"), readme.indexOf("\n## Bad input"));
        JsonNode groups = YAML.readTree(ROOT.resolve("deploy/alerts.yml").toFile()).path("groups");
        List<String> queries = new ArrayList<>();
        for (JsonNode group : groups) {
            for (JsonNode rule : group.path("rules")) {
                assertThat(rule.path("alert").asText()).as("%s", rule).isNotEmpty();
                assertThat(rule.path("labels").path("severity").asText()).as("%s", rule).isNotEmpty();
                queries.add(rule.path("expr").asText());
            }
        }
        assertThat(queries).hasSizeGreaterThanOrEqualTo(10);
        for (JsonNode panel : new ObjectMapper().readTree(ROOT.resolve("deploy/grafana/dashboards/lobstream.json").toFile()).path("panels")) {
            panel.path("targets").forEach(t -> queries.add(t.path("expr").asText()));
        }
        java.util.regex.Matcher meter = java.util.regex.Pattern.compile("\\blob_[a-z_]+").matcher(String.join("\n", queries));
        int named = 0;
        while (meter.find()) {
            named++;
            String name = meter.group().replaceAll("_(total|bucket|sum|count)$", "");
            assertThat(metrics).as("README documents %s", meter.group()).containsPattern("`" + name + "(_total)?[`{]");
        }
        assertThat(named).isGreaterThan(20);
        for (String config : List.of("deploy/prometheus.yml", "deploy/prometheus-scale-out.yml", "deploy/prometheus-local.yml")) {
            JsonNode rules = YAML.readTree(ROOT.resolve(config).toFile()).path("rule_files");
            assertThat(rules.size()).as(config + " rule_files").isEqualTo(1);
            assertThat(rules.get(0).asText()).as(config).endsWith("alerts.yml");
        }
    }

    @Test
    void everyFileTheImageCopiesFromTheRepositoryIsThere() throws Exception {
        for (String line : Files.readAllLines(ROOT.resolve("Dockerfile"))) {
            String[] words = line.trim().split("\\s+");
            if (words[0].equals("COPY") && !line.contains("--from=") && !words[1].equals(".")) {
                assertThat(ROOT.resolve(words[1])).as(line).exists();
            }
        }
    }
}
