package spillway.terasort;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormat;
import org.apache.hadoop.mapreduce.lib.input.FileSplit;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaNewHadoopRDD;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.util.LongAccumulator;

import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * TeraSort on Spark over the files Hadoop's TeraGen writes.
 *
 *   sort <input> <output> [partitions]   range-partitioned sort by the 10-byte key (unsigned byte order);
 *                                        part files TeraValidate accepts
 *   validate <output> [<input>]          Spark-side check, independent of TeraValidate: each output file
 *                                        sorted, file boundaries ordered, and (given the input) record count
 *                                        and checksum equal to the input's
 *
 * Progress lines go to stdout; the last stdout line is a one-line JSON summary. validate exits 1 when
 * the check fails, 2 on bad usage.
 */
public final class TeraSortSpark {
    private static final String USAGE = "usage: sort <input> <output> [partitions] | validate <output> [<input>]";
    private static final ObjectMapper JSON = new ObjectMapper();

    private TeraSortSpark() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length == 0) {
            usageError("no subcommand given");
        }
        switch (args[0]) {
            case "sort":
                if (args.length < 3 || args.length > 4) {
                    usageError("sort takes <input> <output> [partitions]");
                }
                sort(args[1], args[2], args.length == 4 ? parsePartitions(args[3]) : 0);
                break;
            case "validate":
                if (args.length < 2 || args.length > 3) {
                    usageError("validate takes <output> [<input>]");
                }
                boolean ok = validate(args[1], args.length == 3 ? args[2] : null);
                if (!ok) {
                    System.exit(1);
                }
                break;
            default:
                usageError("unknown subcommand '" + args[0] + "'");
        }
    }

    private static void usageError(String problem) {
        System.err.println("terasort-spark: " + problem + "\n" + USAGE);
        System.exit(2);
    }

    private static int parsePartitions(String text) {
        try {
            int partitions = Integer.parseInt(text);
            if (partitions >= 1) {
                return partitions;
            }
        } catch (NumberFormatException ignored) {
            // reported below
        }
        usageError("partitions must be a positive integer, got '" + text + "'");
        return 0;
    }

    private static JavaSparkContext startSpark(String appName) {
        SparkConf conf = new SparkConf().setAppName(appName);
        // Kryo writes byte arrays compactly; Java serialization of 10+90-byte arrays doubles shuffle bytes.
        conf.setIfMissing("spark.serializer", "org.apache.spark.serializer.KryoSerializer");
        return new JavaSparkContext(conf);
    }

    private static JavaPairRDD<byte[], byte[]> readRecords(JavaSparkContext spark, String path, Configuration conf) {
        return spark.newAPIHadoopFile(path, TeraRecordInputFormat.class, byte[].class, byte[].class, conf);
    }

    static void sort(String input, String output, int requestedPartitions) throws Exception {
        long started = System.nanoTime();
        JavaSparkContext spark = startSpark("terasort-spark sort");
        try {
            Configuration hadoopConf = spark.hadoopConfiguration();
            Path outputPath = new Path(output);
            FileSystem outputFs = outputPath.getFileSystem(hadoopConf);
            if (outputFs.exists(outputPath)) {
                throw new IllegalStateException("output " + output + " already exists: remove it first "
                        + "(hadoop fs -rm -r -skipTrash " + output + ")");
            }

            JavaPairRDD<byte[], byte[]> records = readRecords(spark, input, new Configuration(hadoopConf));
            int inputPartitions = records.getNumPartitions();
            int partitions = requestedPartitions > 0 ? requestedPartitions : inputPartitions;
            System.out.printf("sort: input %s (%d splits) -> output %s (%d partitions)%n",
                    input, inputPartitions, output, partitions);

            // sortByKey builds its RangePartitioner now: a job that reads the input once to sample keys.
            long sampleStart = System.nanoTime();
            JavaPairRDD<byte[], byte[]> sorted = records.sortByKey(new UnsignedBytesComparator(), true, partitions);
            double sampleSeconds = secondsSince(sampleStart);
            System.out.printf("sort: range boundaries sampled in %.3f s%n", sampleSeconds);

            // Counted in the result stage, where Spark applies each task's accumulator update exactly once.
            LongAccumulator written = spark.sc().longAccumulator("records written");
            JavaPairRDD<byte[], byte[]> counted = sorted.mapToPair(record -> {
                written.add(1);
                return record;
            });
            long writeStart = System.nanoTime();
            counted.saveAsNewAPIHadoopFile(output, byte[].class, byte[].class, TeraRecordOutputFormat.class,
                    new Configuration(hadoopConf));
            double sortWriteSeconds = secondsSince(writeStart);
            System.out.printf("sort: shuffled, sorted and wrote %d records in %.3f s%n", written.value(), sortWriteSeconds);

            Map<String, Object> summary = new LinkedHashMap<>();
            summary.put("subcommand", "sort");
            summary.put("ok", true);
            summary.put("input", input);
            summary.put("output", output);
            summary.put("input_splits", inputPartitions);
            summary.put("partitions", partitions);
            summary.put("records", written.value());
            summary.put("sample_seconds", round(sampleSeconds));
            summary.put("sort_write_seconds", round(sortWriteSeconds));
            summary.put("total_seconds", round(secondsSince(started)));
            summary.put("application_id", spark.sc().applicationId());
            System.out.println(JSON.writeValueAsString(summary));
        } finally {
            spark.stop();
        }
    }

    static boolean validate(String output, String input) throws Exception {
        long started = System.nanoTime();
        JavaSparkContext spark = startSpark("terasort-spark validate");
        try {
            Configuration hadoopConf = spark.hadoopConfiguration();
            List<String> problems = new ArrayList<>();

            // One split per file, like TeraValidate: order is then checked within a file by the task and
            // across files by the driver.
            Configuration wholeFiles = new Configuration(hadoopConf);
            wholeFiles.setLong(FileInputFormat.SPLIT_MINSIZE, Long.MAX_VALUE);
            List<SplitSummary> files = new ArrayList<>(summarize(spark, output, wholeFiles));
            files.sort(SplitSummary::outputOrder);

            long records = 0;
            long misorderedPairs = 0;
            RecordChecksum checksum = new RecordChecksum();
            List<String> unsortedFiles = new ArrayList<>();
            SplitSummary previous = null;
            for (SplitSummary file : files) {
                records += file.records;
                checksum.add(file.checksum);
                if (file.misorderedPairs > 0) {
                    misorderedPairs += file.misorderedPairs;
                    unsortedFiles.add(file.path);
                    problems.add(file.path + " is not sorted: " + file.misorderedPairs
                            + " records smaller than their predecessor, first " + file.firstMisorder);
                }
                if (file.isEmpty()) {
                    continue;
                }
                if (previous != null && new UnsignedBytesComparator().compare(previous.lastKey, file.firstKey) > 0) {
                    problems.add("bad partition boundary: last key of " + previous.path + " is "
                            + SplitSummary.hex(previous.lastKey) + ", greater than first key of " + file.path
                            + " " + SplitSummary.hex(file.firstKey));
                }
                previous = file;
            }
            if (records == 0) {
                problems.add("output " + output + " holds no records");
            }
            System.out.printf("validate: %s has %d files, %d records, checksum %s%n",
                    output, files.size(), records, checksum.toHex());

            Map<String, Object> summary = new LinkedHashMap<>();
            summary.put("subcommand", "validate");
            summary.put("output", output);
            summary.put("files", files.size());
            summary.put("records", records);
            summary.put("checksum", checksum.toHex());
            summary.put("misordered_pairs", misorderedPairs);
            summary.put("unsorted_files", unsortedFiles);

            if (input != null) {
                List<SplitSummary> inputSplits = summarize(spark, input, new Configuration(hadoopConf));
                long inputRecords = 0;
                RecordChecksum inputChecksum = new RecordChecksum();
                for (SplitSummary split : inputSplits) {
                    inputRecords += split.records;
                    inputChecksum.add(split.checksum);
                }
                System.out.printf("validate: input %s has %d records, checksum %s%n",
                        input, inputRecords, inputChecksum.toHex());
                if (inputRecords != records) {
                    problems.add("record count differs: output " + records + ", input " + inputRecords);
                }
                if (!inputChecksum.equals(checksum)) {
                    problems.add("checksum differs: output " + checksum.toHex() + ", input " + inputChecksum.toHex()
                            + " (records lost, duplicated or altered)");
                }
                summary.put("input", input);
                summary.put("input_records", inputRecords);
                summary.put("input_checksum", inputChecksum.toHex());
            }

            for (String problem : problems) {
                System.out.println("validate: FAILED: " + problem);
            }
            summary.put("ok", problems.isEmpty());
            summary.put("problems", problems);
            summary.put("seconds", round(secondsSince(started)));
            System.out.println(JSON.writeValueAsString(summary));
            return problems.isEmpty();
        } finally {
            spark.stop();
        }
    }

    /** One summary per input split of path, computed where the split is read. */
    private static List<SplitSummary> summarize(JavaSparkContext spark, String path, Configuration conf) {
        JavaNewHadoopRDD<byte[], byte[]> records = (JavaNewHadoopRDD<byte[], byte[]>) readRecords(spark, path, conf);
        return records.mapPartitionsWithInputSplit(
                (split, splitRecords) -> Collections.singletonList(SplitSummary.of((FileSplit) split, splitRecords)).iterator(),
                false).collect();
    }

    private static double secondsSince(long nanoTimeStart) {
        return (System.nanoTime() - nanoTimeStart) / 1e9;
    }

    private static double round(double seconds) {
        return Math.round(seconds * 1000) / 1000.0;
    }
}
