package foodtaster.jvm;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.StreamReadFeature;

import java.io.IOException;
import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;

/**
 * The bytes, parse and type layers of one message: strict RFC 8259 JSON read from the line's
 * exact bytes, and each contract field typed by its JSON type.
 *
 * <p>A spec names what to look for, so one class serves every contract:
 * {@code max_bytes=1048576;value_chars=200;fields=message_id:string,amount:number,items:integer}.
 *
 * <p>{@link #parse} returns {@code [problems, v1, s1, x1, v2, s2, x2, ...]}: {@code problems} is
 * null for a line that is one JSON object, else a list of {@code [layer, rule, column, message,
 * value]} (the reason record); per field its typed value (null unless ok), its status (see the
 * constants) and, where the status is a wrong type or out of range, the value's JSON text.
 */
public final class StrictLineParser implements Serializable {
    private static final long serialVersionUID = 1L;

    public static final int OK = 0, MISSING = 1, NULL = 2, OUT_OF_RANGE = 3;
    /** A wrong JSON type: WRONG_TYPE + the type found (one of FOUND). */
    public static final int WRONG_TYPE = 10;
    public static final String[] FOUND = {"string", "integer", "number", "boolean", "object", "array"};
    private static final int FOUND_STRING = 0, FOUND_INTEGER = 1, FOUND_NUMBER = 2, FOUND_BOOLEAN = 3,
            FOUND_OBJECT = 4, FOUND_ARRAY = 5;

    public static final int STRING = 0, NUMBER = 1, INTEGER = 2, BOOLEAN = 3;
    private static final String[] TYPES = {"string", "number", "integer", "boolean"};

    /** Spark's Jackson with every leniency off (its default) and duplicate keys refused at any depth;
     * number length unbounded, so a long digit string is judged by its value, not called a syntax error. */
    private static final JsonFactory JSON = JsonFactory.builder()
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .streamReadConstraints(StreamReadConstraints.builder().maxNumberLength(Integer.MAX_VALUE).build())
            .build();
    private static final int MAX_DEPTH = StreamReadConstraints.DEFAULT_MAX_DEPTH;
    // 19 digits may exceed a long; 20 or more always do, and are not parsed at all.
    private static final int LONG_DIGITS = 19;
    // A plain integer literal of more digits than this is beyond any double.
    private static final int DOUBLE_DIGITS = 310;

    private final String[] names;
    private final int[] types;
    private final HashMap<String, Integer> index = new HashMap<>();
    private final int maxBytes;
    private final int valueChars;

    public StrictLineParser(String spec) {
        int maxBytes = -1, valueChars = -1;
        String fields = null;
        for (String part : spec.split(";")) {
            int eq = part.indexOf('=');
            if (eq < 0) throw new IllegalArgumentException("spec part without '=': " + part);
            String key = part.substring(0, eq).trim(), value = part.substring(eq + 1).trim();
            switch (key) {
                case "max_bytes": maxBytes = Integer.parseInt(value); break;
                case "value_chars": valueChars = Integer.parseInt(value); break;
                case "fields": fields = value; break;
                default: throw new IllegalArgumentException("unknown spec key " + key + " in " + spec);
            }
        }
        if (maxBytes < 0 || valueChars < 0 || fields == null) {
            throw new IllegalArgumentException("spec needs max_bytes, value_chars and fields: " + spec);
        }
        this.maxBytes = maxBytes;
        this.valueChars = valueChars;
        String[] parts = fields.isEmpty() ? new String[0] : fields.split(",");
        names = new String[parts.length];
        types = new int[parts.length];
        for (int i = 0; i < parts.length; i++) {
            int colon = parts[i].lastIndexOf(':');
            if (colon <= 0) throw new IllegalArgumentException("field without a type: " + parts[i]);
            names[i] = parts[i].substring(0, colon);
            types[i] = typeOf(parts[i].substring(colon + 1));
            if (index.put(names[i], i) != null) throw new IllegalArgumentException("field twice: " + names[i]);
        }
    }

    private static int typeOf(String name) {
        for (int t = 0; t < TYPES.length; t++) if (TYPES[t].equals(name)) return t;
        throw new IllegalArgumentException("unknown JSON type " + name + "; one of string, number, integer, boolean");
    }

    public int fieldCount() {
        return names.length;
    }

