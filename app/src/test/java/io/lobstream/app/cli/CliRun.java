package io.lobstream.app.cli;

import picocli.CommandLine;

import java.io.PrintWriter;
import java.io.StringWriter;

/** Runs {@code ./lobstream} in this JVM, as {@link LobStreamCli#main} does, with what it prints to stderr kept. */
public final class CliRun {
    private final StringWriter err = new StringWriter();

    /** The exit code of {@code lobstream args...}. */
    public int run(String... args) {
        CommandLine cli = LobStreamCli.commandLine();
        cli.setErr(new PrintWriter(err, true));
        return cli.execute(args);
    }

    /** Everything the runs so far printed to picocli's stderr (usage, errors); not what loggers print. */
    public String err() {
        return err.toString();
    }
}
