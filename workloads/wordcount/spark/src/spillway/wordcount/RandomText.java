package spillway.wordcount;

import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.stream.LongStream;

/**
 * Random text in the shape of Hadoop's RandomTextWriter output (the input of HiBench's WordCount and Sort): every
 * line a "key" of 5 to 9 words, a tab, and a "value" of 10 to 99 words, the words drawn uniformly from a vocabulary
 * of 1000, separated by single spaces.
 *
 * The vocabulary is fixed (its own constant seed, not the data's): like RandomTextWriter's list, the same 1000 words
 * whatever the seed, so a word count has at most 1000 keys at every size. Every line is a function of (seed, line
 * number) alone, drawn from its own SplittableRandom stream: the text is the same whatever the number of
 * partitions or the task that (re)computes one.
 */
public final class RandomText {
    /** Bump when the generated text changes: the step scripts write it into the cache marker. */
    public static final String VERSION = "randomtext-1";
    public static final int VOCABULARY_SIZE = 1000;
    public static final int MIN_KEY_WORDS = 5;
    public static final int MAX_KEY_WORDS = 9;
    public static final int MIN_VALUE_WORDS = 10;
    public static final int MAX_VALUE_WORDS = 99;

    private static final long VOCABULARY_SEED = 0x5EED_0F_1000L;
    private static final int MIN_WORD_LETTERS = 2;
    private static final int MAX_WORD_LETTERS = 16;
    private static final String[] VOCABULARY = vocabulary();

    private RandomText() {
    }

    /** Distinct lower-case words of 2 to 16 letters, one in ten capitalized as a dictionary's proper nouns are. */
    private static String[] vocabulary() {
        SplittableRandom random = new SplittableRandom(VOCABULARY_SEED);
        Set<String> words = new LinkedHashSet<>();
        while (words.size() < VOCABULARY_SIZE) {
            int letters = random.nextInt(MIN_WORD_LETTERS, MAX_WORD_LETTERS + 1);
            StringBuilder word = new StringBuilder(letters);
            for (int i = 0; i < letters; i++) {
                word.append((char) ('a' + random.nextInt(26)));
            }
            if (random.nextInt(10) == 0) {
                word.setCharAt(0, Character.toUpperCase(word.charAt(0)));
            }
            words.add(word.toString());
        }
        return words.toArray(new String[0]);
    }

    public static String[] vocabularyWords() {
        return VOCABULARY.clone();
    }

    /**
     * The expected bytes of a line (newline included): 61.5 words on average, each with the mean word length and
     * one separator (spaces, the tab, the newline).
     */
    public static double meanLineBytes() {
        double letters = 0;
        for (String word : VOCABULARY) {
            letters += word.length();
        }
        double words = (MIN_KEY_WORDS + MAX_KEY_WORDS) / 2.0 + (MIN_VALUE_WORDS + MAX_VALUE_WORDS) / 2.0;
        return words * (letters / VOCABULARY.length + 1);
    }

    /** Lines for about `bytes` of text: a function of the size alone, so any partitioning writes the same lines. */
    public static long linesFor(long bytes) {
        return Math.max(1, Math.round(bytes / meanLineBytes()));
    }

    /** Line `line` of the text of `seed`, without its newline. */
    public static String line(long seed, long line) {
        // A state unique to (seed, line): odd multipliers keep neighbouring lines' streams far apart.
        SplittableRandom random = new SplittableRandom(seed * 0x9E3779B97F4A7C15L + line * 0xD1B54A32D192ED03L);
        StringBuilder text = new StringBuilder(1024);
        sentence(text, random, random.nextInt(MIN_KEY_WORDS, MAX_KEY_WORDS + 1));
        text.append('\t');
        sentence(text, random, random.nextInt(MIN_VALUE_WORDS, MAX_VALUE_WORDS + 1));
        return text.toString();
    }

    private static void sentence(StringBuilder text, SplittableRandom random, int words) {
        for (int i = 0; i < words; i++) {
            if (i > 0) {
                text.append(' ');
            }
            text.append(VOCABULARY[random.nextInt(VOCABULARY.length)]);
        }
    }

    /** First line of a partition: partitions differ by one line at most (exact while lines x partitions < 2^63). */
    public static long firstLine(long lines, int partitions, int partition) {
        return lines * partition / partitions;
    }

    /** The lines of one partition, made lazily so a partition never has to fit in memory. */
    public static Iterator<String> partition(long seed, long lines, int partitions, int partition) {
        return LongStream.range(firstLine(lines, partitions, partition), firstLine(lines, partitions, partition + 1))
                .mapToObj(number -> line(seed, number)).iterator();
    }
}