    /** The line's verdict; see the class comment for its shape. */
    public Object[] parse(byte[] line) {
        Object[] out = new Object[1 + 3 * names.length];
        List<Object[]> problems = bytesProblems(line);
        if (problems != null) {
            out[0] = problems;
            return out;
        }
        String problem = parseInto(line, out);
        if (problem != null) {
            out = new Object[out.length];  // no field of a line that is not a message is kept
            out[0] = Collections.<Object[]>singletonList(reason(problem.startsWith("!") ? "json.not_object" : "json.invalid",
                    problem.startsWith("!") ? problem.substring(1) : "not strict JSON (RFC 8259): " + problem,
                    preview(line)));
            return out;
        }
        for (int i = 0; i < names.length; i++) if (out[2 + 3 * i] == null) out[2 + 3 * i] = MISSING;
        return out;
    }

    // ---- the bytes layer -------------------------------------------------------------------

    private List<Object[]> bytesProblems(byte[] b) {
        List<Object[]> found = null;
        if (b.length > maxBytes) {
            found = add(found, new Object[]{"bytes", "line.too_large", null,
                    "message is " + b.length + " bytes, over the limit of " + maxBytes, String.valueOf(b.length)});
        }
        boolean blank = true;
        int nul = -1;
        for (int i = 0; i < b.length; i++) {
            byte c = b[i];
            if (c != ' ' && c != '\t') blank = false;
            if (c == 0 && nul < 0) nul = i;
        }
        if (blank) found = add(found, new Object[]{"bytes", "line.empty", null, "empty line: no message", null});
        int bad = invalidUtf8At(b);
        if (bad >= 0) {
            found = add(found, new Object[]{"bytes", "line.not_utf8", null,
                    "message is not valid UTF-8: byte 0x" + String.format("%02X", b[bad] & 0xFF)
                            + " at column " + (bad + 1) + " starts no valid character", preview(b)});
        }
        if (nul >= 0) {
            found = add(found, new Object[]{"bytes", "line.nul_byte", null,
                    "message holds a NUL byte at column " + (nul + 1), preview(b)});
        }
        return found;
    }

    private static List<Object[]> add(List<Object[]> list, Object[] reason) {
        if (list == null) list = new ArrayList<>(2);
        list.add(reason);
        return list;
    }

    private Object[] reason(String rule, String message, String value) {
        return new Object[]{"parse", rule, null, message, value};
    }

    /** The start of the line as text (invalid bytes replaced), cut to the reason's value length. */
    private String preview(byte[] b) {
        int n = Math.min(b.length, 4 * valueChars);
        String text = new String(b, 0, n, StandardCharsets.UTF_8);
        return cut(text);
    }

    private String cut(String text) {
        if (text.codePointCount(0, text.length()) <= valueChars) return text;
        return text.substring(0, text.offsetByCodePoints(0, valueChars));
    }

    /**
     * The offset of the first byte that starts no valid UTF-8 character (overlong forms, encoded
     * surrogates and code points over U+10FFFF included), or -1.
     */
    static int invalidUtf8At(byte[] b) {
        final int len = b.length;
        int i = 0;
        while (i < len) {
            int c = b[i];
            if (c >= 0) { i++; continue; }
            c &= 0xFF;
            if (c < 0xC2) return i;
            if (c < 0xE0) {
                if (i + 1 >= len || (b[i + 1] & 0xC0) != 0x80) return i;
                i += 2;
            } else if (c < 0xF0) {
                if (i + 2 >= len) return i;
                int c1 = b[i + 1] & 0xFF;
                if ((c1 & 0xC0) != 0x80 || (b[i + 2] & 0xC0) != 0x80) return i;
                if (c == 0xE0 && c1 < 0xA0) return i;
                if (c == 0xED && c1 >= 0xA0) return i;
                i += 3;
            } else if (c < 0xF5) {
                if (i + 3 >= len) return i;
                int c1 = b[i + 1] & 0xFF;
                if ((c1 & 0xC0) != 0x80 || (b[i + 2] & 0xC0) != 0x80 || (b[i + 3] & 0xC0) != 0x80) return i;
                if (c == 0xF0 && c1 < 0x90) return i;
                if (c == 0xF4 && c1 >= 0x90) return i;
                i += 4;
            } else {
                return i;
            }
        }
        return -1;
    }

    // ---- the parse and type layers ---------------------------------------------------------

