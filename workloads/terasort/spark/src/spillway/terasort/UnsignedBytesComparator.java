package spillway.terasort;

import java.io.Serializable;
import java.util.Arrays;
import java.util.Comparator;

/**
 * Orders TeraSort keys the way Hadoop's TeraSort and TeraValidate do (Text.compareTo): byte by byte,
 * each byte taken as unsigned 0..255. Java bytes are signed, so the default order would put 0x80..0xff
 * before 0x00. Serializable because Spark ships it to every task inside the RangePartitioner and sorter.
 */
public final class UnsignedBytesComparator implements Comparator<byte[]>, Serializable {
    private static final long serialVersionUID = 1L;

    @Override
    public int compare(byte[] left, byte[] right) {
        return Arrays.compareUnsigned(left, right);
    }
}
