package foodtaster.jvm;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF2;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * {@code strict_line(line BINARY, spec BINARY) -> struct} for {@code spark.udf.registerJavaFunction}.
 *
 * <p>The spec (see {@link StrictLineParser}) is a literal argument rather than a constructor
 * argument, so one class with no arguments serves every contract. A literal arrives as the same
 * array on every row: the parser is rebuilt only when the spec's bytes change.
 *
 * <p>The struct is the parser's output as a row: {@code reasons}, a value, status and text per
 * root slot, then {@code _unexpected} and {@code _unknown}, then each judged array's verdict and
 * written elements; the reasons, the unexpected and unknown keys and every
 * array's elements are rows too, an element's own arrays included.
 */
public final class StrictLineUdf implements UDF2<byte[], byte[], Row> {
    private static final long serialVersionUID = 1L;

    private transient byte[] spec;
    private transient StrictLineParser parser;

    @Override
    public Row call(byte[] line, byte[] spec) {
        if (spec != this.spec) {
            if (this.spec == null || !Arrays.equals(spec, this.spec)) {
                parser = new StrictLineParser(new String(spec, StandardCharsets.UTF_8));
            }
            this.spec = spec;
        }
        if (line == null) return null;
        Object[] out = parser.parse(line);
        if (out[0] != null) out[0] = rows(out[0]);
        for (int v : parser.rootArrays()) if (out[v] != null) out[v] = rows(out[v]);
        int unknown = parser.unknownPlace();
        if (out[unknown - 1] != null) out[unknown - 1] = rows(out[unknown - 1]);  // the unexpected keys
        if (out[unknown] != null) out[unknown] = rows(out[unknown]);
        for (int w : parser.writtenPlaces()) if (out[w] != null) out[w] = written(out[w]);
        return RowFactory.create(out);
    }

    /** A judged array's written elements: an element's values as a row, a scalar as it is. */
    @SuppressWarnings("unchecked")
    private static List<Object> written(Object elements) {
        List<Object> list = (List<Object>) elements;
        for (int k = 0; k < list.size(); k++) {
            Object e = list.get(k);
            if (e instanceof Object[]) list.set(k, RowFactory.create((Object[]) e));
        }
        return list;
    }

    /** A list of records (reasons, or an array's elements) as rows, the lists inside them too. */
    @SuppressWarnings("unchecked")
    private static List<Row> rows(Object records) {
        List<Object[]> list = (List<Object[]>) records;
        List<Row> rows = new ArrayList<>(list.size());
        for (Object[] record : list) {
            for (int k = 0; k < record.length; k++) if (record[k] instanceof List) record[k] = rows(record[k]);
            rows.add(RowFactory.create(record));
        }
        return rows;
    }
}
