package io.lobstream.app.cli;

import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.InputStream;
import java.io.OutputStream;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;

/** {@code ./lobstream get ID [-o FILE]}. */
@Command(name = "get", mixinStandardHelpOptions = true, description = "Read the current value of a LOB from a node (any node: it forwards to the owner).")
final class GetCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "ID")
    String id;

    @Option(names = {"-o", "--output"}, paramLabel = "FILE", description = "Write to FILE instead of standard output.")
    Path output;

    @Option(names = "--range", paramLabel = "A-B", description = "Only bytes A..B (inclusive), as an HTTP Range: A-B, A- or -N.")
    String range;

    @Option(names = "--node", paramLabel = "URL", defaultValue = "http://127.0.0.1:8080", description = "A node's HTTP API (default: ${DEFAULT-VALUE}).")
    String node;

    @Override
    public Integer call() throws Exception {
        HttpResponse<InputStream> r = new NodeHttp(node).get(id, range);
        try (InputStream in = r.body()) {
            switch (r.statusCode()) {
                case 200, 206 -> {
                    try (OutputStream out = output == null ? System.out : Files.newOutputStream(output)) {
                        long n = in.transferTo(out);
                        System.err.printf("%s: %d bytes, version %s%n", id, n,
                                r.headers().firstValue("ETag").orElse("?").replace("\"", ""));
                    }
                    return 0;
                }
                case 404 -> {
                    System.err.println(id + ": no such LOB");
                    return 1;
                }
                case 416 -> {
                    System.err.println(id + ": range " + range + " not satisfiable (" + r.headers().firstValue("Content-Range").orElse("") + ")");
                    return 2;
                }
                default -> {
                    System.err.println(id + ": HTTP " + r.statusCode() + " " + new String(in.readAllBytes()));
                    return 3;
                }
            }
        }
    }
}
