package spillway.websql;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.QueryExecution;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanExec;
import org.apache.spark.sql.execution.command.DataWritingCommandExec;
import org.apache.spark.sql.execution.metric.SQLMetric;
import org.apache.spark.sql.util.QueryExecutionListener;

import com.fasterxml.jackson.databind.ObjectMapper;

import scala.Option;

/**
 * HiBench's SQL workloads (scan, aggregation, join over Pavlo et al.'s rankings and uservisits) on Spark SQL.
 *
 *   generate <dir> <uservisits> <rankings> <seed> <partitions>
 *       writes <dir>/rankings and <dir>/uservisits: CSV text files (no header), <partitions> files each (WebData)
 *   query <data-dir> <sql-file> <query> <output-dir> <times-csv>
 *       registers the two tables, runs the SQL file (read by the driver: a local path) under the job group
 *       <query> and writes its result as CSV (no header) to <output-dir>, as HiBench's INSERT OVERWRITE TABLE
 *       does; one line (query, seconds, rows) goes to times-csv, a local file
 *
 * Progress lines go to stdout; the last stdout line is a one-line JSON summary. Exit 2 on bad usage.
 */
public final class WebSqlSpark {
    static final String RANKINGS_SCHEMA = "pageURL STRING, pageRank INT, avgDuration INT";
    static final String USERVISITS_SCHEMA = "sourceIP STRING, destURL STRING, visitDate DATE, adRevenue DOUBLE, "
            + "userAgent STRING, countryCode STRING, languageCode STRING, searchWord STRING, duration INT";
    private static final String USAGE = "usage: generate <dir> <uservisits> <rankings> <seed> <partitions>"
            + " | query <data-dir> <sql-file> <query> <output-dir> <times-csv>";
    private static final ObjectMapper JSON = new ObjectMapper();

