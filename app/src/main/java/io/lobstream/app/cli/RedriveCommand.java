package io.lobstream.app.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.lobstream.ingest.replay.DeadLetterRedrive;
import io.lobstream.schema.LobStreamConfig;
import io.lobstream.store.index.Rejection;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.util.LinkedHashSet;
import java.util.Set;
import java.util.concurrent.Callable;

/** {@code ./lobstream redrive [--kind K]... [--partition P]... [--from-offset N] [--dry-run] [--json]}. */
@Command(name = "redrive", mixinStandardHelpOptions = true,
        description = {"Send the dead letters of lob.commands back to it, once what refused them is fixed (a registry restored, "
                + "lob.value.max.bytes raised, a writer upgraded): each with its original key, bytes and headers, in order. The "
                + "writer judges them again; one refused again is dead-lettered again, and one sent back twice is applied once "
                + "(its commandId, within lob.command.dedupe.window.ms). A command sent back lands after every command sent "
                + "since (a PUT replaces a newer value): choose with --kind and --from-offset what still makes sense.",
                "Exit status: 0 once every letter asked for was sent and acknowledged; 1 if one was not sent, its command gone "
                        + "from lob.commands (command_gone; a dry run exits 0 and counts them), or on a failure; 2 for a bad "
                        + "argument."})
final class RedriveCommand implements Callable<Integer> {
    @Mixin
    ClusterOptions cluster;

    @Option(names = "--kind", paramLabel = "KIND", description = "Only letters of this kind (lob.dlq.kind: undecodable, too-large, "
            + "not-found, ...); repeatable. Default: every kind but id-conflict (a write its sender was told failed, and has "
            + "likely sent again under an id of its own), and but the invalid letters of commands sent to another partition "
            + "than their key's (a producer's own partitioner), which --kind invalid alone sends back: they would be "
            + "applied after their LOB's newer commands.")
    Set<String> kinds = new LinkedHashSet<>();

    @Option(names = "--partition", paramLabel = "P", description = "Only this partition of the dead-letter topic (a command's "
            + "letter is on its own partition); repeatable. Default: all.")
    Set<Integer> partitions = new LinkedHashSet<>();

    @Option(names = "--from-offset", paramLabel = "N", defaultValue = "0",
            description = "Start at this offset of each partition read (default: the beginning).")
    long fromOffset;

    @Option(names = "--dry-run", description = "Count what would be sent, send nothing.")
    boolean dryRun;

    @Option(names = "--json", description = "End with one JSON object on the last line of stdout.")
    boolean json;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() throws InterruptedException {
        if (fromOffset < 0 || partitions.stream().anyMatch(p -> p < 0)) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--from-offset and --partition must be >= 0");
        }
        for (String kind : kinds) {
            if (!Rejection.KINDS.contains(kind)) {
                throw new CommandLine.ParameterException(spec.commandLine(), "--kind " + kind + ": not a kind of dead letter; one of "
                        + String.join(", ", Rejection.KINDS));
            }
        }
        LobStreamConfig config = cluster.streamConfig(null);
        // lob.commands, which letters go back to, there: a producer's first send to a topic deleted would have a broker that
        // creates topics on first use make it with its own defaults, which the nodes then refuse (co-partitioning)
        BrokerCheck.requireAnswer(config, BrokerCheck.WAIT, config.topics().commands());
        DeadLetterRedrive.Result r;
        try {
            r = DeadLetterRedrive.run(config, partitions, fromOffset, k -> kinds.isEmpty() ? !Rejection.ID_CONFLICT.equals(k) : kinds.contains(k),
                    kinds.contains(Rejection.INVALID), dryRun);
        } catch (DeadLetterRedrive.NoSuchPartitionException noSuchPartition) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--" + noSuchPartition.getMessage());
        }
        spec.commandLine().getErr().printf("redrive: %d dead letters read, %d %s to %s, %d left (another topic's, or another kind)%s%s%s%n",
                r.read(), r.redriven(), dryRun ? "would be sent back" : "sent back", config.topics().commands(), r.left(),
                r.misrouted() == 0 ? "" : ", " + r.misrouted() + " of them sent by their producer to another partition than their "
                        + "key's: send those commands again from the producer, or give --kind invalid (and the same --from-offset)",
                r.commandGone() == 0 ? "" : ", " + r.commandGone() + " not sent: their command is not where they say (see the log)",
                dryRun ? "" : "; a run that sends none of these again starts, per partition, at " + r.nextOffsets()
                        + " (--partition P --from-offset N)");
        if (json) {
            ObjectNode out = new ObjectMapper().createObjectNode().put("read", r.read()).put("redriven", r.redriven())
                    .put("left", r.left()).put("misrouted", r.misrouted()).put("command_gone", r.commandGone()).put("dry_run", dryRun);
            if (!dryRun) {
                ObjectNode next = out.putObject("next_offsets");
                r.nextOffsets().forEach((partition, offset) -> next.put(Integer.toString(partition), offset));
            }
            System.out.println(out);
        }
        return dryRun || r.commandGone() == 0 ? 0 : 1; // a script that redrives and then trusts the exit must see the gone
    }
}
