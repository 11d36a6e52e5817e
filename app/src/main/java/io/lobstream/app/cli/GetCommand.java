package io.lobstream.app.cli;

import io.lobstream.ingest.http.StreamedResponse;
import io.lobstream.schema.LobStreamConfig;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.Callable;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** {@code ./lobstream get ID [-o FILE]}. */
@Command(name = "get", mixinStandardHelpOptions = true, description = "Read the current value of a LOB from a node (any node: it forwards to the owner).")
final class GetCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "ID")
    String id;

    @Option(names = {"-o", "--output"}, paramLabel = "FILE", description = "Write to FILE instead of standard output (- for standard output, as put reads - from standard input).")
    Path output;

    @Option(names = "--range", paramLabel = "A-B", description = "Only bytes A..B (inclusive), as an HTTP Range: A-B, A- or -N.")
    String range;

    @Option(names = "--node", paramLabel = "URL", converter = NodeUrl.class, description = "A node's HTTP API (" + NodeUrl.DEFAULT_DOC + ").")
    String node;

    /** For the node's lob.http.* keys, and so that one --command-config file serves every command. */
    @CommandLine.Mixin
    ConfigOptions config;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    /** The links to a descriptor of this process the shell opened: /dev/stdout and the like, /dev/fd/N, /proc/self/fd/N. */
    private static final Pattern DESCRIPTOR_LINK = Pattern.compile(
            "/dev/fd/(\\d+)|/proc/(?:self|thread-self|" + ProcessHandle.current().pid() + ")/fd/(\\d+)");
    private static final Pattern RANGE = Pattern.compile("\\d+-\\d*|-\\d+");

    @Override
    public Integer call() throws Exception {
        if (id.isEmpty()) { // as the write commands: a node would answer 400 for a path with no id
            throw new CommandLine.ParameterException(spec.commandLine(), "the LOB id must not be empty");
        }
        if (range != null && !RANGE.matcher(range).matches()) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--range must be A-B, A- or -N (one range): " + range);
        }
        if (range != null && !range.startsWith("-") && !range.endsWith("-")) {
            String[] ab = range.split("-");
            if (new java.math.BigInteger(ab[0]).compareTo(new java.math.BigInteger(ab[1])) > 0) {
                throw new CommandLine.ParameterException(spec.commandLine(), "--range " + range + ": A must not be past B");
            }
        }
        checkOutput();
        new LobStreamConfig(config.map()); // a misspelt -c key is a usage error here too
        String nodeUrl = NodeUrl.resolve(node, config, spec.commandLine());
        PrintWriter err = spec.commandLine().getErr(); // picocli's: whoever runs the command (a test too) reads it there
        try (StreamedResponse r = new NodeHttp(nodeUrl).waitingOutRebalances().get(id, range)) {
            InputStream in = r.body();
            // a suffix of an empty value is the whole of it, which RFC 9110 answers with 200: nothing was ignored
            boolean suffixOfEmpty = range != null && range.startsWith("-") && r.contentLength().orElse(-1) == 0;
            if (range != null && r.statusCode() == 200 && !suffixOfEmpty) {
                err.println(id + ": the node ignored --range " + range + " and sent the whole value");
                return 2;
            }
            switch (r.statusCode()) {
                case 200, 206 -> {
                    long length = r.contentLength().orElse(-1);
                    // not System.out: a PrintStream keeps write errors to itself (a full disk, a closed pipe)
                    // (not a file named "-"); /dev/stdout and /dev/stderr as the descriptors themselves: opened again, they
                    // would have an offset of their own, which the shell's >> or this status line would not share
                    int fd = output == null || output.toString().equals("-") ? 1 : descriptor(output);
                    long n = fd == 1 ? transfer(in, new FileOutputStream(FileDescriptor.out), length)
                            : fd == 2 ? transfer(in, new FileOutputStream(FileDescriptor.err), length)
                            : download(in, length);
                    err.printf("%s: %d bytes, ETag %s, %s%n", id, n, r.header("ETag").orElse("?"),
                            r.header("Content-Type").orElse("no content type"));
                    return 0;
                }
                case 404 -> {
                    err.println(id + ": no such LOB");
                    return 1;
                }
                case 416 -> {
                    err.println(id + ": range " + range + " not satisfiable (" + r.header("Content-Range").orElse("") + ")");
                    return 2;
                }
                default -> {
                    // 503 while partitions are assigned, 502/504 when the owner does not answer: try again later
                    err.println(id + ": HTTP " + r.statusCode() + " " + new String(in.readAllBytes()).strip());
                    return 1;
                }
            }
        }
    }

    /**
     * A FILE no download can land in, said before the node is asked, as a bad --range is: a directory, or a directory
     * that is not there. Found after the request, it was a failure (exit 1) for a bad argument.
     */
    private void checkOutput() {
        if (output == null || output.toString().equals("-")) {
            return;
        }
        if (Files.isDirectory(output)) {
            throw new CommandLine.ParameterException(spec.commandLine(), "-o " + output + " is a directory: name a file in it");
        }
        Path parent = output.toAbsolutePath().getParent();
        if (parent != null && Files.notExists(parent)) { // (notExists: a directory this user may not search is the download's to say)
            throw new CommandLine.ParameterException(spec.commandLine(), "-o " + output + ": no directory " + parent);
        }
        if (parent != null && Files.exists(parent) && !Files.isDirectory(parent)) {
            throw new CommandLine.ParameterException(spec.commandLine(), "-o " + output + ": " + parent + " is not a directory");
        }
        int fd = descriptor(output);
        String problem = fd == 0 || fd > 2 ? notWritable(fd) : null;
        if (problem != null) { // a typo'd N could name one of the JVM's own (its modules, this jar): said before the node is asked
            throw new CommandLine.ParameterException(spec.commandLine(), "-o " + output + ": " + problem);
        }
    }

    /** Why descriptor {@code fd} cannot take the value (not open, or open to read only), or null; null too without /proc. */
    private static String notWritable(int fd) {
        Path info = Path.of("/proc/self/fdinfo", Integer.toString(fd));
        if (!Files.isDirectory(info.getParent())) {
            return null;
        }
        try {
            for (String line : Files.readAllLines(info)) {
                if (line.startsWith("flags:")) {
                    int accessMode = Integer.parseInt(line.substring("flags:".length()).strip(), 8) & 3; // O_RDONLY 0
                    return accessMode == 0 ? "descriptor " + fd + " is open to read only (redirect it to write: " + fd + ">>FILE)" : null;
                }
            }
            return null;
        } catch (IOException | NumberFormatException e) {
            return "descriptor " + fd + " is not open (redirect it: " + fd + ">>FILE)";
        }
    }

    /**
     * Into FILE whole or not at all ({@link ReplacingFile}): a download that fails leaves no file that looks
     * complete, and the old one as it was. FILE a symbolic link to a regular file, or to a file not
     * there yet: the same beside the file it names, so the link stays a link. Straight into FILE when
     * it is not a regular file (a device, a pipe). A link to a descriptor the shell opened ({@code /dev/fd/3}) is
     * appended to, never truncated: the shell's {@code >} or {@code >>} decided, and the open here has an offset of its
     * own ({@code /dev/stdout} and {@code /dev/stderr} are the descriptors themselves, before this).
     */
    private long download(InputStream in, long length) throws IOException {
        if (descriptor(output) >= 0) {
            try (OutputStream out = Files.newOutputStream(output, StandardOpenOption.WRITE, StandardOpenOption.APPEND)) {
                return transfer(in, out, length);
            }
        }
        Path target = Files.isSymbolicLink(output) ? linkedFile(output) : output;
        if (Files.exists(target, LinkOption.NOFOLLOW_LINKS) && !Files.isRegularFile(target, LinkOption.NOFOLLOW_LINKS)) {
            try (OutputStream out = Files.newOutputStream(target)) {
                return transfer(in, out, length);
            }
        }
        try (ReplacingFile file = ReplacingFile.create(target)) {
            long n = transfer(in, file.stream(), length);
            file.commit();
            return n;
        }
    }

    /** The descriptor {@code output} is a link to in this process ({@link #DESCRIPTOR_LINK}), or -1. */
    static int descriptor(Path output) {
        String path = output.toAbsolutePath().normalize().toString();
        switch (path) {
            case "/dev/stdin" -> {
                return 0;
            }
            case "/dev/stdout" -> {
                return 1;
            }
            case "/dev/stderr" -> {
                return 2;
            }
            default -> { }
        }
        Matcher m = DESCRIPTOR_LINK.matcher(path);
        if (!m.matches()) {
            return -1;
        }
        String fd = m.group(1) != null ? m.group(1) : m.group(2);
        return fd.length() > 9 ? -1 : Integer.parseInt(fd);
    }

    /** The file {@code link} names, if a regular file or none yet; else {@code link} itself, written through. */
    private static Path linkedFile(Path link) {
        try {
            if (Files.isRegularFile(link)) {
                return link.toRealPath();
            }
            if (!Files.exists(link)) { // a link to nothing: its file is made, so a failed download must not leave it cut short
                Path named = link.resolveSibling(Files.readSymbolicLink(link));
                return Files.isSymbolicLink(named) ? link : named;
            }
        } catch (IOException unresolvable) {
            // written through, as before links were followed
        }
        return link;
    }

    /**
     * Copies the body and checks it came whole. A node whose read fails mid-value (a corrupt page, the
     * owner gone) can only close the connection, and JDK 17's HttpURLConnection takes a body cut short
     * of its Content-Length for one that ended.
     */
    static long transfer(InputStream in, OutputStream out, long length) throws IOException {
        long n = in.transferTo(out);
        if (length >= 0 && n != length) {
            throw new IOException("the node's answer ended after " + n + " of " + length + " bytes (see the node's log)");
        }
        return n;
    }
}
