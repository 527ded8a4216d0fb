package spillway.terasort;

import java.io.EOFException;
import java.io.IOException;

import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapreduce.InputSplit;
import org.apache.hadoop.mapreduce.RecordReader;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormat;
import org.apache.hadoop.mapreduce.lib.input.FileSplit;

/**
 * Reads TeraGen/TeraSort files: back-to-back 100-byte records, a 10-byte key then a 90-byte value, no
 * separators. A split owns the records whose first byte lies inside it, so splits of any size cover
 * every record exactly once (the same rule as Hadoop's TeraInputFormat).
 *
 * Why our own format instead of org.apache.hadoop.examples.terasort.TeraInputFormat: the 3.4.2 reader
 * opens files with FSBuilder methods that Spark's bundled hadoop-client 3.3.4 lacks (NoSuchMethodError),
 * and it reuses one Text per record, which Spark's sampling would keep references to.
 *
 * Keys and values are fresh byte arrays per record, so Spark may hold on to them (sampling, sorting).
 */
public final class TeraRecordInputFormat extends FileInputFormat<byte[], byte[]> {
    public static final int KEY_LENGTH = 10;
    public static final int VALUE_LENGTH = 90;
    public static final int RECORD_LENGTH = KEY_LENGTH + VALUE_LENGTH;

    @Override
    public RecordReader<byte[], byte[]> createRecordReader(InputSplit split, TaskAttemptContext context) {
        return new TeraRecordReader();
    }

    static final class TeraRecordReader extends RecordReader<byte[], byte[]> {
        private FSDataInputStream in;
        private Path path;
        private long position;    // file offset of the next record
        private long splitEnd;    // records starting at or after this offset belong to the next split
        private long splitStart;
        private byte[] key;
        private byte[] value;

        @Override
        public void initialize(InputSplit genericSplit, TaskAttemptContext context) throws IOException {
            FileSplit split = (FileSplit) genericSplit;
            path = split.getPath();
            splitStart = split.getStart();
            splitEnd = splitStart + split.getLength();
            position = firstRecordAtOrAfter(splitStart);
            FileSystem fs = path.getFileSystem(context.getConfiguration());
            in = fs.open(path);
            in.seek(position);
        }

        private static long firstRecordAtOrAfter(long offset) {
            return (offset + RECORD_LENGTH - 1) / RECORD_LENGTH * RECORD_LENGTH;
        }

        @Override
        public boolean nextKeyValue() throws IOException {
            if (position >= splitEnd) {
                return false;
            }
            byte[] nextKey = new byte[KEY_LENGTH];
            int keyRead = readUpTo(nextKey);
            if (keyRead == 0) {
                return false;    // clean end of file
            }
            byte[] nextValue = new byte[VALUE_LENGTH];
            if (keyRead < KEY_LENGTH || readUpTo(nextValue) < VALUE_LENGTH) {
                throw new EOFException(path + " ends inside the record at offset " + position
                        + ": its length is not a multiple of " + RECORD_LENGTH + " bytes (truncated or not TeraGen data)");
            }
            key = nextKey;
            value = nextValue;
            position += RECORD_LENGTH;
            return true;
        }

        /** Fills the buffer unless the file ends first; returns the number of bytes read. */
        private int readUpTo(byte[] buffer) throws IOException {
            int filled = 0;
            while (filled < buffer.length) {
                int n = in.read(buffer, filled, buffer.length - filled);
                if (n < 0) {
                    break;
                }
                filled += n;
            }
            return filled;
        }

        @Override
        public byte[] getCurrentKey() {
            return key;
        }

        @Override
        public byte[] getCurrentValue() {
            return value;
        }

        @Override
        public float getProgress() {
            long length = splitEnd - splitStart;
            return length <= 0 ? 1.0f : Math.min(1.0f, (position - splitStart) / (float) length);
        }

        @Override
        public void close() throws IOException {
            if (in != null) {
                in.close();
            }
        }
    }
}
