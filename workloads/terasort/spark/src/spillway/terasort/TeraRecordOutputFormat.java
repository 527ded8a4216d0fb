package spillway.terasort;

import java.io.IOException;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapreduce.RecordWriter;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.hadoop.mapreduce.lib.output.FileOutputFormat;

/**
 * Writes key and value back to back (100-byte records), the layout TeraValidate reads, and creates each
 * part file the way MapReduce TeraSort does: with replication `mapreduce.terasort.output.replication`
 * (default 1, TeraSort's own default) and an hsync before close (TeraSort turns its final sync on).
 *
 * Why not Hadoop's TeraOutputFormat: it creates files with the FileSystem's default replication, and in a
 * Spark executor that FileSystem object is cached from the first HDFS access (reading the input), so a
 * per-job dfs.replication would be ignored and Spark would write more replicas than MapReduce does.
 */
public final class TeraRecordOutputFormat extends FileOutputFormat<byte[], byte[]> {
    /** Same key and default as org.apache.hadoop.examples.terasort.TeraSort. */
    public static final String OUTPUT_REPLICATION = "mapreduce.terasort.output.replication";
    public static final int DEFAULT_OUTPUT_REPLICATION = 1;

    @Override
    public RecordWriter<byte[], byte[]> getRecordWriter(TaskAttemptContext context) throws IOException {
        Configuration conf = context.getConfiguration();
        Path file = getDefaultWorkFile(context, "");
        FileSystem fs = file.getFileSystem(conf);
        short replication = (short) conf.getInt(OUTPUT_REPLICATION, DEFAULT_OUTPUT_REPLICATION);
        int bufferSize = conf.getInt("io.file.buffer.size", 4096);
        FSDataOutputStream out = fs.create(file, false, bufferSize, replication, fs.getDefaultBlockSize(file));
        return new RecordWriter<byte[], byte[]>() {
            @Override
            public void write(byte[] key, byte[] value) throws IOException {
                out.write(key);
                out.write(value);
            }

            @Override
            public void close(TaskAttemptContext ignored) throws IOException {
                out.hsync();
                out.close();
            }
        };
    }
}
