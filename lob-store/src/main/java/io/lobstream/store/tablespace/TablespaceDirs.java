package io.lobstream.store.tablespace;

import java.io.IOException;
import java.io.Reader;
import java.io.Writer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Where a tablespace lives in a data directory, and its small descriptor file.
 *
 * <pre>
 * DATA_DIR/tablespaces/p-0/lob.pages          the page file
 * DATA_DIR/tablespaces/p-0/index/             the RocksDB index
 * DATA_DIR/tablespaces/p-0/tablespace.properties   format and page size (read by purge workers,
 *                                                   which never open the index)
 * </pre>
 */
public final class TablespaceDirs {
    public static final String PAGES = "lob.pages";
    public static final String INDEX = "index";
    public static final String DESCRIPTOR = "tablespace.properties";
    private static final Pattern PARTITION = Pattern.compile("p-(\\d+)");

    private TablespaceDirs() {
    }

    public static Path partitionDir(Path dataDir, int partition) {
        return dataDir.resolve("tablespaces").resolve("p-" + partition);
    }

    /** Partitions that have a tablespace under {@code dataDir}, sorted. */
    public static List<Integer> partitions(Path dataDir) throws IOException {
        Path root = dataDir.resolve("tablespaces");
        List<Integer> out = new ArrayList<>();
        if (!Files.isDirectory(root)) {
            return out;
        }
        try (var s = Files.list(root)) {
            s.forEach(p -> {
                Matcher m = PARTITION.matcher(p.getFileName().toString());
                if (m.matches() && Files.exists(p.resolve(DESCRIPTOR))) {
                    out.add(Integer.parseInt(m.group(1)));
                }
            });
        }
        out.sort(null);
        return out;
    }

    /** Reads the page size a tablespace was created with. */
    public static int readPageSize(Path tablespaceDir) throws IOException {
        Path f = tablespaceDir.resolve(DESCRIPTOR);
        if (!Files.exists(f)) {
            throw new java.nio.file.NoSuchFileException(f.toString(), null, "no tablespace here");
        }
        Properties p = new Properties();
        try (Reader r = Files.newBufferedReader(f)) {
            p.load(r);
        }
        return Integer.parseInt(p.getProperty("page.size"));
    }

    /** Writes the descriptor of a new tablespace, or returns the page size of an existing one. */
    public static int createOrReadPageSize(Path tablespaceDir, int pageSize) throws IOException {
        Path f = tablespaceDir.resolve(DESCRIPTOR);
        if (Files.exists(f)) {
            return readPageSize(tablespaceDir);
        }
        Files.createDirectories(tablespaceDir);
        Properties p = new Properties();
        p.setProperty("format.version", "1");
        p.setProperty("page.size", Integer.toString(pageSize));
        Path tmp = tablespaceDir.resolve(DESCRIPTOR + ".tmp");
        try (Writer w = Files.newBufferedWriter(tmp)) {
            p.store(w, "LobStream tablespace");
        }
        Files.move(tmp, f, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
        return pageSize;
    }
}
