package io.lobstream.app.bench;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Supplier;

/**
 * CPU time of the whole machine (every process, other users' and the kernel's included) from
 * Linux's {@code /proc/stat}: ticks busy and ticks in all since boot; differences of two samples
 * cover a window. The benchmarks run phases that share two cores with a broker, a node and the
 * load generator; their throughput moves with the machine from one run to the next, while CPU
 * per MB says what each phase costs, and how busy the machine was tells a CPU-bound window from
 * a latency-bound one. Off Linux both counts are 0, and the figures derived from them absent.
 */
record MachineCpu(long busyTicks, long allTicks) {
    private static final Path PROC_STAT = Path.of("/proc/stat");
    /** Linux's USER_HZ, the unit of /proc/stat: 100 on every architecture the JDK runs on. */
    private static final double MS_PER_TICK = 10;

    static MachineCpu now() {
        long busy = 0;
        long all = 0;
        try {
            String[] f = Files.readAllLines(PROC_STAT).get(0).trim().split("\\s+"); // cpu user nice system idle iowait irq softirq steal
            for (int i = 1; i < f.length && i <= 8; i++) {
                long v = Long.parseLong(f[i]);
                all += v;
                if (i != 4 && i != 5 && i != 8) { // idle, iowait; steal is the hypervisor running others, not us
                    busy += v;
                }
            }
        } catch (Exception notLinux) {
            return new MachineCpu(0, 0);
        }
        return new MachineCpu(busy, all);
    }

    MachineCpu minus(MachineCpu earlier) {
        return new MachineCpu(busyTicks - earlier.busyTicks, allTicks - earlier.allTicks);
    }

    /** Share of the machine's CPU time that was busy, 0..1. */
    double busyFraction() {
        return allTicks == 0 ? 0 : (double) busyTicks / allTicks;
    }

    /** CPU milliseconds (all cores) per MB moved in the window; -1 when unknown. */
    double msPerMb(double mb) {
        return allTicks == 0 || mb <= 0 ? -1 : busyTicks * MS_PER_TICK / mb;
    }

    /** CPU time this JVM has used (all its threads), or zero when the platform does not say. */
    static Duration thisProcess() {
        return ProcessHandle.current().info().totalCpuDuration().orElse(Duration.ZERO);
    }

    /**
     * A phase's window of full load, its seconds 2 to {@code last}: sampled at the end of its
     * first second and of its last (a drain after the load, lighter, is left out). Besides the
     * machine, it samples the CPU time of the given processes (broker, node, load generator), so
     * that a run whose cost per MB moved says where.
     */
    static final class Window {
        private final long last;
        private final Map<String, Supplier<Duration>> processes;
        private MachineCpu from;
        private final Map<String, Duration> processesFrom = new LinkedHashMap<>();
        private double mbFrom;
        private MachineCpu cpu;
        private final Map<String, Duration> processesCpu = new LinkedHashMap<>();
        private double mb;

        /** @param processes by name, in the order to report them */
        Window(long last, Map<String, Supplier<Duration>> processes) {
            this.last = last;
            this.processes = processes;
        }

        /** Called at the end of each second of the phase, with the MB moved so far. */
        void endOf(long second, double mbSoFar) {
            if (second == 1) {
                from = now();
                processes.forEach((name, cpuTime) -> processesFrom.put(name, cpuTime.get()));
                mbFrom = mbSoFar;
            } else if (second == last && from != null) {
                cpu = now().minus(from);
                processes.forEach((name, cpuTime) -> processesCpu.put(name, cpuTime.get().minus(processesFrom.get(name))));
                mb = mbSoFar - mbFrom;
            }
        }

        /** Each process's CPU milliseconds per MB in the window; empty until measured. */
        Map<String, Double> processMsPerMb() {
            Map<String, Double> perMb = new LinkedHashMap<>();
            if (measured() && mb > 0) {
                // a process whose CPU time the platform does not give reads zero twice: left out
                processesCpu.forEach((name, d) -> {
                    if (!processesFrom.get(name).isZero() || !d.isZero()) {
                        perMb.put(name, d.toNanos() / 1e6 / mb);
                    }
                });
            }
            return perMb;
        }

        boolean measured() {
            return cpu != null && cpu.allTicks() > 0;
        }

        double msPerMb() {
            return measured() ? cpu.msPerMb(mb) : -1;
        }

        double busyFraction() {
            return measured() ? cpu.busyFraction() : -1;
        }
    }
}
