package spillway.terasort;

import java.io.Serializable;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.zip.CRC32;

import org.apache.hadoop.mapreduce.lib.input.FileSplit;

import scala.Tuple2;

/**
 * What one input split (one whole file when the validator asks for one split per file) contains:
 * record count, checksum, first and last key, and how many neighbouring records are out of order.
 * Computed in a task, collected and compared on the driver.
 */
public final class SplitSummary implements Serializable {
    private static final long serialVersionUID = 1L;
    private static final UnsignedBytesComparator ORDER = new UnsignedBytesComparator();

    public final String path;
    public final long start;
    public long records;
    public long misorderedPairs;
    public String firstMisorder;    // "<previous key> > <key> at record <n>", hex keys
    public byte[] firstKey;
    public byte[] lastKey;
    public final RecordChecksum checksum = new RecordChecksum();

    private SplitSummary(String path, long start) {
        this.path = path;
        this.start = start;
    }

    public static SplitSummary of(FileSplit split, Iterator<Tuple2<byte[], byte[]>> records) {
        SplitSummary summary = new SplitSummary(split.getPath().toString(), split.getStart());
        CRC32 scratch = new CRC32();
        while (records.hasNext()) {
            Tuple2<byte[], byte[]> record = records.next();
            summary.add(scratch, record._1(), record._2());
        }
        return summary;
    }

    private void add(CRC32 scratch, byte[] key, byte[] value) {
        if (firstKey == null) {
            firstKey = key;
        } else if (ORDER.compare(lastKey, key) > 0) {
            misorderedPairs++;
            if (firstMisorder == null) {
                firstMisorder = hex(lastKey) + " > " + hex(key) + " at record " + records;
            }
        }
        lastKey = key;
        records++;
        checksum.addRecord(scratch, key, value);
    }

    public boolean isEmpty() {
        return records == 0;
    }

    /** File path, then offset: the order of the sorted output, as TeraValidate orders part files by name. */
    public static int outputOrder(SplitSummary a, SplitSummary b) {
        int byPath = a.path.compareTo(b.path);
        return byPath != 0 ? byPath : Long.compare(a.start, b.start);
    }

    public static String hex(byte[] bytes) {
        return bytes == null ? null : HexFormat.of().formatHex(bytes);
    }
}
