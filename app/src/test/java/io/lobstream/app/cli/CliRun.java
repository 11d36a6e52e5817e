package io.lobstream.app.cli;

import picocli.CommandLine;

import java.io.PrintWriter;
import java.io.StringWriter;

/** Runs {@code ./lobstream} in this JVM, as {@link LobStreamCli#main} does, with what it prints to stderr kept. */
public final class CliRun {
    private final StringWriter err = new StringWriter();
    private final StringWriter out = new StringWriter();

    /** The exit code of {@code lobstream args...}; {@link #out()} and {@link #err()} then hold what this run printed. */
    public int run(String... args) {
        // each run's own text: kept across runs, a message checked after the second run could be the first run's
        err.getBuffer().setLength(0);
        out.getBuffer().setLength(0);
        CommandLine cli = LobStreamCli.commandLine();
        cli.setErr(new PrintWriter(err, true));
        cli.setOut(new PrintWriter(out, true));
        return LobStreamCli.execute(cli, args);
    }

    /** What the last run printed to picocli's stdout (help, the commands that print through it). */
    public String out() {
        return out.toString();
    }

    /** Everything the last run printed to picocli's stderr (usage, errors); not what loggers print. */
    public String err() {
        return err.toString();
    }
}
