package foodtaster.jvm;

/**
 * A path as {@code foodtaster.contract.path.Path} prints it, so every printed path names one place:
 * keys joined by dots ({@code data.customer.email}), an element by its index ({@code lines[2]}) or
 * every element ({@code lines[]}), and a key holding {@code . [ ] " \} or a control character, or an
 * empty key, quoted as a JSON string in brackets ({@code data["app.name"]}), never split at its dot.
 */
final class PathText {
    private PathText() {
    }

    /** Whether a key prints as it is. */
    static boolean bare(String key) {
        if (key.isEmpty()) return false;
        for (int i = 0; i < key.length(); i++) {
            char c = key.charAt(i);
            if (c < 0x20 || c == '.' || c == '[' || c == ']' || c == '"' || c == '\\') return false;
        }
        return true;
    }

    /** Appends a key after what {@code out} holds (a path, or nothing). */
    static void appendKey(StringBuilder out, String key) {
        if (bare(key)) {
            if (out.length() > 0) out.append('.');
            out.append(key);
            return;
        }
        out.append("[\"");
        for (int i = 0; i < key.length(); i++) {
            char c = key.charAt(i);
            switch (c) {
                case '"': out.append("\\\""); break;
                case '\\': out.append("\\\\"); break;
                case '\n': out.append("\\n"); break;
                case '\r': out.append("\\r"); break;
                case '\t': out.append("\\t"); break;
                case '\b': out.append("\\b"); break;
                case '\f': out.append("\\f"); break;
                default:
                    if (c < 0x20) out.append(String.format("\\u%04x", (int) c));
                    else out.append(c);
            }
        }
        out.append("\"]");
    }
}