    private WebSqlSpark() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length == 0) {
            usageError("no subcommand given");
        }
        switch (args[0]) {
            case "generate":
                if (args.length != 6) {
                    usageError("generate takes <dir> <uservisits> <rankings> <seed> <partitions>");
                }
                generate(args[1], positiveLong(args[2], "uservisits"), positiveLong(args[3], "rankings"),
                        parseLong(args[4], "seed"), (int) positiveLong(args[5], "partitions"));
                break;
            case "query":
                if (args.length != 6) {
                    usageError("query takes <data-dir> <sql-file> <query> <output-dir> <times-csv>");
                }
                Path sqlFile = Paths.get(args[2]);
                if (!Files.isRegularFile(sqlFile)) {
                    usageError("no SQL file " + sqlFile);
                }
                query(args[1], sqlFile, args[3], args[4], Paths.get(args[5]));
                break;
            default:
                usageError("unknown subcommand '" + args[0] + "'");
        }
    }

    static void generate(String dir, long uservisits, long rankings, long seed, int partitions) throws Exception {
        long started = System.nanoTime();
        SparkSession spark = SparkSession.builder().appName("websql generate").getOrCreate();
        try {
            JavaSparkContext context = JavaSparkContext.fromSparkContext(spark.sparkContext());
            Configuration hadoopConf = context.hadoopConfiguration();
            org.apache.hadoop.fs.Path root = new org.apache.hadoop.fs.Path(dir);
            FileSystem fs = root.getFileSystem(hadoopConf);
            for (String table : new String[] {"rankings", "uservisits"}) {
                if (fs.exists(new org.apache.hadoop.fs.Path(root, table))) {
                    throw new IllegalStateException(dir + "/" + table + " already exists: remove " + dir + " first");
                }
            }
            List<Integer> partitionIds = IntStream.range(0, partitions).boxed().toList();
            context.setJobGroup("generate-rankings", "websql: generate rankings", false);
            context.parallelize(partitionIds, partitions)
                    .mapPartitionsWithIndex((partition, ignored) -> WebData.partition(rankings, partitions, partition,
                            page -> WebData.rankingLine(seed, page)), true)
                    .saveAsTextFile(dir + "/rankings");
            System.out.printf("generate: %d rankings rows in %s/rankings%n", rankings, dir);
            context.setJobGroup("generate-uservisits", "websql: generate uservisits", false);
            context.parallelize(partitionIds, partitions)
                    .mapPartitionsWithIndex((partition, ignored) -> WebData.partition(uservisits, partitions, partition,
                            visit -> WebData.visitLine(seed, visit, uservisits, rankings)), true)
                    .saveAsTextFile(dir + "/uservisits");
            System.out.printf("generate: %d uservisits rows in %s/uservisits%n", uservisits, dir);

            Map<String, Object> summary = new LinkedHashMap<>();
            summary.put("subcommand", "generate");
            summary.put("ok", true);
            summary.put("output", dir);
            summary.put("version", WebData.VERSION);
            summary.put("uservisits", uservisits);
            summary.put("rankings", rankings);
            summary.put("seed", seed);
            summary.put("partitions", partitions);
            summary.put("source_ips", WebData.ipPool(uservisits));
            summary.put("bytes", fs.getContentSummary(root).getLength());
            summary.put("seconds", round(secondsSince(started)));
            summary.put("application_id", spark.sparkContext().applicationId());
            System.out.println(JSON.writeValueAsString(summary));
        } finally {
            spark.stop();
        }
    }

    static void query(String dataDir, Path sqlFile, String query, String outputDir, Path timesCsv) throws Exception {
        long started = System.nanoTime();
        SparkSession spark = SparkSession.builder().appName("websql " + query).getOrCreate();
        WriteMetrics written = new WriteMetrics();
        spark.listenerManager().register(written);
        try {
            // The schemas are given: no pass over the data to infer them, and both engines type the columns alike.
            spark.read().schema(RANKINGS_SCHEMA).option("mode", "FAILFAST").csv(dataDir + "/rankings")
                    .createOrReplaceTempView("rankings");
            spark.read().schema(USERVISITS_SCHEMA).option("mode", "FAILFAST").csv(dataDir + "/uservisits")
                    .createOrReplaceTempView("uservisits");
            String sql = Files.readString(sqlFile, StandardCharsets.UTF_8);
            // The job group names the query in the event log (stages, SQL executions), as TPC-H's do.
            spark.sparkContext().setJobGroup(query, "websql " + query, false);
            long queryStart = System.nanoTime();
            Dataset<Row> result = spark.sql(sql);
            result.write().csv(outputDir);
            double seconds = secondsSince(queryStart);
            spark.sparkContext().clearJobGroup();
            // The write's own metrics (rows, bytes, files) reach the listener through the listener bus.
            if (!written.done.await(60, TimeUnit.SECONDS) || written.rows < 0) {
                throw new IllegalStateException("the write of " + outputDir + " reported no row count");
            }
            Files.writeString(timesCsv, String.format(Locale.ROOT, "query,seconds,rows%n%s,%.3f,%d%n",
                    query, seconds, written.rows), StandardCharsets.UTF_8);
            System.out.printf(Locale.ROOT, "websql: %s %.3f s, %d rows, %d bytes in %d files to %s%n",
                    query, seconds, written.rows, written.bytes, written.files, outputDir);

            Map<String, Object> summary = new LinkedHashMap<>();
            summary.put("subcommand", "query");
            summary.put("ok", true);
            summary.put("query", query);
            summary.put("data", dataDir);
            summary.put("output", outputDir);
            summary.put("seconds", round(seconds));
            summary.put("rows", written.rows);
            summary.put("output_bytes", written.bytes);
            summary.put("output_files", written.files);
            summary.put("total_seconds", round(secondsSince(started)));
            summary.put("application_id", spark.sparkContext().applicationId());
            System.out.println(JSON.writeValueAsString(summary));
        } finally {
            spark.stop();
        }
    }

    /** Rows, bytes and files of the first file write that succeeds (the query's INSERT, as it were). */
    static final class WriteMetrics implements QueryExecutionListener {
        final CountDownLatch done = new CountDownLatch(1);
        volatile long rows = -1;
        volatile long bytes = -1;
        volatile long files = -1;

        @Override
        public void onSuccess(String funcName, QueryExecution execution, long durationNs) {
            SparkPlan plan = writeNode(execution.executedPlan());
            if (done.getCount() == 0 || plan == null) {
                return;
            }
            bytes = metric(plan, "numOutputBytes");
            files = metric(plan, "numFiles");
            rows = metric(plan, "numOutputRows");
            done.countDown();
        }

        @Override
        public void onFailure(String funcName, QueryExecution execution, Exception exception) {
            // The write itself throws in the driver; nothing to wait for here.
        }

        /** The write in a plan: its root, or under adaptive execution (a shuffle before the write) inside it. */
        private static SparkPlan writeNode(SparkPlan plan) {
            if (plan instanceof DataWritingCommandExec) {
                return plan;
            }
            if (plan instanceof AdaptiveSparkPlanExec) {
                return writeNode(((AdaptiveSparkPlanExec) plan).executedPlan());
            }
            scala.collection.Iterator<SparkPlan> children = plan.children().iterator();
            while (children.hasNext()) {
                SparkPlan found = writeNode(children.next());
                if (found != null) {
                    return found;
                }
            }
            return null;
        }

        private static long metric(SparkPlan plan, String name) {
            Option<SQLMetric> metric = plan.metrics().get(name);
            return metric.isDefined() ? metric.get().value() : -1;
        }
    }

    private static void usageError(String message) {
        System.err.println("websql-spark: " + message + "\n" + USAGE);
        System.exit(2);
    }

    private static long parseLong(String text, String name) {
        try {
            return Long.parseLong(text);
        } catch (NumberFormatException e) {
            usageError(name + " '" + text + "' is not a whole number");
            return 0;
        }
    }

    private static long positiveLong(String text, String name) {
        long value = parseLong(text, name);
        if (value < 1) {
            usageError(name + " must be at least 1, not " + value);
        }
        return value;
    }

    private static double secondsSince(long nanoTimeStart) {
        return (System.nanoTime() - nanoTimeStart) / 1e9;
    }

    private static double round(double seconds) {
        return Math.round(seconds * 1000) / 1000.0;
    }
}