    /** Fills the fields of {@code out}; returns null for one JSON object, else what is wrong
     * (prefixed with '!' when the line is JSON but not an object). */
    private String parseInto(byte[] b, Object[] out) {
        if (b.length >= 3 && (b[0] & 0xFF) == 0xEF && (b[1] & 0xFF) == 0xBB && (b[2] & 0xFF) == 0xBF) {
            return "a byte order mark (BOM) starts the line";  // Jackson would skip it silently
        }
        int surrogate = loneSurrogateAt(b);
        if (surrogate >= 0) {
            return "the \\u escape at column " + (surrogate + 1)
                    + " is half of a UTF-16 surrogate pair, which no UTF-8 text can hold";
        }
        boolean rootDone = false;
        try (JsonParser p = JSON.createParser(b, 0, b.length)) {
            JsonToken t = p.nextToken();
            if (t == null) return "no JSON value on the line";
            if (t != JsonToken.START_OBJECT) {
                String found = foundName(t);
                p.skipChildren();
                rootDone = true;
                String after = afterRoot(p);
                if (after != null) return after;
                return "!a JSON message must be an object, got " + article(found);
            }
            while ((t = p.nextToken()) == JsonToken.FIELD_NAME) {
                Integer at = index.get(p.currentName());
                t = p.nextToken();
                if (at == null) {
                    p.skipChildren();  // an extra field: still parsed, so its syntax is checked
                    continue;
                }
                typeField(p, t, at, b, out);
            }
            rootDone = true;
            return afterRoot(p);
        } catch (JsonProcessingException e) {
            return explain(e, b, rootDone);
        } catch (IOException e) {
            return String.valueOf(e.getMessage());
        }
    }

    private static String afterRoot(JsonParser p) throws IOException {
        JsonToken next = p.nextToken();
        if (next == null) return null;
        return "more than one JSON value on the line (the second starts at column "
                + (p.currentTokenLocation().getColumnNr()) + ")";
    }

    private void typeField(JsonParser p, JsonToken t, int i, byte[] b, Object[] out) throws IOException {
        int v = 1 + 3 * i;
        if (t == JsonToken.VALUE_NULL) {
            out[v + 1] = NULL;
            return;
        }
        switch (types[i]) {
            case STRING:
                if (t == JsonToken.VALUE_STRING) { out[v] = p.getText(); out[v + 1] = OK; return; }
                break;
            case BOOLEAN:
                if (t == JsonToken.VALUE_TRUE || t == JsonToken.VALUE_FALSE) {
                    out[v] = t == JsonToken.VALUE_TRUE;
                    out[v + 1] = OK;
                    return;
                }
                break;
            case INTEGER:
                if (t == JsonToken.VALUE_NUMBER_INT) {
                    int digits = p.getTextLength() - (p.getTextCharacters()[p.getTextOffset()] == '-' ? 1 : 0);
                    if (digits < LONG_DIGITS || digits == LONG_DIGITS
                            && p.getNumberType() != JsonParser.NumberType.BIG_INTEGER) {
                        out[v] = p.getLongValue();
                        out[v + 1] = OK;
                    } else {
                        outOfRange(p, out, v);
                    }
                    return;
                }
                break;
            default:  // NUMBER: any JSON number, as the nearest double, unless no double comes near it
                if (t == JsonToken.VALUE_NUMBER_INT || t == JsonToken.VALUE_NUMBER_FLOAT) {
                    if (t == JsonToken.VALUE_NUMBER_INT && p.getTextLength() > DOUBLE_DIGITS) {
                        outOfRange(p, out, v);
                        return;
                    }
                    double d = t == JsonToken.VALUE_NUMBER_INT && p.getTextLength() <= 18
                            ? (double) p.getLongValue() : Double.parseDouble(p.getText());
                    if (Double.isInfinite(d) || d == 0.0 && nonZeroDigit(p.getText())) {
                        outOfRange(p, out, v);  // overflows to infinity, or underflows to zero
                    } else {
                        out[v] = d;
                        out[v + 1] = OK;
                    }
                    return;
                }
        }
        out[v + 1] = WRONG_TYPE + found(t);
        out[v + 2] = valueText(p, t, b);
    }

    private void outOfRange(JsonParser p, Object[] out, int v) throws IOException {
        out[v + 1] = OUT_OF_RANGE;
        out[v + 2] = cut(p.getText());
    }

    private static boolean nonZeroDigit(String number) {
        for (int k = 0; k < number.length(); k++) {
            char c = number.charAt(k);
            if (c == 'e' || c == 'E') return false;
            if (c >= '1' && c <= '9') return true;
        }
        return false;
    }

    /** The JSON text of a value of the wrong type, cut; objects and arrays as written on the line. */
    private String valueText(JsonParser p, JsonToken t, byte[] b) throws IOException {
        if (t == JsonToken.START_OBJECT || t == JsonToken.START_ARRAY) {
            long start = p.currentTokenLocation().getByteOffset();
            p.skipChildren();
            long end = p.currentLocation().getByteOffset();
            if (start < 0 || end < start) return t == JsonToken.START_OBJECT ? "{...}" : "[...]";
            int n = (int) Math.min(end - start, 4L * valueChars);
            return cut(new String(b, (int) start, n, StandardCharsets.UTF_8));
        }
        if (t == JsonToken.VALUE_STRING) return cut(quote(p.getText()));
        return cut(p.getText());
    }

