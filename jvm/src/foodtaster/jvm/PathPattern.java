package foodtaster.jvm;

import org.apache.spark.sql.api.java.UDF1;

/**
 * {@code foodtaster_path_pattern(path STRING) -> STRING} for {@code spark.udf.registerJavaFunction}:
 * a path as {@link PathText} prints it, every element index made {@code []}
 * ({@code data.lines[2].discount} -> {@code data.lines[].discount}), as
 * {@code foodtaster.contract.path.Path.pattern} gives it. One scan of the printed grammar: a
 * quoted key ({@code ["..."]}, a JSON string) is copied whole, so a {@code [1]} inside it is a
 * key's text, never an index. Drift counts the unknown keys a scope keeps by their patterns
 * (docs/decisions/022-drift-recorded-from-every-batch.md).
 */
public final class PathPattern implements UDF1<String, String> {
    private static final long serialVersionUID = 1L;

    @Override
    public String call(String path) {
        return pattern(path);
    }

    static String pattern(String path) {
        if (path == null) return null;
        StringBuilder out = new StringBuilder(path.length());
        int i = 0;
        int n = path.length();
        while (i < n) {
            char c = path.charAt(i);
            if (c == '[' && i + 1 < n && path.charAt(i + 1) == '"') {
                int end = i + 2;  // the quoted key's text, its escapes skipped whole
                while (end < n && path.charAt(end) != '"') end += path.charAt(end) == '\\' ? 2 : 1;
                end = Math.min(end + 2, n);  // past the closing quote and bracket
                out.append(path, i, end);
                i = end;
            } else if (c == '[') {
                int end = path.indexOf(']', i);
                if (end < 0) end = n - 1;
                out.append("[]");
                i = end + 1;
            } else {
                out.append(c);
                i++;
            }
        }
        return out.toString();
    }
}
