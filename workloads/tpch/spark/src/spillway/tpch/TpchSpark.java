package spillway.tpch;

import java.io.IOException;
import java.io.Writer;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * The TPC-H queries on Spark SQL over Parquet tables.
 *
 *   <tables-dir> <queries-dir> <results-dir> <times-csv> <query>...
 *
 * tables-dir holds one folder of Parquet files per table (any Hadoop URI: hdfs://, file://); queries-dir
 * holds <query>.sql, read by the driver (a local path: in YARN client mode the driver runs where the step
 * runs). Each query's rows go to <results-dir>/<query>.csv (header, RFC 4180 quoting, ISO dates, decimals
 * in plain notation, NULL as an empty field), and one line per query (query, seconds, rows) to times-csv.
 *
 * Each query runs under its own job group (the query name) so the event log maps stages to queries.
 * Progress lines go to stdout; the last stdout line is a one-line JSON summary. Exit 2 on bad usage.
 */
public final class TpchSpark {
    static final String[] TABLES = {"region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem"};
    private static final String USAGE = "usage: <tables-dir> <queries-dir> <results-dir> <times-csv> <query>...";
    private static final ObjectMapper JSON = new ObjectMapper();

    private TpchSpark() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 5) {
            System.err.println("tpch-spark: too few arguments\n" + USAGE);
            System.exit(2);
        }
        String tablesDir = args[0];
        Path queriesDir = Paths.get(args[1]);
        Path resultsDir = Paths.get(args[2]);
        Path timesCsv = Paths.get(args[3]);
        List<String> queries = List.of(args).subList(4, args.length);
        for (String query : queries) {
            if (!Files.isRegularFile(queriesDir.resolve(query + ".sql"))) {
                System.err.println("tpch-spark: no query file " + queriesDir.resolve(query + ".sql") + "\n" + USAGE);
                System.exit(2);
            }
        }
        run(tablesDir, queriesDir, resultsDir, timesCsv, queries);
    }

    static void run(String tablesDir, Path queriesDir, Path resultsDir, Path timesCsv, List<String> queries)
            throws IOException {
        long started = System.nanoTime();
        SparkSession spark = SparkSession.builder().appName("tpch-spark").getOrCreate();
        try {
            Files.createDirectories(resultsDir);
            spark.sparkContext().setJobGroup("load", "TPC-H: register tables", false);
            for (String table : TABLES) {
                spark.read().parquet(tablesDir + "/" + table).createOrReplaceTempView(table);
            }
            System.out.printf("tpch: registered %d tables from %s%n", TABLES.length, tablesDir);

            Map<String, Object> querySeconds = new LinkedHashMap<>();
            Map<String, Object> queryRows = new LinkedHashMap<>();
            StringBuilder times = new StringBuilder("query,seconds,rows\n");
            for (String query : queries) {
                String sql = Files.readString(queriesDir.resolve(query + ".sql"), StandardCharsets.UTF_8);
                // setJobGroup also sets the job description (spark.job.description): the SQL tab and the
                // event log's job and SQL execution events then carry both the group id and a readable name.
                spark.sparkContext().setJobGroup(query, "TPC-H " + displayName(query), false);
                long queryStart = System.nanoTime();
                Dataset<Row> result = spark.sql(sql);
                List<Row> rows = result.collectAsList();
                double seconds = secondsSince(queryStart);
                writeCsv(resultsDir.resolve(query + ".csv"), result.columns(), rows);
                querySeconds.put(query, round(seconds));
                queryRows.put(query, rows.size());
                times.append(String.format(Locale.ROOT, "%s,%.3f,%d%n", query, seconds, rows.size()));
                System.out.printf(Locale.ROOT, "tpch: %s %.3f s, %d rows%n", query, seconds, rows.size());
            }
            spark.sparkContext().clearJobGroup();
            Files.writeString(timesCsv, times, StandardCharsets.UTF_8);

            Map<String, Object> summary = new LinkedHashMap<>();
            summary.put("ok", true);
            summary.put("tables", tablesDir);
            summary.put("queries", queries.size());
            summary.put("query_seconds", querySeconds);
            summary.put("query_rows", queryRows);
            summary.put("total_seconds", round(secondsSince(started)));
            summary.put("application_id", spark.sparkContext().applicationId());
            System.out.println(JSON.writeValueAsString(summary));
        } finally {
            spark.stop();
        }
    }

    /** q01 -> Q1, as the spec names the queries. */
    static String displayName(String query) {
        return query.matches("q\\d+") ? "Q" + Integer.parseInt(query.substring(1)) : query;
    }

    static void writeCsv(Path file, String[] columns, List<Row> rows) throws IOException {
        try (Writer out = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
            out.write(csvLine(List.of(columns)));
            for (Row row : rows) {
                List<String> fields = new ArrayList<>(row.size());
                for (int i = 0; i < row.size(); i++) {
                    fields.add(csvText(row.get(i)));
                }
                out.write(csvLine(fields));
            }
        }
    }

    private static String csvText(Object value) {
        if (value == null) {
            return "";
        }
        // BigDecimal.toString may use exponent notation (1E+3); the checker parses either, people read this.
        return value instanceof BigDecimal ? ((BigDecimal) value).toPlainString() : value.toString();
    }

    private static String csvLine(List<String> fields) {
        StringBuilder line = new StringBuilder();
        for (String field : fields) {
            if (line.length() > 0) {
                line.append(',');
            }
            // Addresses and comments hold commas; TPC-H text has no quotes or newlines, but be safe anyway.
            if (field.indexOf(',') >= 0 || field.indexOf('"') >= 0 || field.indexOf('\n') >= 0 || field.indexOf('\r') >= 0) {
                line.append('"').append(field.replace("\"", "\"\"")).append('"');
            } else {
                line.append(field);
            }
        }
        return line.append('\n').toString();
    }

    private static double secondsSince(long nanoTimeStart) {
        return (System.nanoTime() - nanoTimeStart) / 1e9;
    }

    private static double round(double seconds) {
        return Math.round(seconds * 1000) / 1000.0;
    }
}