    private static String quote(String s) {
        StringBuilder q = new StringBuilder(s.length() + 2).append('"');
        for (int k = 0; k < s.length(); k++) {
            char c = s.charAt(k);
            if (c == '"' || c == '\\') q.append('\\').append(c);
            else if (c < 0x20) q.append(String.format("\\u%04x", (int) c));
            else q.append(c);
        }
        return q.append('"').toString();
    }

    private static int found(JsonToken t) {
        switch (t) {
            case VALUE_STRING: return FOUND_STRING;
            case VALUE_NUMBER_INT: return FOUND_INTEGER;
            case VALUE_NUMBER_FLOAT: return FOUND_NUMBER;
            case VALUE_TRUE: case VALUE_FALSE: return FOUND_BOOLEAN;
            case START_OBJECT: return FOUND_OBJECT;
            default: return FOUND_ARRAY;
        }
    }

    private static String foundName(JsonToken t) {
        return t == JsonToken.VALUE_NULL ? "null" : FOUND[found(t)];
    }

    private static String article(String found) {
        if (found.equals("null")) return "null";
        if (found.equals("number")) return "a non-integer number";
        return (found.equals("integer") || found.equals("object") || found.equals("array") ? "an " : "a ") + found;
    }

    /** Jackson's complaint in a person's words, with the column where it stopped. */
    private static String explain(JsonProcessingException e, byte[] b, boolean rootDone) {
        JsonLocation at = e.getLocation();
        int column = at == null ? -1 : at.getColumnNr();
        String original = String.valueOf(e.getOriginalMessage());
        String where = column > 0 ? " at column " + column : "";
        if (rootDone) return "content after the JSON value" + where;
        if (original.startsWith("Duplicate field")) {
            return "duplicate key " + original.substring("Duplicate field ".length()) + where;
        }
        if (original.startsWith("Unexpected end-of-input")) return "truncated: the line ends mid-value" + where;
        if (original.startsWith("Non-standard token")) return "NaN or Infinity" + where + " (not JSON numbers)";
        if (original.contains("Leading zeroes")) return "a number with a leading zero" + where;
        if (original.contains("Document nesting depth")) {
            return "nested deeper than " + MAX_DEPTH + " levels" + where;
        }
        int offset = column - 1;  // byte input: Jackson counts columns in bytes, from 1
        if (offset >= 0 && offset < b.length) {
            byte c = b[offset];
            if (c == '\'') return "single quotes" + where + " (JSON strings take double quotes)";
            if (c == '/' || c == '#') return "a comment" + where + " (JSON has none)";
            if (c == 'N' || c == 'I' || c == '-' && offset + 1 < b.length && b[offset + 1] == 'I') {
                return "NaN or Infinity" + where + " (not JSON numbers)";
            }
            if ((c == '}' || c == ']') && precededByComma(b, offset)) return "trailing comma" + where;
        }
        String cutMessage = original.length() > 160 ? original.substring(0, 160) + "..." : original;
        return cutMessage.replace('\n', ' ') + where;
    }

    private static boolean precededByComma(byte[] b, int offset) {
        for (int k = offset - 1; k >= 0; k--) {
            byte c = b[k];
            if (c == ' ' || c == '\t' || c == '\r' || c == '\n') continue;
            return c == ',';
        }
        return false;
    }

    /** The offset of a {@code \\u} escape naming half a surrogate pair with no other half, or -1. */
    static int loneSurrogateAt(byte[] b) {
        final int len = b.length;
        for (int i = 0; i + 1 < len; i++) {
            if (b[i] != '\\') continue;
            if (b[i + 1] != 'u') { i++; continue; }  // an escaped character, e.g. \\ or \"
            int u = hex4(b, i + 2);
            if (u >= 0xDC00 && u <= 0xDFFF) return i;
            if (u >= 0xD800 && u <= 0xDBFF) {
                int low = i + 7 < len && b[i + 6] == '\\' && b[i + 7] == 'u' ? hex4(b, i + 8) : -1;
                if (low < 0xDC00 || low > 0xDFFF) return i;
                i += 11;
            } else {
                i += 5;
            }
        }
        return -1;
    }

    private static int hex4(byte[] b, int at) {
        if (at + 4 > b.length) return -1;
        int v = 0;
        for (int k = 0; k < 4; k++) {
            int c = b[at + k], d;
            if (c >= '0' && c <= '9') d = c - '0';
            else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
            else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
            else return -1;
            v = (v << 4) | d;
        }
        return v;
    }
}
