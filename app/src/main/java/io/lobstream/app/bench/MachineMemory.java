package io.lobstream.app.bench;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Free memory of the whole machine, from Linux's {@code /proc/meminfo}. Why the benchmarks care:
 * on a virtual machine that gives free memory back to its host (virtio-balloon free page
 * reporting, as on the machines these figures come from), the first write into each page of
 * memory costs a fault in the host, and a broker appending to its log takes a new page for every
 * 4 KiB until the page cache has used up the free memory; from then on it reuses pages. Measured
 * on a 2-core VM with 23 GiB: a plain producer acknowledged 280 MB/s while the log was taking
 * free memory, then 590–690 MB/s. A phase measured in the one regime is not comparable with one
 * measured in the other.
 */
final class MachineMemory {
    private static final Path MEMINFO = Path.of("/proc/meminfo");

    private MachineMemory() {
    }

    /** {@code MemFree} in bytes, or 0 when unknown (not Linux). */
    static long freeBytes() {
        try {
            for (String line : Files.readAllLines(MEMINFO)) {
                if (line.startsWith("MemFree:")) {
                    return Long.parseLong(line.replaceAll("\\D", "")) * 1024; // "MemFree:  24578356 kB"
                }
            }
        } catch (Exception notLinux) {
            // as documented: unknown
        }
        return 0;
    }
}
