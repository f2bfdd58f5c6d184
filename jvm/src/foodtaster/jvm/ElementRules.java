package foodtaster.jvm;

import java.io.Serializable;
import java.math.BigDecimal;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * The value rules of one element slot that the parser judges itself, in its one pass, so that the
 * cheap pass reads one boolean an array instead of running a Spark higher-order function over its
 * elements (docs/decisions/025-element-rules-judged-in-the-parser.md).
 *
 * <p>Each rule means what its Spark column means ({@code foodtaster/engine/judging/rules.py}), which the
 * differential tests hold: {@code compare} ({@code op} a comparison's sign, {@code >=}, {@code bound} a
 * number's text; {@code exact} true for an integer bound, compared exactly as Spark casts it to
 * the value's type, false for a float bound, compared as doubles as Spark does), {@code length}
 * (code points: Spark's {@code char_length}), {@code in} (strings; {@code negate} for notin),
 * {@code regex} (a Java pattern found anywhere, as Spark's {@code regexp_like}), {@code prefix}
 * and {@code suffix}. The spec is written by {@code PARSER} in
 * {@code foodtaster/engine/judging/parser_spec.py}.
 */
final class ElementRules implements Serializable {
    private static final long serialVersionUID = 1L;

    // a comparison's sign, as the check registry spells it (foodtaster/contract/checks.py)
    private static final String[] OPS = {">", ">=", "<", "<=", "==", "!="};
    private static final int COMPARE = 0, LENGTH = 1, IN = 2, REGEX = 3, PREFIX = 4, SUFFIX = 5;
    private static final String[] KINDS = {"compare", "length", "in", "regex", "prefix", "suffix"};

    private final int kind;
    private int op;
    private BigDecimal exactBound;
    private double doubleBound;
    private long min = -1, max = -1, exactly = -1;
    private HashSet<String> values;
    private boolean negate;
    private Pattern pattern;
    private String text;

    private ElementRules(int kind) {
        this.kind = kind;
    }

    /** The rules of a slot from its spec's {@code checks} list. */
    static ElementRules[] of(Object checks, String where) {
        if (checks == null) return new ElementRules[0];
        if (!(checks instanceof List)) throw new IllegalArgumentException("checks of " + where + " must be a list");
        List<?> list = (List<?>) checks;
        ElementRules[] rules = new ElementRules[list.size()];
        for (int i = 0; i < rules.length; i++) rules[i] = one(list.get(i), where);
        return rules;
    }

    @SuppressWarnings("unchecked")
    private static ElementRules one(Object spec, String where) {
        if (!(spec instanceof Map)) throw new IllegalArgumentException("a check of " + where + " must be an object");
        Map<String, Object> map = (Map<String, Object>) spec;
        int kind = index(KINDS, map.get("check"), "check of " + where);
        ElementRules rule = new ElementRules(kind);
        switch (kind) {
            case COMPARE: {
                rule.op = index(OPS, map.get("op"), "comparison of " + where);
                String bound = String.valueOf(map.get("bound"));
                if (Boolean.TRUE.equals(map.get("exact"))) {
                    rule.exactBound = new BigDecimal(bound);
                    rule.doubleBound = rule.exactBound.doubleValue();
                } else {
                    rule.doubleBound = Double.parseDouble(bound);
                }
                break;
            }
            case LENGTH:
                rule.min = number(map.get("min"));
                rule.max = number(map.get("max"));
                rule.exactly = number(map.get("exact"));
                break;
            case IN:
                rule.values = new HashSet<>();
                for (Object v : (List<Object>) map.get("values")) rule.values.add((String) v);
                rule.negate = Boolean.TRUE.equals(map.get("negate"));
                break;
            case REGEX:
                rule.pattern = Pattern.compile((String) map.get("pattern"));
                break;
            default:
                rule.text = (String) map.get("text");
        }
        return rule;
    }

    private static int index(String[] names, Object name, String where) {
        for (int i = 0; i < names.length; i++) if (names[i].equals(name)) return i;
        throw new IllegalArgumentException("unknown " + where + ": " + name + "; one of " + String.join(", ", names));
    }

    private static long number(Object value) {
        return value == null ? -1 : ((Number) value).longValue();
    }

    /** Whether a typed value (not null: a slot whose status is ok) passes. */
    boolean passes(Object value) {
        switch (kind) {
            case COMPARE:
                return compared(compare(value));
            case LENGTH: {
                String s = (String) value;
                long n = s.codePointCount(0, s.length());
                if (exactly >= 0) return n == exactly;
                return (min < 0 || n >= min) && (max < 0 || n <= max);
            }
            case IN:
                return values.contains((String) value) != negate;
            case REGEX:
                return pattern.matcher((String) value).find();
            case PREFIX:
                return ((String) value).startsWith(text);
            default:
                return ((String) value).endsWith(text);
        }
    }

    /** The value against the bound, as Spark compares them: exactly for an integer bound and an
     * integer or decimal value, as doubles otherwise. */
    private int compare(Object value) {
        if (exactBound != null) {
            if (value instanceof Long) return BigDecimal.valueOf((Long) value).compareTo(exactBound);
            if (value instanceof BigDecimal) return ((BigDecimal) value).compareTo(exactBound);
        }
        double v = ((Number) value).doubleValue();
        return v < doubleBound ? -1 : v > doubleBound ? 1 : 0;  // -0.0 equals 0.0, as in Spark
    }

    private boolean compared(int c) {
        switch (op) {
            case 0: return c > 0;
            case 1: return c >= 0;
            case 2: return c < 0;
            case 3: return c <= 0;
            case 4: return c == 0;
            default: return c != 0;
        }
    }
}
