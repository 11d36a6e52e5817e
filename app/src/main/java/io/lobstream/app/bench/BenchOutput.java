package io.lobstream.app.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.jfree.chart.ChartFactory;
import org.jfree.chart.ChartUtils;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.plot.PlotOrientation;
import org.jfree.data.category.DefaultCategoryDataset;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;

import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * What every benchmark prints: a human table on stderr as it goes, then optionally a CSV of the
 * rows, a PNG chart, and (with --json) one JSON object as the last line of stdout.
 */
public final class BenchOutput {
    private static final ObjectMapper JSON = new ObjectMapper();

    private final PrintStream human;
    private final List<String> columns;
    private final List<List<Object>> rows = new ArrayList<>();

    public BenchOutput(PrintStream human, List<String> columns) {
        this.human = human;
        this.columns = List.copyOf(columns);
    }

    /** {@code v} to 3 decimals, as figures are printed. */
    public static double round(double v) {
        return round(v, 3);
    }

    public static double round(double v, int digits) {
        double f = Math.pow(10, digits);
        return Math.round(v * f) / f;
    }

    public static ObjectNode newJson() {
        return JSON.createObjectNode();
    }

    public void note(String line) {
        human.println(line);
        human.flush();
    }

    /** Adds a row (in {@code columns} order) and prints it. */
    public void row(Object... values) {
        if (values.length != columns.size()) {
            throw new IllegalArgumentException("row has " + values.length + " values for " + columns.size() + " columns");
        }
        List<Object> row = List.of(values);
        rows.add(row);
        if (rows.size() == 1) {
            human.println(String.join("\t", columns));
        }
        human.println(row.stream().map(BenchOutput::format).collect(Collectors.joining("\t")));
        human.flush();
    }

    public List<List<Object>> rows() {
        return rows;
    }

    public void writeCsv(Path csv) {
        if (csv == null) {
            return;
        }
        StringBuilder out = new StringBuilder(String.join(",", columns)).append('\n');
        for (List<Object> row : rows) {
            out.append(row.stream().map(BenchOutput::format).collect(Collectors.joining(","))).append('\n');
        }
        write(csv, out.toString());
        note("wrote " + csv);
    }

    /** Prints {@code json} as the last line of stdout. */
    public static void printJson(ObjectNode json) {
        System.out.println(json.toString());
        System.out.flush();
    }

    /** A grouped bar chart: one bar group per category, one bar per series. */
    public static void barChart(Path png, String title, String valueAxis, Map<String, Map<String, Number>> seriesByCategory) {
        if (png == null) {
            return;
        }
        DefaultCategoryDataset data = new DefaultCategoryDataset();
        seriesByCategory.forEach((series, values) -> values.forEach((category, v) -> data.addValue(v, series, category)));
        JFreeChart chart = ChartFactory.createBarChart(title, null, valueAxis, data, PlotOrientation.VERTICAL, true, false, false);
        // switch-set names are long: slant them rather than cut them
        chart.getCategoryPlot().getDomainAxis().setCategoryLabelPositions(org.jfree.chart.axis.CategoryLabelPositions.UP_45);
        chart.getCategoryPlot().getDomainAxis().setMaximumCategoryLabelWidthRatio(2.0f);
        save(png, chart, 1000, 560);
    }

    /** A line chart of (x, y) points per series. */
    public static void lineChart(Path png, String title, String xAxis, String yAxis, Map<String, List<double[]>> series) {
        if (png == null) {
            return;
        }
        XYSeriesCollection data = new XYSeriesCollection();
        series.forEach((name, points) -> {
            XYSeries s = new XYSeries(name, false, true);
            points.forEach(p -> s.add(p[0], p[1]));
            data.addSeries(s);
        });
        JFreeChart chart = ChartFactory.createXYLineChart(title, xAxis, yAxis, data, PlotOrientation.VERTICAL, true, false, false);
        save(png, chart, 1000, 560);
    }

    /** An ordered map, for building chart inputs. */
    public static <V> Map<String, V> ordered() {
        return new LinkedHashMap<>();
    }

    private static void save(Path png, JFreeChart chart, int width, int height) {
        System.setProperty("java.awt.headless", "true");
        try {
            Path parent = png.toAbsolutePath().getParent();
            if (parent != null) {
                Files.createDirectories(parent);
            }
            ChartUtils.saveChartAsPNG(png.toFile(), chart, width, height);
            System.err.println("wrote " + png);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write chart " + png, e);
        }
    }

    private static void write(Path file, String text) {
        try {
            Path parent = file.toAbsolutePath().getParent();
            if (parent != null) {
                Files.createDirectories(parent);
            }
            Files.writeString(file, text);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + file, e);
        }
    }

    private static String format(Object v) {
        if (v instanceof Double d) {
            return String.format(java.util.Locale.ROOT, "%.3f", d);
        }
        return String.valueOf(v);
    }
}
