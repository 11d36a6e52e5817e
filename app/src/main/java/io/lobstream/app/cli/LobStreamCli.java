package io.lobstream.app.cli;

import io.lobstream.app.bench.BenchCommand;
import io.lobstream.app.bench.SizeRange;
import io.lobstream.app.logging.ThreadDeaths;
import io.lobstream.store.DiskErrors;
import io.lobstream.store.config.ConfigException;
import org.slf4j.bridge.SLF4JBridgeHandler;
import picocli.CommandLine;
import picocli.CommandLine.Command;

import java.nio.file.FileSystemException;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/** {@code ./lobstream <command>}: the entry point. */
@Command(name = "lobstream", mixinStandardHelpOptions = true, version = "LobStream 0.1.0",
        description = "A store for large objects whose writes arrive as Kafka events; purge is a scalable consumer group.",
        subcommands = {DemoCommand.class, NodeCommand.class, PurgeCommand.class, WriteCommands.Put.class, GetCommand.class,
                WriteCommands.Write.class, WriteCommands.Append.class, WriteCommands.Truncate.class, WriteCommands.Delete.class,
                StatusCommand.class, FsckCommand.class, ReplayCommand.class, RedriveCommand.class, ConfigCommand.class, ClusterCommand.class, BenchCommand.class,
                ClassDataTraining.class})
