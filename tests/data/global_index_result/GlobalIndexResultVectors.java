import org.apache.paimon.globalindex.GlobalIndexResult;
import org.apache.paimon.globalindex.GlobalIndexResultSerializer;
import org.apache.paimon.globalindex.ScoredGlobalIndexResult;
import org.apache.paimon.io.DataInputDeserializer;
import org.apache.paimon.utils.Range;
import org.apache.paimon.utils.RoaringNavigableMap64;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Writes and checks bgix's GlobalIndexResultSerializer test vectors with Paimon's own Java classes. Only feeds
 * id sets to Paimon's serializer and bgix's bytes to Paimon's deserializer; no format logic lives here.
 *
 * <pre>
 * java GlobalIndexResultVectors write DIR          every DIR/NAME.ids (with NAME.scores: scored) -> DIR/NAME.java.bin
 * java GlobalIndexResultVectors check DIR OURS     every unscored DIR/NAME.ids: Paimon reads OURS/NAME.bgix.bin back
 *                                                  as that set (nothing left over) and writes the same bytes
 * </pre>
 *
 * NAME.ids: one line per piece, "first", "first last" (inclusive; added with addRange, as Paimon's
 * GlobalIndexResult.fromRanges does) or "first last step" (added one id at a time); '#' starts a comment.
 * NAME.scores: one float per id in ascending id order (Float.parseFloat spelling).
 */
public class GlobalIndexResultVectors {

    public static void main(String[] args) throws IOException {
        if (args.length == 2 && args[0].equals("write")) {
            write(new File(args[1]));
        } else if (args.length == 3 && args[0].equals("check")) {
            System.exit(check(new File(args[1]), new File(args[2])) ? 0 : 1);
        } else {
            System.err.println("usage: GlobalIndexResultVectors write DIR | check DIR OURS_DIR");
            System.exit(2);
        }
    }

    private static List<String> names(File dir) {
        List<String> names = new ArrayList<>();
        for (String f : dir.list()) {
            if (f.endsWith(".ids")) {
                names.add(f.substring(0, f.length() - 4));
            }
        }
        names.sort(null);
        return names;
    }

    private static RoaringNavigableMap64 ids(File file) throws IOException {
        RoaringNavigableMap64 bitmap = new RoaringNavigableMap64();
        for (String raw : Files.readAllLines(file.toPath(), StandardCharsets.UTF_8)) {
            String line = raw.replaceAll("#.*", "").trim();
            if (line.isEmpty()) {
                continue;
            }
            long[] f = Arrays.stream(line.split("\\s+")).mapToLong(Long::parseLong).toArray();
            if (f.length == 1) {
                bitmap.add(f[0]);
            } else if (f.length == 2) {
                bitmap.addRange(new Range(f[0], f[1]));
            } else {
                for (long id = f[0]; id <= f[1]; id += f[2]) {
                    bitmap.add(id);
                }
            }
        }
        return bitmap;
    }

    private static GlobalIndexResult result(File dir, String name) throws IOException {
        RoaringNavigableMap64 bitmap = ids(new File(dir, name + ".ids"));
        File scoreFile = new File(dir, name + ".scores");
        if (!scoreFile.exists()) {
            return GlobalIndexResult.create(bitmap);
        }
        List<String> lines = Files.readAllLines(scoreFile.toPath(), StandardCharsets.UTF_8);
        lines.removeIf(s -> s.trim().isEmpty());
        Map<Long, Float> scores = new HashMap<>();
        int i = 0;
        for (long id : bitmap) {
            scores.put(id, Float.parseFloat(lines.get(i++).trim()));
        }
        if (i != lines.size()) {
            throw new IllegalArgumentException(name + ": " + lines.size() + " scores for " + i + " ids");
        }
        return ScoredGlobalIndexResult.create(bitmap, scores::get);
    }

    private static void write(File dir) throws IOException {
        GlobalIndexResultSerializer serializer = new GlobalIndexResultSerializer();
        for (String name : names(dir)) {
            GlobalIndexResult r = result(dir, name);
            byte[] bytes = serializer.serialize(r);
            Files.write(new File(dir, name + ".java.bin").toPath(), bytes);
            System.out.println("wrote " + name + ".java.bin: " + r.results().getLongCardinality() + " ids, "
                    + bytes.length + " bytes" + (r instanceof ScoredGlobalIndexResult ? ", scored" : ""));
        }
    }

    private static boolean check(File dir, File ours) throws IOException {
        GlobalIndexResultSerializer serializer = new GlobalIndexResultSerializer();
        boolean ok = true;
        for (String name : names(dir)) {
            if (new File(dir, name + ".scores").exists()) {
                continue; // bgix writes unscored results only
            }
            GlobalIndexResult want = result(dir, name);
            byte[] bytes = Files.readAllBytes(new File(ours, name + ".bgix.bin").toPath());
            DataInputDeserializer in = new DataInputDeserializer(bytes);
            GlobalIndexResult got = serializer.deserialize(in);
            List<String> problems = new ArrayList<>();
            if (got instanceof ScoredGlobalIndexResult) {
                problems.add("read as scored");
            }
            if (!got.results().equals(want.results())) {
                problems.add("ids differ: " + got.results().getLongCardinality() + " read, "
                        + want.results().getLongCardinality() + " wanted");
            }
            if (in.available() != 0) {
                problems.add(in.available() + " bytes left over");
            }
            if (!Arrays.equals(bytes, serializer.serialize(want))) {
                problems.add("bytes differ from Paimon's own serialization");
            }
            System.out.println((problems.isEmpty() ? "OK   " : "FAIL ") + name + " " + String.join("; ", problems));
            ok &= problems.isEmpty();
        }
        return ok;
    }
}
