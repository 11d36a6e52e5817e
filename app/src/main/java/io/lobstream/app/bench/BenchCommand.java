package io.lobstream.app.bench;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/** {@code ./lobstream bench <what>}: benchmarks are commands that print figures, never tests. */
@Command(name = "bench", mixinStandardHelpOptions = true,
        description = "Benchmarks: print a table on stderr, optionally CSV and a PNG chart, and with --json one JSON object on the last line of stdout.",
        subcommands = {EngineBench.class, PipelineBench.class, PurgeBench.class, HistoryBench.class})
public final class BenchCommand implements Runnable {
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        throw new CommandLine.ParameterException(spec.commandLine(), "a benchmark is required"); // exit 2, as lobstream alone
    }
}
