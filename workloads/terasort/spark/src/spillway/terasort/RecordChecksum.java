package spillway.terasort;

import java.io.Serializable;
import java.math.BigInteger;
import java.util.zip.CRC32;

/**
 * Order-independent checksum of a set of records, defined exactly like TeraGen's CHECKSUM counter and
 * TeraValidate's "checksum" line: the sum of CRC32(key + value) over all records, as an unsigned
 * 128-bit number printed in lower-case hex without leading zeros. Matching definitions let a run compare
 * its result with TeraValidate's report and TeraGen's counter, not only with itself.
 */
public final class RecordChecksum implements Serializable {
    private static final long serialVersionUID = 1L;

    private long high;
    private long low;

    /** Adds one record; scratch is a caller-owned CRC32 reused across records (it is not thread-safe). */
    public void addRecord(CRC32 scratch, byte[] key, byte[] value) {
        scratch.reset();
        scratch.update(key);
        scratch.update(value);
        addUnsigned(scratch.getValue());
    }

    public void add(RecordChecksum other) {
        addUnsigned(other.low);
        high += other.high;
    }

    private void addUnsigned(long amount) {
        long sum = low + amount;
        if (Long.compareUnsigned(sum, low) < 0) {
            high++;    // carry out of the low 64 bits
        }
        low = sum;
    }

    public String toHex() {
        BigInteger value = new BigInteger(Long.toUnsignedString(high)).shiftLeft(64)
                .add(new BigInteger(Long.toUnsignedString(low)));
        return value.toString(16);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof RecordChecksum && ((RecordChecksum) o).high == high && ((RecordChecksum) o).low == low;
    }

    @Override
    public int hashCode() {
        return Long.hashCode(high) * 31 + Long.hashCode(low);
    }
}
