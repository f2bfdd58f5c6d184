package foodtaster.jvm;

import org.apache.spark.sql.api.java.UDF1;
import org.apache.spark.sql.expressions.UserDefinedFunction;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataTypes;

import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * A row's line number in its file from its row id, for a batch whose file splits were counted
 * ({@code foodtaster.engine.batch.ingest.with_line_numbers}).
 *
 * <p>Spark's {@code monotonically_increasing_id} numbers the rows of a scan task one after the
 * other, and a task reads its splits whole, one after another: each split's rows hold the row
 * ids {@code [first, first + lines)}, and no two splits' ranges meet. So a row's split is the
 * one with the greatest first row id not above the row's, found by a binary search of the
 * splits' first row ids, and its line is {@code rowId - first + linesBefore + 1}. This replaces
 * a hash join on (file path, split start): no per-row hash of the path, and no broadcast.
 *
 * <p>Built from the splits packed as big-endian longs, three a split: first row id, line count,
 * lines of the file before it. A row id that falls in no split fails the task, naming it: a
 * line number is never guessed. {@link #function} gives it to Python as a Spark function.
 */
public final class SplitLineNumbers implements UDF1<Long, Long> {
    private static final long serialVersionUID = 1L;

    private final long[] firstRowIds;
    private final long[] endRowIds;
    private final long[] shifts;

    public SplitLineNumbers(byte[] packed) {
        if (packed.length % 24 != 0) {
            throw new IllegalArgumentException("splits are packed as 3 longs each, got " + packed.length + " bytes");
        }
        int n = packed.length / 24;
        long[][] splits = new long[n][];
        ByteBuffer buffer = ByteBuffer.wrap(packed);
        for (int i = 0; i < n; i++) {
            splits[i] = new long[] {buffer.getLong(), buffer.getLong(), buffer.getLong()};
        }
        Arrays.sort(splits, (a, b) -> Long.compare(a[0], b[0]));
        firstRowIds = new long[n];
        endRowIds = new long[n];
        shifts = new long[n];
        for (int i = 0; i < n; i++) {
            long first = splits[i][0], lines = splits[i][1], before = splits[i][2];
            if (lines < 1 || before < 0) {
                throw new IllegalArgumentException("split at row id " + first + ": " + lines
                        + " lines, " + before + " before it");
            }
            if (i > 0 && first < endRowIds[i - 1]) {
                throw new IllegalArgumentException("splits at row ids " + firstRowIds[i - 1] + " and "
                        + first + " overlap");
            }
            firstRowIds[i] = first;
            endRowIds[i] = first + lines;
            shifts[i] = before + 1 - first;
        }
    }

    /**
     * The function of a batch's splits, typed here: through Py4J, {@code functions.udf(instance,
     * type)} may resolve to the untyped {@code udf(Object, DataType)}, which Spark refuses
     * (UNTYPED_SCALA_UDF), as Java lists the overloads in no fixed order.
     */
    public static UserDefinedFunction function(byte[] packed) {
        return functions.udf(new SplitLineNumbers(packed), DataTypes.LongType);
    }

    @Override
    public Long call(Long rowId) {
        if (rowId == null) return null;
        return lineNumber(rowId);
    }

    /** The 1-based line number of the row with {@code rowId} in its file. */
    public long lineNumber(long rowId) {
        int at = Arrays.binarySearch(firstRowIds, rowId);
        int split = at >= 0 ? at : -at - 2;
        if (split < 0 || rowId >= endRowIds[split]) {
            throw new IllegalStateException("row id " + rowId + " is in none of the batch's "
                    + firstRowIds.length + " counted file splits");
        }
        return rowId + shifts[split];
    }
}