public final class LobStreamCli implements Runnable {
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        throw new CommandLine.ParameterException(spec.commandLine(), "a command is required");
    }

    public static void main(String[] args) {
        // the JDK's own components (its HTTP server and client) log through java.util.logging: through logback too, with
        // its levels (logback.xml propagates them) and its format, on stderr
        SLF4JBridgeHandler.removeHandlersForRootLogger();
        SLF4JBridgeHandler.install();
        Thread.setDefaultUncaughtExceptionHandler(new ThreadDeaths());
        int code = execute(commandLine(), args);
        COMMAND_ENDED.countDown(); // what it had to say is said: a shutdown hook waiting for that lets the JVM go
        System.exit(code);
    }

    /** Runs the command line as {@link #main} does: an {@link Error} too ends in one line on stderr, and with {@code --json} one JSON object. */
    static int execute(CommandLine cli, String... args) {
        try {
            return cli.execute(args);
        } catch (Throwable e) {
            // an Error, which picocli does not handle (a native library that will not load, out of memory): one line too,
            // and an exit, not a JVM that non-daemon threads (an embedded broker's) keep alive
            cli.getErr().println("lobstream: " + e);
            if (io.lobstream.app.logging.DebugSwitch.on()) {
                e.printStackTrace(cli.getErr());
            }
            cli.getErr().flush();
            // with --json, the one JSON object a script reads, as for an Exception (the command's options are parsed)
            CommandLine.ParseResult parsed = cli.getParseResult();
            while (parsed != null && parsed.hasSubcommand()) {
                parsed = parsed.subcommand();
            }
            if (parsed != null) {
                CommandLine failed = parsed.commandSpec().commandLine();
                jsonError(failed.getOut(), failed, e.toString(), CommandLine.ExitCode.SOFTWARE);
            }
            return CommandLine.ExitCode.SOFTWARE;
        }
    }

    /** Counted down by {@link #main} once the command has returned and its error, if any, is printed. */
    private static final CountDownLatch COMMAND_ENDED = new CountDownLatch(1);

    /** Whether the command run by {@link #main} has ended (a shutdown hook running now was not started by a signal). */
    static boolean commandEnded() {
        return COMMAND_ENDED.getCount() == 0;
    }

    /**
     * Waits, at most {@code timeout}, for the command run by {@link #main} to end and say what it has to say: for a shutdown
     * hook that stopped it (the JVM halts when the hooks end, and the command's last line would be lost).
     */
    static void awaitCommandEnd(Duration timeout) throws InterruptedException {
        COMMAND_ENDED.await(timeout.toMillis(), TimeUnit.MILLISECONDS);
    }

    /** The command line with its converters and error handling: what {@link #main} runs, and tests too. */
    public static CommandLine commandLine() {
        CommandLine cli = new CommandLine(new LobStreamCli());
        CommandLine.IParameterExceptionHandler usage = cli.getParameterExceptionHandler();
        return cli.setParameterExceptionHandler((ex, args) -> usage.handleParseException(SecretArguments.masked(ex), args))
                .registerConverter(java.time.Duration.class, Durations::converted)
                .registerConverter(SizeRange.class, SizeRange::parse)
                .setCaseInsensitiveEnumValuesAllowed(true)
                .setExecutionExceptionHandler((thrown, cmd, parsed) -> {
                    // a write command's own failure says what it sent (a stop, or a chunk that failed before it): said
                    if (io.lobstream.app.JvmShutdown.underWay() && !io.lobstream.app.logging.DebugSwitch.on()
                            && !(cmd.getCommandSpec().userObject() instanceof WriteCommands.Base)) {
                        // a Ctrl-C or SIGTERM: what failed was being stopped (a node's registry, killed by its hook, "exited
                        // with 143"), not broken; the JVM exits with the signal's status whatever is returned here
                        cmd.getErr().println(cmd.getCommandSpec().qualifiedName() + ": stopped (Ctrl-C or SIGTERM)");
                        return CommandLine.ExitCode.SOFTWARE;
                    }
                    // a clear one-line error; the stack trace only with LOBSTREAM_DEBUG on (DebugSwitch). A failed write's future says
                    // "ExecutionException: java.io.IOException: put x: stopped after ...": its cause says it plainly
                    Throwable e = thrown instanceof java.util.concurrent.ExecutionException && thrown.getCause() != null
                            ? thrown.getCause() : thrown;
                    Throwable root = e;
                    while (root.getCause() != null && root.getCause() != root) {
                        root = root.getCause();
                    }
                    // some say nothing but their type (a ConnectException has no message)
                    String said = e instanceof FileSystemException fs ? DiskErrors.fileProblem(fs)
                            : e.getMessage() != null ? e.getMessage() : e.getClass().getSimpleName();
                    // a file problem a wrapper passed on (node's "failed to start: /x/y") names only its path: say what it is
                    String why = java.util.stream.Stream.iterate(e.getCause(), java.util.Objects::nonNull, Throwable::getCause)
                            .filter(t -> t instanceof FileSystemException fs
                                    && !(fs.getReason() != null && said.contains(String.valueOf(fs.getMessage())))).findFirst()
                            .map(t -> DiskErrors.fileProblem((FileSystemException) t))
                            .orElse(root == e || said.contains(String.valueOf(root.getMessage())) ? "" : root.toString());
                    String line = said + (why.isEmpty() || said.contains(why) ? "" : " (" + why + ")");
                    cmd.getErr().println(cmd.getCommandSpec().qualifiedName() + ": " + line);
                    if (io.lobstream.app.logging.DebugSwitch.on()) {
                        e.printStackTrace(cmd.getErr());
                    }
                    // 2 for a bad argument, as picocli gives: a configuration value (-c) that a key does not take counts as one
                    boolean badConfig = java.util.stream.Stream.<Throwable>iterate(e, java.util.Objects::nonNull, Throwable::getCause)
                            .anyMatch(t -> t instanceof ConfigException // node wraps what stops its start
                                    // Kafka's own: a lob.streams.* value, which Kafka Streams checks as it starts; but not "No
                                    // resolvable bootstrap urls", a DNS name not there yet (a container started before the broker's)
                                    || t instanceof org.apache.kafka.common.config.ConfigException
                                    && !String.valueOf(t.getMessage()).contains("resolvable"));
                    if (badConfig) {
                        return CommandLine.ExitCode.USAGE;
                    }
                    jsonError(cmd.getOut(), cmd, line, CommandLine.ExitCode.SOFTWARE);
                    return CommandLine.ExitCode.SOFTWARE;
                });
    }

    /**
     * With {@code --json}, a command that failed at run time (exit 1) still ends with one JSON object on the last line of
     * stdout, as one that ran does (DESIGN: scripts read it): {@code {"error": ..., "exit_code": ...}}, where the summary
     * would have been. A bad argument (exit 2) prints usage on stderr alone.
     */
    static void jsonError(java.io.PrintWriter out, CommandLine cmd, String error, int exit) {
        CommandLine.Model.OptionSpec json = cmd.getCommandSpec().findOption("--json");
        if (json != null && Boolean.TRUE.equals(json.getValue())) {
            com.fasterxml.jackson.databind.node.ObjectNode o = com.fasterxml.jackson.databind.node.JsonNodeFactory.instance.objectNode();
            o.put("error", error);
            o.put("exit_code", exit);
            out.println(o);
            out.flush();
        }
    }
}
