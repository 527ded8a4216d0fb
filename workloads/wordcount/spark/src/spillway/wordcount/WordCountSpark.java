package spillway.wordcount;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.StringTokenizer;
import java.util.stream.IntStream;

import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.util.LongAccumulator;

import com.fasterxml.jackson.databind.ObjectMapper;

import scala.Tuple2;

/**
 * HiBench's WordCount on Spark, and the random text that it and Sort (workloads/sort) read.
 *
 *   generate <dir> <bytes> <seed> <partitions>
 *       writes <dir>/text: about <bytes> of RandomText lines, <partitions> text files
 *   count <input-dir> <output-dir> <reducers>
 *       counts the words (split at spaces and tabs) of the text files under <input-dir> and writes one line
 *       "word TAB count" per distinct word to <output-dir>, <reducers> files
 *
 * Progress lines go to stdout; the last stdout line is a one-line JSON summary. Exit 2 on bad usage.
 */
public final class WordCountSpark {
    private static final String USAGE = "usage: generate <dir> <bytes> <seed> <partitions>"
            + " | count <input-dir> <output-dir> <reducers>";
    private static final ObjectMapper JSON = new ObjectMapper();

    private WordCountSpark() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length == 0) {
            usageError("no subcommand given");
        }
        switch (args[0]) {
            case "generate":
                if (args.length != 5) {
                    usageError("generate takes <dir> <bytes> <seed> <partitions>");
                }
                generate(args[1], positiveLong(args[2], "bytes"), parseLong(args[3], "seed"),
                        (int) positiveLong(args[4], "partitions"));
                break;
            case "count":
                if (args.length != 4) {
                    usageError("count takes <input-dir> <output-dir> <reducers>");
                }
                count(args[1], args[2], (int) positiveLong(args[3], "reducers"));
                break;
            default:
                usageError("unknown subcommand '" + args[0] + "'");
        }
    }

    static void generate(String dir, long bytes, long seed, int partitions) throws Exception {
        long started = System.nanoTime();
        SparkSession spark = SparkSession.builder().appName("randomtext generate").getOrCreate();
        try {
            JavaSparkContext context = JavaSparkContext.fromSparkContext(spark.sparkContext());
            Path text = new Path(dir, "text");
            FileSystem fs = text.getFileSystem(context.hadoopConfiguration());
            if (fs.exists(text)) {
                throw new IllegalStateException(text + " already exists: remove " + dir + " first");
            }
            long lines = RandomText.linesFor(bytes);
            List<Integer> partitionIds = IntStream.range(0, partitions).boxed().toList();
            context.setJobGroup("generate-text", "randomtext: generate", false);
            context.parallelize(partitionIds, partitions)
                    .mapPartitionsWithIndex((partition, ignored) ->
                            RandomText.partition(seed, lines, partitions, partition), true)
                    .saveAsTextFile(text.toString());
            long written = fs.getContentSummary(text).getLength();
            System.out.printf("generate: %d lines, %d bytes in %s%n", lines, written, text);

            Map<String, Object> summary = new LinkedHashMap<>();
            summary.put("subcommand", "generate");
            summary.put("ok", true);
            summary.put("output", text.toString());
            summary.put("version", RandomText.VERSION);
            summary.put("requested_bytes", bytes);
            summary.put("lines", lines);
            summary.put("seed", seed);
            summary.put("partitions", partitions);
            summary.put("bytes", written);
            summary.put("seconds", round(secondsSince(started)));
            summary.put("application_id", spark.sparkContext().applicationId());
            System.out.println(JSON.writeValueAsString(summary));
        } finally {
            spark.stop();
        }
    }

    static void count(String inputDir, String outputDir, int reducers) throws Exception {
        long started = System.nanoTime();
        SparkSession spark = SparkSession.builder().appName("wordcount").getOrCreate();
        try {
            JavaSparkContext context = JavaSparkContext.fromSparkContext(spark.sparkContext());
            // A task run twice (a retry, a lost executor) adds its words twice: a figure for the log, not the check.
            LongAccumulator wordsRead = context.sc().longAccumulator("words read");
            context.setJobGroup("wordcount", "wordcount", false);
            JavaPairRDD<String, Long> counts = context.textFile(inputDir)
                    .flatMap(line -> {
                        List<String> words = new ArrayList<>();
                        StringTokenizer tokens = new StringTokenizer(line, " \t");
                        while (tokens.hasMoreTokens()) {
                            words.add(tokens.nextToken());
                        }
                        wordsRead.add(words.size());
                        return words.iterator();
                    })
                    .mapToPair(word -> new Tuple2<>(word, 1L))
                    // Summed in the map tasks first (a combiner, as HiBench's reduceByKey does): the shuffle
                    // carries one partial count per word and task, not every word.
                    .reduceByKey(Long::sum, reducers);
            long jobStart = System.nanoTime();
            counts.map(pair -> pair._1() + '\t' + pair._2()).saveAsTextFile(outputDir);
            double seconds = secondsSince(jobStart);
            long distinct = context.textFile(outputDir).count();
            System.out.printf(Locale.ROOT, "wordcount: %d words, %d distinct, counted and written in %.3f s to %s%n",
                    wordsRead.value(), distinct, seconds, outputDir);

            Map<String, Object> summary = new LinkedHashMap<>();
            summary.put("subcommand", "count");
            summary.put("ok", true);
            summary.put("input", inputDir);
            summary.put("output", outputDir);
            summary.put("seconds", round(seconds));
            summary.put("words", wordsRead.value());
            summary.put("distinct_words", distinct);
            summary.put("reducers", reducers);
            summary.put("total_seconds", round(secondsSince(started)));
            summary.put("application_id", spark.sparkContext().applicationId());
            System.out.println(JSON.writeValueAsString(summary));
        } finally {
            spark.stop();
        }
    }

    private static void usageError(String message) {
        System.err.println("wordcount-spark: " + message + "\n" + USAGE);
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
