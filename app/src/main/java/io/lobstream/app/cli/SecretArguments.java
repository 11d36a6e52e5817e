package io.lobstream.app.cli;

import picocli.CommandLine.ParameterException;
import picocli.CommandLine.UnmatchedArgumentException;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * picocli's errors quote the arguments they could not take. A {@code sasl.jaas.config} left unquoted splits into words,
 * and its {@code password="p";} would reach stderr (a terminal, journald, a CI log) as an unmatched argument: in an
 * {@code @FILE}, whose reader takes {@code "} as a quote, as {@code password=} and then {@code p} apart. The value of
 * every key that names a secret is shown as {@code ***}, and so is the argument after one that ends in {@code =}.
 */
final class SecretArguments {
    private static final String SECRET_KEY = "[\\w.-]*(?:password|passphrase|secret|token|credential|jaas|user\\.info|private\\.key"
            + "|keystore\\.key|api\\.?key)[\\w.-]*\\s*=";
    /** One argument: a secret's key, and its value (empty when the value came apart from it). */
    private static final Pattern ARGUMENT = Pattern.compile("(?i)(" + SECRET_KEY + ")(.*)", Pattern.DOTALL);
    /** In a message that quotes arguments: a secret's key, and its value to the end of its argument or the next one's. */
    private static final Pattern IN_MESSAGE = Pattern.compile("(?i)(" + SECRET_KEY + ")(', ')?[^']+");

    static final String MASK = "***";

    private SecretArguments() {
    }

    /** {@code ex}, or the same error with every secret masked; an unmatched argument's keeps picocli's suggestions. */
    static ParameterException masked(ParameterException ex) {
        if (ex instanceof UnmatchedArgumentException unmatched) {
            List<String> given = unmatched.getUnmatched();
            List<String> shown = masked(given);
            return shown.equals(given) ? ex : new UnmatchedArgumentException(ex.getCommandLine(), shown);
        }
        String said = String.valueOf(ex.getMessage());
        String shown = IN_MESSAGE.matcher(said).replaceAll("$1$2" + MASK);
        return shown.equals(said) ? ex : new ParameterException(ex.getCommandLine(), shown);
    }

    static List<String> masked(List<String> arguments) {
        List<String> shown = new ArrayList<>(arguments.size());
        boolean valueNext = false;
        for (String a : arguments) {
            Matcher m = ARGUMENT.matcher(a);
            if (valueNext) {
                shown.add(MASK);
                valueNext = false;
            } else if (m.matches()) {
                valueNext = m.group(2).isEmpty();
                shown.add(valueNext ? a : m.group(1) + MASK);
            } else {
                shown.add(a);
            }
        }
        return shown;
    }
}
