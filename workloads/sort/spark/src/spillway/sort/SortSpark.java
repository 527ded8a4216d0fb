package spillway.sort;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

import org.apache.spark.HashPartitioner;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.SparkSession;

import com.fasterxml.jackson.databind.ObjectMapper;

import scala.Tuple2;

/**
 * HiBench's Sort on Spark: the lines of text files, hash-partitioned into <reducers> files and sorted within each,
 * as HiBench's ScalaSort does (a HashPartitioner and the shuffle's key ordering, not a total order: no sampling
 * pass, so the input is read once, shuffled whole and written whole).
 *
 *   sort <input-dir> <output-dir> <reducers>
 *
 * Lines compare as Java strings (UTF-16 code units: byte order for the generator's ASCII text). Progress lines go
 * to stdout; the last stdout line is a one-line JSON summary. Exit 2 on bad usage.
 */
public final class SortSpark {
    private static final ObjectMapper JSON = new ObjectMapper();

    private SortSpark() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 4 || !"sort".equals(args[0])) {
            System.err.println("sort-spark: usage: sort <input-dir> <output-dir> <reducers>");
            System.exit(2);
        }
        int reducers = 0;
        try {
            reducers = Integer.parseInt(args[3]);
        } catch (NumberFormatException e) {
            reducers = 0;
        }
        if (reducers < 1) {
            System.err.println("sort-spark: reducers must be a whole number of at least 1, not '" + args[3] + "'");
            System.exit(2);
        }
        sort(args[1], args[2], reducers);
    }

    static void sort(String inputDir, String outputDir, int reducers) throws Exception {
        long started = System.nanoTime();
        SparkSession spark = SparkSession.builder().appName("sort").getOrCreate();
        try {
            JavaSparkContext context = JavaSparkContext.fromSparkContext(spark.sparkContext());
            context.setJobGroup("sort", "sort", false);
            long jobStart = System.nanoTime();
            context.textFile(inputDir)
                    .mapToPair(line -> new Tuple2<>(line, Boolean.TRUE))
                    .repartitionAndSortWithinPartitions(new HashPartitioner(reducers))
                    .keys()
                    .saveAsTextFile(outputDir);
            double seconds = secondsSince(jobStart);
            System.out.printf(Locale.ROOT, "sort: sorted and written in %.3f s to %s, %d files%n", seconds, outputDir,
                    reducers);

            Map<String, Object> summary = new LinkedHashMap<>();
            summary.put("subcommand", "sort");
            summary.put("ok", true);
            summary.put("input", inputDir);
            summary.put("output", outputDir);
            summary.put("seconds", Math.round(seconds * 1000) / 1000.0);
            summary.put("reducers", reducers);
            summary.put("total_seconds", Math.round(secondsSince(started) * 1000) / 1000.0);
            summary.put("application_id", spark.sparkContext().applicationId());
            System.out.println(JSON.writeValueAsString(summary));
        } finally {
            spark.stop();
        }
    }

    private static double secondsSince(long nanoTimeStart) {
        return (System.nanoTime() - nanoTimeStart) / 1e9;
    }
}
