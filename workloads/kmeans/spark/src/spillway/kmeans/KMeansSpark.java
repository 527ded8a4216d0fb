package spillway.kmeans;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.mapreduce.lib.output.SequenceFileOutputFormat;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.mllib.clustering.KMeans;
import org.apache.spark.mllib.clustering.KMeansModel;
import org.apache.spark.mllib.linalg.Vector;
import org.apache.spark.mllib.linalg.Vectors;
import org.apache.spark.storage.StorageLevel;

import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * K-means with Spark MLlib over generated points (HiBench's KMeans workload, see PointGenerator).
 *
 *   generate <dir> <points> <dimensions> <k> <spread> <seed> <partitions>
 *       writes <dir>/points (sequence files, one per partition) and <dir>/centres.json (the true centres,
 *       sigma = spread x the smallest distance between two centres)
 *   train <points> <model-dir> <k> <iterations> <seed> <storage-level>
 *       k-means|| initialisation, then one Lloyd iteration at a time from the previous centres, so that
 *       the time and cost of every iteration are known; writes <model-dir>/model.json and iterations.csv
 *
 * Progress lines go to stdout; the last stdout line is a one-line JSON summary. Exit 2 on bad usage.
 */
public final class KMeansSpark {
    private static final String USAGE = "usage: generate <dir> <points> <dimensions> <k> <spread> <seed> <partitions>"
            + " | train <points> <model-dir> <k> <iterations> <seed> <storage-level>";
    private static final ObjectMapper JSON = new ObjectMapper();

    private KMeansSpark() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length == 0) {
            usageError("no subcommand given");
        }
        switch (args[0]) {
            case "generate":
                if (args.length != 8) {
                    usageError("generate takes <dir> <points> <dimensions> <k> <spread> <seed> <partitions>");
                }
                generate(args[1], positiveLong(args[2], "points"), (int) positiveLong(args[3], "dimensions"),
                        (int) positiveLong(args[4], "k"), positiveDouble(args[5], "spread"), parseLong(args[6], "seed"),
                        (int) positiveLong(args[7], "partitions"));
                break;
            case "train":
                if (args.length != 7) {
                    usageError("train takes <points> <model-dir> <k> <iterations> <seed> <storage-level>");
                }
                train(args[1], args[2], (int) positiveLong(args[3], "k"), (int) positiveLong(args[4], "iterations"),
                        parseLong(args[5], "seed"), storageLevel(args[6]));
                break;
            default:
                usageError("unknown subcommand '" + args[0] + "'");
        }
    }

    static void generate(String dir, long points, int dimensions, int k, double spread, long seed, int partitions)
            throws Exception {
        if (k < 2) {
            usageError("k must be at least 2: spread is relative to the distance between two centres");
        }
        long started = System.nanoTime();
        JavaSparkContext spark = new JavaSparkContext(new SparkConf().setAppName("kmeans generate"));
        try {
            Configuration hadoopConf = spark.hadoopConfiguration();
            Path pointsPath = new Path(dir, "points");
            FileSystem fs = pointsPath.getFileSystem(hadoopConf);
            if (fs.exists(pointsPath)) {
                throw new IllegalStateException(pointsPath + " already exists: remove " + dir + " first");
            }
            double[][] centres = PointGenerator.centres(seed, k, dimensions);
            double minimumDistance = PointGenerator.minimumDistance(centres);
            double sigma = spread * minimumDistance;
            System.out.printf("generate: %d points, %d dimensions, k=%d, sigma=%.4f (smallest centre distance %.3f)%n",
                    points, dimensions, k, sigma, minimumDistance);

            List<Integer> partitionIds = IntStream.range(0, partitions).boxed().toList();
            JavaPairRDD<LongWritable, BytesWritable> generated = JavaPairRDD.fromJavaRDD(
                    spark.parallelize(partitionIds, partitions).mapPartitionsWithIndex(
                            (partition, ignored) -> PointGenerator.partition(
                                    seed, centres, sigma, points, partitions, partition),
                            true));
            generated.saveAsNewAPIHadoopFile(pointsPath.toString(), LongWritable.class, BytesWritable.class,
                    SequenceFileOutputFormat.class, new Configuration(hadoopConf));
            long bytes = fs.getContentSummary(pointsPath).getLength();

            Map<String, Object> truth = new LinkedHashMap<>();
            truth.put("points", points);
            truth.put("dimensions", dimensions);
            truth.put("k", k);
            truth.put("seed", seed);
            truth.put("partitions", partitions);
            truth.put("spread", spread);
            truth.put("box", PointGenerator.BOX);
            truth.put("min_centre_distance", minimumDistance);
            truth.put("sigma", sigma);
            truth.put("centres", centres);
            writeSmallFile(new Path(dir, "centres.json"), hadoopConf, JSON.writeValueAsString(truth));

            Map<String, Object> summary = new LinkedHashMap<>();
            summary.put("subcommand", "generate");
            summary.put("ok", true);
            summary.put("output", dir);
            summary.put("points", points);
            summary.put("bytes", bytes);
            summary.put("sigma", sigma);
            summary.put("seconds", round(secondsSince(started)));
            summary.put("application_id", spark.sc().applicationId());
            System.out.println(JSON.writeValueAsString(summary));
        } finally {
            spark.stop();
        }
    }

    static void train(String input, String modelDir, int k, int iterations, long seed, StorageLevel storageLevel)
            throws Exception {
        long started = System.nanoTime();
        JavaSparkContext spark = new JavaSparkContext(new SparkConf().setAppName("kmeans train k=" + k));
        try {
            Configuration hadoopConf = spark.hadoopConfiguration();
            Path modelPath = new Path(modelDir);
            if (modelPath.getFileSystem(hadoopConf).exists(modelPath)) {
                throw new IllegalStateException(modelDir + " already exists: remove it first");
            }
            // Cached as HiBench's DenseKMeans caches its input: MLlib then keeps only the norms itself, and
            // whether the points fit the storage level decides if later passes read HDFS again.
            JavaRDD<Vector> points = spark.sequenceFile(input, LongWritable.class, BytesWritable.class)
                    .map(record -> Vectors.dense(PointGenerator.decode(record._2())))
                    .persist(storageLevel);

            long loadStart = System.nanoTime();
            long count = points.count();
            double loadSeconds = secondsSince(loadStart);
            System.out.printf("train: read and cached %d points from %s (%d partitions, %s) in %.3f s%n",
                    count, input, points.getNumPartitions(), storageLevel.description(), loadSeconds);

            // MLlib reports, as a model's trainingCost, the cost of the centres an iteration starts from; so
            // the cost of iteration i's centres is known after iteration i+1, and the last one needs a pass.
            List<Double> seconds = new ArrayList<>();
            List<Double> costs = new ArrayList<>();
            long iterationStart = System.nanoTime();
            KMeansModel model = new KMeans().setK(k).setSeed(seed).setInitializationMode(KMeans.K_MEANS_PARALLEL())
                    .setMaxIterations(0).run(points.rdd());
            seconds.add(secondsSince(iterationStart));
            System.out.printf("train: k-means|| initialisation in %.3f s%n", seconds.get(0));
            for (int iteration = 1; iteration <= iterations; iteration++) {
                iterationStart = System.nanoTime();
                model = new KMeans().setK(k).setSeed(seed).setInitialModel(model).setMaxIterations(1).run(points.rdd());
                seconds.add(secondsSince(iterationStart));
                costs.add(model.trainingCost());
                System.out.printf("train: iteration %d in %.3f s; cost before it %.6g%n",
                        iteration, seconds.get(iteration), model.trainingCost());
            }
            long finalCostStart = System.nanoTime();
            costs.add(model.computeCost(points.rdd()));
            double finalCostSeconds = secondsSince(finalCostStart);

            List<Map<String, Object>> perIteration = new ArrayList<>();
            StringBuilder csv = new StringBuilder("iteration,cost,seconds\n");
            for (int iteration = 0; iteration <= iterations; iteration++) {
                Map<String, Object> row = new LinkedHashMap<>();
                row.put("iteration", iteration);
                row.put("cost", costs.get(iteration));
                row.put("seconds", round(seconds.get(iteration)));
                perIteration.add(row);
                csv.append(iteration).append(',').append(costs.get(iteration)).append(',')
                        .append(round(seconds.get(iteration))).append('\n');
            }
            Vector[] found = model.clusterCenters();
            double[][] centres = new double[found.length][];
            for (int c = 0; c < found.length; c++) {
                centres[c] = found[c].toArray();
            }

            Map<String, Object> summary = new LinkedHashMap<>();
            summary.put("subcommand", "train");
            summary.put("ok", true);
            summary.put("input", input);
            summary.put("model", modelDir);
            summary.put("points", count);
            summary.put("input_partitions", points.getNumPartitions());
            summary.put("k", k);
            summary.put("dimensions", centres[0].length);
            summary.put("iterations", iterations);
            summary.put("storage_level", storageLevel.description());
            summary.put("load_seconds", round(loadSeconds));
            summary.put("final_cost_seconds", round(finalCostSeconds));
            summary.put("per_iteration", perIteration);
            summary.put("total_seconds", round(secondsSince(started)));
            summary.put("application_id", spark.sc().applicationId());
            Map<String, Object> modelFile = new LinkedHashMap<>(summary);
            modelFile.put("centres", centres);
            writeSmallFile(new Path(modelPath, "model.json"), hadoopConf, JSON.writeValueAsString(modelFile));
            writeSmallFile(new Path(modelPath, "iterations.csv"), hadoopConf, csv.toString());
            System.out.println(JSON.writeValueAsString(summary));
        } finally {
            spark.stop();
        }
    }

    private static void writeSmallFile(Path path, Configuration conf, String text) throws IOException {
        try (OutputStream out = path.getFileSystem(conf).create(path, false)) {
            out.write(text.getBytes(StandardCharsets.UTF_8));
        }
    }

    private static void usageError(String problem) {
        System.err.println("kmeans-spark: " + problem + "\n" + USAGE);
        System.exit(2);
    }

    private static long parseLong(String text, String name) {
        try {
            return Long.parseLong(text);
        } catch (NumberFormatException e) {
            usageError(name + " must be an integer, got '" + text + "'");
            return 0;
        }
    }

    private static long positiveLong(String text, String name) {
        long value = parseLong(text, name);
        if (value < 1 || (!name.equals("points") && value > Integer.MAX_VALUE)) {
            usageError(name + " must be a positive integer, got '" + text + "'");
        }
        return value;
    }

    private static double positiveDouble(String text, String name) {
        try {
            double value = Double.parseDouble(text);
            if (value > 0 && Double.isFinite(value)) {
                return value;
            }
        } catch (NumberFormatException ignored) {
            // reported below
        }
        usageError(name + " must be a positive number, got '" + text + "'");
        return 0;
    }

    private static StorageLevel storageLevel(String name) {
        try {
            return StorageLevel.fromString(name);
        } catch (IllegalArgumentException e) {
            usageError("unknown storage level '" + name + "' (e.g. MEMORY_ONLY, MEMORY_AND_DISK, DISK_ONLY)");
            return null;
        }
    }

    private static double secondsSince(long nanoTimeStart) {
        return (System.nanoTime() - nanoTimeStart) / 1e9;
    }

    private static double round(double seconds) {
        return Math.round(seconds * 1000) / 1000.0;
    }
}
