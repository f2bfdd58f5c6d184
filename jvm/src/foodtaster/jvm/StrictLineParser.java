package foodtaster.jvm;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.core.exc.StreamConstraintsException;

import java.io.IOException;
import java.io.Serializable;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The bytes, parse and type layers of one message: strict RFC 8259 JSON read from the line's
 * exact bytes, and each contract field, at any depth, typed by its JSON type in the same pass.
 *
 * <p>A spec (JSON) names what to look for, so one class serves every contract:
 * <pre>{"max_bytes": 1048576, "value_chars": 200, "strict": false, "fields": [slot, ...]}</pre>
 * and, for a JSON Schema contract, {@code "whole_numbers": true}: an integer slot then takes any
 * JSON number whose value is whole ({@code 1.0}, {@code 1e2}), as JSON Schema (draft 6 on) counts
 * integers; without it an integer is a JSON integer literal, as pandera's {@code int} is.
 * A slot is {@code {"path": ["data", "customer", "email"], "type": T}}: the keys from its scope's
 * object (the message, or an array's element) down to the value. T is string, number, integer,
 * boolean, date, decimal (with {@code precision} and {@code scale}), object (every object ancestor
 * of a slot is a slot itself, listed before it) or array (with {@code items}: a scalar
 * {@code {"type": T}} or an element scope {@code {"type": "object", "strict": b, "fields": [...]}}).
 * A scope's {@code strict} is pandera's Config.strict for the keys it does not name, at its own
 * level or inside its objects: true reports each, false keeps each with its JSON text, "filter"
 * drops them.
 *
 * <p>{@link #parse} returns {@code [problems, v1, s1, x1, v2, s2, x2, ..., unexpected, unknown]}:
 * {@code problems} is null for a line that is one JSON object, else a list of {@code [layer,
 * rule, column, message, value]} (the reason record); per root slot its typed value (null unless
 * ok), its status (see the constants) and, where the status is a wrong type, out of range or
 * invalid, the value's JSON text; {@code unexpected} is null or the {@code [path, pattern]} of each
 * key strict scopes did not name ({@code data.lines[2].colour}, {@code data.lines[].colour}), in
 * document order; {@code unknown} null or
 * the {@code [path, json]} of each key a keeping scope did not name. An array's value is a
 * list of elements: {@code [status, text, v1, s1, x1, ...]} for an element scope,
 * {@code [status, text, value]} for scalar items.
 *
 * <p>An array at the message's level whose items say {@code "judge": true} is judged here
 * (ElementRules; docs/decisions/025-element-rules-judged-in-the-parser.md): its element slots may
 * say {@code required}, {@code nullable} and {@code checks}, and after {@code unknown} come, per
 * such array in slot order, whether every element passes (null unless the array is one) and its
 * elements as written to valid/ (each element's slot values, null for an element that is no
 * object, or the scalars); its value then holds the elements only where one fails.
 */
public final class StrictLineParser implements Serializable {
    private static final long serialVersionUID = 3L;

    public static final int OK = 0, MISSING = 1, NULL = 2, OUT_OF_RANGE = 3, INVALID = 4, UNJUDGED = 5;
    /** A wrong JSON type: WRONG_TYPE + the type found (one of FOUND). */
    public static final int WRONG_TYPE = 10;
    public static final String[] FOUND = {"string", "integer", "number", "boolean", "object", "array"};
    private static final int FOUND_STRING = 0, FOUND_INTEGER = 1, FOUND_NUMBER = 2, FOUND_BOOLEAN = 3,
            FOUND_OBJECT = 4, FOUND_ARRAY = 5;

    /** JSON: any value, kept as its JSON text (a JSON null as the text {@code null}, so it stays apart
     * from a missing key): where a contract allows several types, as a JSON Schema type union. */
    public static final int STRING = 0, NUMBER = 1, INTEGER = 2, BOOLEAN = 3, DECIMAL = 4, DATE = 5,
            OBJECT = 6, ARRAY = 7, JSON_TEXT = 8;
    private static final String[] TYPES = {"string", "number", "integer", "boolean", "decimal", "date",
            "object", "array", "json"};
    // Spark's largest decimal
    private static final int MAX_PRECISION = 38;

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
    // parseInto's marks of a line that is JSON but no message: not an object, or nested too deep
    private static final char NOT_OBJECT = '\u0001', TOO_DEEP = '\u0002';

    /** A slot of a scope, or an array's items. */
    private static final class Node implements Serializable {
        private static final long serialVersionUID = 1L;
        final String key;  // the last key of the path; null for an array's items
        final int type, precision, scale;
        int slot;  // the slot's place in its scope: value at base + 3 * slot
        HashMap<String, Node> children;  // an object node's, by key
        // every slot under an object node, at any depth: its null or wrong type decides them
        int[] descendants = new int[0];
        Node items;  // an array node's
        Scope scope;  // object items': the element's own scope
        // An element slot's rules, judged here when its array is judged (ElementRules): a missing
        // value fails when required, a null when not nullable, a wrong type or out of range always.
        boolean required;
        boolean nullable = true;
        ElementRules[] rules;
        boolean judged;  // an array whose elements the parser judges (its items' "judge")
        int place = -1;  // a judged root array's output place: its verdict, then its written elements

        Node(String key, int type, int precision, int scale) {
            this.key = key;
            this.type = type;
            this.precision = precision;
            this.scale = scale;
        }
    }

    /** The message, or an array's element: the slots read from one object. */
    private static final class Scope implements Serializable {
        private static final long serialVersionUID = 1L;
        final boolean strict;  // an unknown key is unexpected (pandera's Config.strict = True)
        final boolean keep;  // an unknown key is kept with its JSON text (Config.strict = False)
        final Node[] slots;
        final HashMap<String, Node> top;  // the slots at the scope's own level, by key

        Scope(boolean strict, boolean keep, Node[] slots, HashMap<String, Node> top) {
            this.strict = strict;
            this.keep = keep;
            this.slots = slots;
            this.top = top;
        }
    }

    /**
     * One line's state beyond its output: the keys and indices from the message down to where the
     * walk is, kept only when some scope is strict or keeps unknown keys; the unexpected keys'
     * paths found so far, and the kept ones' paths with their JSON text.
     */
    private static final class Walk {
        String[] keys = new String[8];  // null where the step is an array index
        int[] indices = new int[8];
        int depth;
        List<Object[]> unexpected;
        List<Object[]> unknown;

        void push(String key, int index) {
            if (depth == keys.length) {
                keys = Arrays.copyOf(keys, 2 * depth);
                indices = Arrays.copyOf(indices, 2 * depth);
            }
            keys[depth] = key;
            indices[depth++] = index;
        }

        void pop() {
            depth--;
        }

        void unexpected(String key) {
            if (unexpected == null) unexpected = new ArrayList<>(2);
            unexpected.add(new Object[]{path(key, false), path(key, true)});
        }

        void keep(String key, String json) {
            if (unknown == null) unknown = new ArrayList<>(2);
            unknown.add(new Object[]{path(key, false), json});
        }

        /** The path of a key under the walk's place, printed as PathText says; as a pattern
         * ({@code lines[].colour}), every index is {@code []}. */
        private String path(String key, boolean pattern) {
            StringBuilder path = new StringBuilder();
            for (int k = 0; k < depth; k++) {
                if (keys[k] == null) {
                    path.append('[');
                    if (!pattern) path.append(indices[k]);
                    path.append(']');
                } else {
                    PathText.appendKey(path, keys[k]);
                }
            }
            PathText.appendKey(path, key);
            return path.toString();
        }
    }

    private final Scope root;
    private final boolean anyPaths;  // some scope reports or keeps unknown keys, by their paths
    private final int[] rootArrays;  // the output places of the root's array values
    private final Node[] judgedArrays;  // the root's arrays whose elements are judged here
    private final int maxBytes;
    private final int valueChars;
    private final boolean wholeNumbers;  // an integer slot takes 1.0 and 1e2 (JSON Schema's integer)

    public StrictLineParser(String spec) {
        Map<String, Object> top = object(readSpec(spec), "the spec", "max_bytes", "value_chars", "strict", "fields",
                "whole_numbers");
        Object maxBytes = top.get("max_bytes"), valueChars = top.get("value_chars");
        if (!(maxBytes instanceof Integer) || !(valueChars instanceof Integer) || !top.containsKey("fields")) {
            throw new IllegalArgumentException("spec needs max_bytes, value_chars (integers) and fields: " + spec);
        }
        this.maxBytes = (Integer) maxBytes;
        this.valueChars = (Integer) valueChars;
        Object whole = top.getOrDefault("whole_numbers", Boolean.FALSE);
        if (!(whole instanceof Boolean)) throw new IllegalArgumentException("whole_numbers is true or false: " + spec);
        this.wholeNumbers = (Boolean) whole;
        boolean[] strictSeen = {false};
        root = scope(top, "the spec", strictSeen);
        anyPaths = strictSeen[0];
        int arrays = 0;
        for (Node n : root.slots) if (n.type == ARRAY) arrays++;
        rootArrays = new int[arrays];
        arrays = 0;
        for (Node n : root.slots) if (n.type == ARRAY) rootArrays[arrays++] = 1 + 3 * n.slot;
        List<Node> judged = new ArrayList<>();
        for (Node n : root.slots) {
            if (n.type == ARRAY && n.judged) {
                n.place = 3 + 3 * root.slots.length + 2 * judged.size();
                judged.add(n);
            }
        }
        judgedArrays = judged.toArray(new Node[0]);
    }

    // ---- the spec --------------------------------------------------------------------------

    private static Object readSpec(String spec) {
        try (JsonParser p = JSON.createParser(spec)) {
            JsonToken t = p.nextToken();
            if (t == null) throw new IllegalArgumentException("the spec is empty");
            Object value = tree(p, t);
            if (p.nextToken() != null) throw new IllegalArgumentException("the spec holds more than one JSON value");
            return value;
        } catch (IOException e) {
            throw new IllegalArgumentException("the spec is not JSON: " + e.getMessage(), e);
        }
    }

    private static Object tree(JsonParser p, JsonToken t) throws IOException {
        switch (t) {
            case START_OBJECT: {
                Map<String, Object> map = new LinkedHashMap<>();
                while (p.nextToken() == JsonToken.FIELD_NAME) {
                    String key = p.currentName();
                    map.put(key, tree(p, p.nextToken()));
                }
                return map;
            }
            case START_ARRAY: {
                List<Object> list = new ArrayList<>();
                while ((t = p.nextToken()) != JsonToken.END_ARRAY) list.add(tree(p, t));
                return list;
            }
            case VALUE_STRING: return p.getText();
            case VALUE_NUMBER_INT: return p.getNumberType() == JsonParser.NumberType.INT ? p.getIntValue() : p.getText();
            case VALUE_TRUE: return Boolean.TRUE;
            case VALUE_FALSE: return Boolean.FALSE;
            case VALUE_NULL: return null;
            default: return p.getText();
        }
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> object(Object value, String where, String... keys) {
        if (!(value instanceof Map)) throw new IllegalArgumentException(where + " must be a JSON object: " + value);
        Map<String, Object> map = (Map<String, Object>) value;
        for (String key : map.keySet()) {
            if (!Arrays.asList(keys).contains(key)) {
                throw new IllegalArgumentException("unknown spec key " + key + " in " + where + "; one of "
                        + String.join(", ", keys));
            }
        }
        return map;
    }

    /** A scope's `strict`, as pandera's Config.strict: true, false (unknown keys kept) or "filter". */
    private static Object strict(Map<String, Object> scope, String where) {
        Object strict = scope.get("strict");
        if (strict != null && !(strict instanceof Boolean) && !"filter".equals(strict)) {
            throw new IllegalArgumentException("strict of " + where + " must be true, false or \"filter\": " + strict);
        }
        return strict == null ? Boolean.FALSE : strict;
    }

    /** A scope from its spec object: its fields, each object's children and descendants. */
    /** Keys as a path prints (PathText): a key holding a dot stays one name in a message. */
    private static String printed(List<String> keys) {
        StringBuilder out = new StringBuilder();
        for (String key : keys) PathText.appendKey(out, key);
        return out.toString();
    }

    private static Scope scope(Map<String, Object> spec, String where, boolean[] strictSeen) {
        Object mode = strict(spec, where);
        boolean strict = Boolean.TRUE.equals(mode), keep = Boolean.FALSE.equals(mode);
        strictSeen[0] |= strict || keep;
        Object fields = spec.get("fields");
        if (!(fields instanceof List)) throw new IllegalArgumentException("fields of " + where + " must be a list");
        List<?> list = (List<?>) fields;
        Node[] slots = new Node[list.size()];
        HashMap<String, Node> top = new HashMap<>();
        Map<List<String>, Node> byPath = new HashMap<>();
        for (int i = 0; i < slots.length; i++) {
            Map<String, Object> slot = object(list.get(i), "a field of " + where,
                    "path", "type", "precision", "scale", "items", "required", "nullable", "checks");
            List<String> path = path(slot.get("path"), where);
            String name = printed(path);
            Node node = node(slot, path.get(path.size() - 1), "field " + name, strictSeen);
            node.slot = i;
            if (byPath.put(path, node) != null) throw new IllegalArgumentException("field twice: " + name);
            if (path.size() == 1) {
                top.put(node.key, node);
            } else {
                Node parent = byPath.get(path.subList(0, path.size() - 1));
                if (parent == null || parent.type != OBJECT) {
                    throw new IllegalArgumentException("field " + name + " needs its parent "
                            + printed(path.subList(0, path.size() - 1))
                            + " listed before it as an object field");
                }
                parent.children.put(node.key, node);
                for (int k = 1; k < path.size(); k++) {
                    Node ancestor = byPath.get(path.subList(0, k));
                    ancestor.descendants = Arrays.copyOf(ancestor.descendants, ancestor.descendants.length + 1);
                    ancestor.descendants[ancestor.descendants.length - 1] = i;
                }
            }
            slots[i] = node;
        }
        return new Scope(strict, keep, slots, top);
    }

    private static List<String> path(Object value, String where) {
        if (!(value instanceof List) || ((List<?>) value).isEmpty()) {
            throw new IllegalArgumentException("a field of " + where + " needs a path, a non-empty list of keys: " + value);
        }
        List<String> path = new ArrayList<>();
        for (Object key : (List<?>) value) {
            if (!(key instanceof String)) throw new IllegalArgumentException("a path's keys are strings: " + value);
            path.add((String) key);
        }
        return path;
    }

    /** A slot's or an items' node: its type, a decimal's precision and scale, an array's items. */
    private static Node node(Map<String, Object> spec, String key, String where, boolean[] strictSeen) {
        Object typeName = spec.get("type");
        int type = -1;
        for (int t = 0; t < TYPES.length; t++) if (TYPES[t].equals(typeName)) type = t;
        if (type < 0) {
            throw new IllegalArgumentException("unknown JSON type " + typeName + " of " + where + "; one of "
                    + String.join(", ", TYPES));
        }
        int precision = 0, scale = 0;
        if (type == DECIMAL) {
            Object p = spec.get("precision"), s = spec.get("scale");
            if (!(p instanceof Integer) || !(s instanceof Integer)) {
                throw new IllegalArgumentException("decimal " + where + " needs precision and scale (integers)");
            }
            precision = (Integer) p;
            scale = (Integer) s;
            if (precision < 1 || precision > MAX_PRECISION || scale < 0 || scale > precision) {
                throw new IllegalArgumentException("decimal " + where + " needs 1 <= precision <= " + MAX_PRECISION
                        + " and 0 <= scale <= precision, got (" + precision + ", " + scale + ")");
            }
        } else if (spec.containsKey("precision") || spec.containsKey("scale")) {
            throw new IllegalArgumentException(where + " is no decimal: precision and scale are a decimal's");
        }
        if (type != ARRAY && spec.containsKey("items")) {
            throw new IllegalArgumentException(where + " is no array: items are an array's");
        }
        Node node = new Node(key, type, precision, scale);
        node.required = Boolean.TRUE.equals(spec.get("required"));
        node.nullable = !Boolean.FALSE.equals(spec.get("nullable"));
        node.rules = ElementRules.of(spec.get("checks"), where);
        if (type == OBJECT) node.children = new HashMap<>();
        if (type == ARRAY) {
            if (!spec.containsKey("items")) throw new IllegalArgumentException("array " + where + " needs items");
            Map<String, Object> items = object(spec.get("items"), "the items of " + where,
                    "type", "precision", "scale", "strict", "fields", "judge", "nullable", "checks");
            node.judged = Boolean.TRUE.equals(items.get("judge"));
            if ("object".equals(items.get("type"))) {
                if (items.containsKey("precision") || items.containsKey("scale")) {
                    throw new IllegalArgumentException("the items of " + where + " are objects: no precision or scale");
                }
                node.items = new Node(null, OBJECT, 0, 0);
                node.items.scope = scope(items, "the items of " + where, strictSeen);
            } else if ("array".equals(items.get("type"))) {
                throw new IllegalArgumentException("the items of " + where + " are objects or scalars, not arrays");
            } else {
                if (items.containsKey("strict") || items.containsKey("fields")) {
                    throw new IllegalArgumentException("the items of " + where + " are scalars: no strict or fields");
                }
                node.items = node(items, null, "the items of " + where, strictSeen);
            }
        }
        return node;
    }

    public int fieldCount() {
        return root.slots.length;
    }

    /** The output place of the unknown keys kept, for StrictLineUdf. */
    int unknownPlace() {
        return 2 + 3 * root.slots.length;
    }

    /** The output places ({@code 1 + 3 * slot}) of the root's array values, for StrictLineUdf. */
    int[] rootArrays() {
        return rootArrays;
    }

    /** The output places of the root's judged arrays' written elements, for StrictLineUdf; each
     * array's verdict is the place before. */
    int[] writtenPlaces() {
        int[] places = new int[judgedArrays.length];
        for (int i = 0; i < places.length; i++) places[i] = judgedArrays[i].place + 1;
        return places;
    }

    /** The line's verdict; see the class comment for its shape. */
    public Object[] parse(byte[] line) {
        int n = root.slots.length;
        Object[] out = new Object[3 + 3 * n + 2 * judgedArrays.length];
        List<Object[]> problems = bytesProblems(line);
        if (problems != null) {
            out[0] = problems;
            return out;
        }
        Walk walk = anyPaths ? new Walk() : null;
        String problem = parseInto(line, out, walk);
        if (problem != null) {
            out = new Object[out.length];  // no field of a line that is not a message is kept
            String rule = "json.invalid", message = "not strict JSON (RFC 8259): " + problem;
            if (problem.charAt(0) == TOO_DEEP) {
                rule = "json.too_deep";
                message = problem.substring(1);
            } else if (problem.charAt(0) == NOT_OBJECT) {
                rule = "json.not_object";
                message = problem.substring(1);
            }
            out[0] = Collections.<Object[]>singletonList(reason(rule, message, preview(line)));
            return out;
        }
        for (int i = 0; i < n; i++) if (out[2 + 3 * i] == null) out[2 + 3 * i] = MISSING;
        if (walk != null) {
            out[1 + 3 * n] = walk.unexpected;
            out[2 + 3 * n] = walk.unknown;
        }
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
     * (marked NOT_OBJECT when the line is JSON but not an object, TOO_DEEP when nested too deep). */
    private String parseInto(byte[] b, Object[] out, Walk walk) {
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
                return NOT_OBJECT + "a JSON message must be an object, got " + article(found);
            }
            readMembers(p, root.top, root, out, 1, b, walk);
            rootDone = true;
            return afterRoot(p);
        } catch (StreamConstraintsException e) {
            int at = tooDeepAt(b);  // Jackson's other limits (a key's length) are syntax it refuses
            if (at >= 0) return TOO_DEEP + "nested deeper than " + MAX_DEPTH + " levels at column " + (at + 1);
            return explain(e, b, rootDone);
        } catch (JsonProcessingException e) {
            return explain(e, b, rootDone);
        } catch (IOException e) {
            return String.valueOf(e.getMessage());
        }
    }

    /**
     * Reads the members of an object whose start was read, into the slots of {@code scope} at
     * {@code out[base + 3 * slot]}: the scope's own level when {@code keys} is its top, else one
     * of its object nodes.
     */
    private void readMembers(JsonParser p, HashMap<String, Node> keys, Scope scope, Object[] out, int base,
                             byte[] b, Walk walk) throws IOException {
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            Node node = keys.get(p.currentName());
            if (node == null) {
                String key = p.currentName();
                JsonToken t = p.nextToken();
                if (scope.keep) {
                    walk.keep(key, jsonText(p, t, b));
                } else {
                    if (scope.strict) walk.unexpected(key);
                    p.skipChildren();  // an extra field: still parsed, so its syntax is checked
                }
                continue;
            }
            JsonToken t = p.nextToken();
            int v = base + 3 * node.slot;
            switch (node.type) {
                case OBJECT:
                    if (t == JsonToken.START_OBJECT) {
                        out[v + 1] = OK;
                        if (walk != null) walk.push(node.key, 0);
                        readMembers(p, node.children, scope, out, base, b, walk);
                        if (walk != null) walk.pop();
                    } else {
                        notContainer(p, t, node, out, base, b);
                    }
                    break;
                case ARRAY:
                    if (t == JsonToken.START_ARRAY) {
                        if (walk != null) walk.push(node.key, 0);
                        List<Object[]> elements = readElements(p, node.items, b, walk);
                        if (walk != null) walk.pop();
                        out[v + 1] = OK;
                        if (node.place < 0) {
                            out[v] = elements;
                        } else {
                            boolean passed = allPass(elements, node.items);
                            out[node.place] = passed;
                            out[node.place + 1] = written(elements, node.items);
                            if (!passed) out[v] = elements;  // the reasons read them, on failed messages only
                        }
                    } else {
                        notContainer(p, t, node, out, base, b);
                    }
                    break;
                default:
                    typeScalar(p, t, node, out, v, v + 1, v + 2, b);
            }
        }
    }

    /** A value's whole JSON text: an object or array as written on the line, a scalar re-written. */
    private static String jsonText(JsonParser p, JsonToken t, byte[] b) throws IOException {
        if (t == JsonToken.START_OBJECT || t == JsonToken.START_ARRAY) {
            int start = (int) p.currentTokenLocation().getByteOffset();
            p.skipChildren();
            int end = (int) p.currentLocation().getByteOffset();
            return new String(b, start, end - start, StandardCharsets.UTF_8);
        }
        if (t == JsonToken.VALUE_STRING) return quote(p.getText());
        return p.getText();
    }

    /** An object or array node that holds something else: null, or a wrong type that leaves the
     * slots under it unjudged. */
    private void notContainer(JsonParser p, JsonToken t, Node node, Object[] out, int base, byte[] b)
            throws IOException {
        int v = base + 3 * node.slot;
        Integer under;
        if (t == JsonToken.VALUE_NULL) {
            out[v + 1] = NULL;
            under = NULL;
        } else {
            out[v + 1] = WRONG_TYPE + found(t);
            out[v + 2] = valueText(p, t, b);
            under = UNJUDGED;
        }
        for (int d : node.descendants) out[base + 3 * d + 1] = under;
    }

    /** An array's elements, its start read: each {@code [status, text, value]} for scalar items,
     * {@code [status, text, v1, s1, x1, ...]} for an element scope. */
    private List<Object[]> readElements(JsonParser p, Node items, byte[] b, Walk walk) throws IOException {
        List<Object[]> elements = new ArrayList<>();
        Scope scope = items.scope;
        JsonToken t;
        while ((t = p.nextToken()) != JsonToken.END_ARRAY) {
            if (scope == null) {
                Object[] element = new Object[3];
                typeScalar(p, t, items, element, 2, 0, 1, b);
                elements.add(element);
                continue;
            }
            Object[] element = new Object[2 + 3 * scope.slots.length];
            if (t == JsonToken.START_OBJECT) {
                element[0] = OK;
                if (walk != null) walk.push(null, elements.size());
                readMembers(p, scope.top, scope, element, 2, b, walk);
                if (walk != null) walk.pop();
                for (int i = 3; i < element.length; i += 3) if (element[i] == null) element[i] = MISSING;
            } else if (t == JsonToken.VALUE_NULL) {
                element[0] = NULL;
            } else {
                element[0] = WRONG_TYPE + found(t);
                element[1] = valueText(p, t, b);
            }
            elements.add(element);
        }
        return elements;
    }

    /** Whether every element of a judged array passes its slots' types and rules. */
    private static boolean allPass(List<Object[]> elements, Node items) {
        Scope scope = items.scope;
        for (Object[] e : elements) {
            if (scope == null) {
                if (!slotPasses(items, e[2], (Integer) e[0])) return false;
                continue;
            }
            if ((Integer) e[0] != OK) return false;  // a null or a wrong type: no element object
            for (Node n : scope.slots) {
                int v = 2 + 3 * n.slot;
                if (!slotPasses(n, e[v], (Integer) e[v + 1])) return false;
            }
        }
        return true;
    }

    private static boolean slotPasses(Node node, Object value, int status) {
        switch (status) {
            case OK:
                for (ElementRules rule : node.rules) if (!rule.passes(value)) return false;
                return true;
            case MISSING: return !node.required;
            case NULL: return node.nullable;
            default: return false;  // out of range, not a date, a wrong type
        }
    }

    /** A judged array's elements as written to valid/: an element scope's values in its slots'
     * order (null for an element that is no object), or the scalars. */
    private static List<Object> written(List<Object[]> elements, Node items) {
        List<Object> out = new ArrayList<>(elements.size());
        Scope scope = items.scope;
        for (Object[] e : elements) {
            if (scope == null) {
                out.add(e[2]);
            } else if ((Integer) e[0] != OK) {
                out.add(null);
            } else {
                Object[] values = new Object[scope.slots.length];
                for (int i = 0; i < values.length; i++) values[i] = e[2 + 3 * i];
                out.add(values);
            }
        }
        return out;
    }

    private static String afterRoot(JsonParser p) throws IOException {
        JsonToken next = p.nextToken();
        if (next == null) return null;
        return "more than one JSON value on the line (the second starts at column "
                + (p.currentTokenLocation().getColumnNr()) + ")";
    }

    /** Types a scalar at {@code out[v]} (value), {@code out[s]} (status) and {@code out[x]} (text). */
    private void typeScalar(JsonParser p, JsonToken t, Node node, Object[] out, int v, int s, int x, byte[] b)
            throws IOException {
        if (node.type == JSON_TEXT) {
            out[v] = jsonText(p, t, b);
            out[s] = OK;
            return;
        }
        if (t == JsonToken.VALUE_NULL) {
            out[s] = NULL;
            return;
        }
        switch (node.type) {
            case STRING:
                if (t == JsonToken.VALUE_STRING) { out[v] = p.getText(); out[s] = OK; return; }
                break;
            case BOOLEAN:
                if (t == JsonToken.VALUE_TRUE || t == JsonToken.VALUE_FALSE) {
                    out[v] = t == JsonToken.VALUE_TRUE;
                    out[s] = OK;
                    return;
                }
                break;
            case INTEGER:
                if (t == JsonToken.VALUE_NUMBER_INT) {
                    int digits = p.getTextLength() - (p.getTextCharacters()[p.getTextOffset()] == '-' ? 1 : 0);
                    if (digits < LONG_DIGITS || digits == LONG_DIGITS
                            && p.getNumberType() != JsonParser.NumberType.BIG_INTEGER) {
                        out[v] = p.getLongValue();
                        out[s] = OK;
                    } else {
                        outOfRange(p, out, s, x);
                    }
                    return;
                }
                if (t == JsonToken.VALUE_NUMBER_FLOAT && wholeNumbers) {
                    int whole = wholeLong(p.getText(), out, v);
                    if (whole != NOT_WHOLE) {
                        if (whole == OK) out[s] = OK; else outOfRange(p, out, s, x);
                        return;
                    }
                }
                break;
            case DECIMAL:
                if (t == JsonToken.VALUE_NUMBER_INT || t == JsonToken.VALUE_NUMBER_FLOAT) {
                    BigDecimal d = fitting(p.getText(), node.precision, node.scale);
                    if (d == null) {
                        outOfRange(p, out, s, x);
                    } else {
                        out[v] = d;
                        out[s] = OK;
                    }
                    return;
                }
                break;
            case DATE:
                if (t == JsonToken.VALUE_STRING) {
                    String text = p.getText();
                    if (isDate(text)) {
                        out[v] = text;
                        out[s] = OK;
                    } else {
                        out[s] = INVALID;
                        out[x] = cut(quote(text));
                    }
                    return;
                }
                break;
            default:  // NUMBER: any JSON number, as the nearest double, unless no double comes near it
                if (t == JsonToken.VALUE_NUMBER_INT || t == JsonToken.VALUE_NUMBER_FLOAT) {
                    if (t == JsonToken.VALUE_NUMBER_INT && p.getTextLength() > DOUBLE_DIGITS) {
                        outOfRange(p, out, s, x);
                        return;
                    }
                    double d = t == JsonToken.VALUE_NUMBER_INT && p.getTextLength() <= 18
                            ? (double) p.getLongValue() : Double.parseDouble(p.getText());
                    if (Double.isInfinite(d) || d == 0.0 && nonZeroDigit(p.getText())) {
                        outOfRange(p, out, s, x);  // overflows to infinity, or underflows to zero
                    } else {
                        out[v] = d;
                        out[s] = OK;
                    }
                    return;
                }
        }
        out[s] = WRONG_TYPE + found(t);
        out[x] = valueText(p, t, b);
    }

    /**
     * The number as a decimal(precision, scale), at that scale exactly, or null when it needs more
     * fraction digits than the scale (it is never rounded) or more integer digits than the rest.
     */
    static BigDecimal fitting(String literal, int precision, int scale) {
        BigDecimal d;
        try {
            d = new BigDecimal(literal);
        } catch (NumberFormatException | ArithmeticException e) {
            // An exponent beyond what a BigDecimal holds: far beyond any column, unless the
            // digits are all zeros, which is 0 whatever the exponent.
            return nonZeroDigit(literal) ? null : BigDecimal.ZERO.setScale(scale);
        }
        BigDecimal stripped = d.stripTrailingZeros();
        if (stripped.scale() > scale) return null;
        long integerDigits = Math.max(0L, (long) stripped.precision() - stripped.scale());
        if (integerDigits > precision - scale) return null;
        return stripped.setScale(scale);
    }

    /** A {@code YYYY-MM-DD} text naming a real day of the proleptic Gregorian calendar, years 1 to 9999. */
    static boolean isDate(String text) {
        if (text.length() != 10 || text.charAt(4) != '-' || text.charAt(7) != '-') return false;
        int year = digits(text, 0, 4), month = digits(text, 5, 2), day = digits(text, 8, 2);
        if (year < 1 || month < 1 || month > 12 || day < 1) return false;
        int days;
        if (month == 2) {
            days = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28;
        } else {
            days = month == 4 || month == 6 || month == 9 || month == 11 ? 30 : 31;
        }
        return day <= days;
    }

    private static int digits(String text, int at, int count) {
        int v = 0;
        for (int k = at; k < at + count; k++) {
            char c = text.charAt(k);
            if (c < '0' || c > '9') return -1;
            v = 10 * v + (c - '0');
        }
        return v;
    }

    /** The offset of the bracket that opens one level more than Jackson allows (outside strings). */
    static int tooDeepAt(byte[] b) {
        int depth = 0;
        boolean inString = false;
        for (int i = 0; i < b.length; i++) {
            byte c = b[i];
            if (inString) {
                if (c == '\\') i++;
                else if (c == '"') inString = false;
            } else if (c == '"') {
                inString = true;
            } else if (c == '{' || c == '[') {
                if (++depth > MAX_DEPTH) return i;
            } else if (c == '}' || c == ']') {
                depth--;
            }
        }
        return -1;
    }

    private static final int NOT_WHOLE = -1;

    /**
     * A number literal with a fraction or an exponent ({@code 1.0}, {@code 1e2}) as a long at
     * {@code out[v]}: OK; OUT_OF_RANGE for a whole number beyond 64 bits (its integer digits
     * counted first: {@code 1e999999} is never spelled out); NOT_WHOLE for a fraction.
     */
    static int wholeLong(String literal, Object[] out, int v) {
        BigDecimal d;
        try {
            d = new BigDecimal(literal);
        } catch (NumberFormatException | ArithmeticException e) {
            // an exponent beyond a BigDecimal's: zero if every digit is, else far past 64 bits
            // when it is positive, and a fraction when it is negative
            if (!nonZeroDigit(literal)) {
                out[v] = 0L;
                return OK;
            }
            int e2 = Math.max(literal.indexOf('e'), literal.indexOf('E'));
            return literal.charAt(e2 + 1) == '-' ? NOT_WHOLE : OUT_OF_RANGE;
        }
        if (d.signum() == 0) {
            out[v] = 0L;
            return OK;
        }
        if (d.precision() - d.scale() > LONG_DIGITS) return OUT_OF_RANGE;
        BigDecimal stripped = d.stripTrailingZeros();
        if (stripped.scale() > 0) return NOT_WHOLE;
        java.math.BigInteger whole = stripped.toBigIntegerExact();
        if (whole.bitLength() > 63) return OUT_OF_RANGE;
        out[v] = whole.longValue();
        return OK;
    }

    private void outOfRange(JsonParser p, Object[] out, int s, int x) throws IOException {
        out[s] = OUT_OF_RANGE;
        out[x] = cut(p.getText());
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
