package spillway.websql;

import java.time.LocalDate;
import java.util.Iterator;
import java.util.NoSuchElementException;

/**
 * The generated web-analytics data of Pavlo et al. (2009), as HiBench's SQL workloads query it: a table of
 * pages (rankings) and a much larger table of visits to them (uservisits), one CSV line per row.
 *
 *   rankings(pageURL, pageRank, avgDuration)
 *   uservisits(sourceIP, destURL, visitDate, adRevenue, userAgent, countryCode, languageCode, searchWord, duration)
 *
 * Every row is a function of (seed, table, row number) alone, drawn from its own SplitMix64 stream: the data is
 * the same whatever the number of partitions or the task that (re)computes a partition. Every visit's destURL is
 * the pageURL of an existing page (drawn uniformly), so the join loses no visit to a missing page; visit dates
 * spread uniformly over FIRST_DAY..LAST_DAY (ten years), so the join's one-year filter keeps about a tenth; source
 * IPs come from a pool of one address per VISITS_PER_IP visits, so the aggregation has groups of about that size.
 *
 * Text only ever holds [A-Za-z0-9./:;()_ -], never a comma, quote or white space at either end: the lines are
 * CSV that every reader splits the same way.
 */
public final class WebData {
    /** Bump when the generated data changes: the step script writes it into the cache marker. */
    public static final String VERSION = "websql-data-1";
    public static final LocalDate FIRST_DAY = LocalDate.of(1995, 1, 1);
    public static final LocalDate LAST_DAY = LocalDate.of(2004, 12, 31);
    public static final int VISITS_PER_IP = 50;

    private static final long RANKINGS = 1;
    private static final long URLS = 2;
    private static final long VISITS = 3;
    private static final long IPS = 4;
    private static final String LETTERS = "abcdefghijklmnopqrstuvwxyz";
    private static final String ALPHANUMERIC = "abcdefghijklmnopqrstuvwxyz0123456789";
    private static final String[] USER_AGENTS = {
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) Chrome/120.0",
        "Mozilla/5.0 (X11; Linux x86_64) Firefox/121.0",
        "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_2) Safari/605.1",
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) Mobile/15E148",
        "Mozilla/5.0 (Linux; Android 14) Chrome/120.0 Mobile",
        "Opera/9.80 (Windows NT 6.1) Presto/2.12",
        "Wget/1.21.4",
        "curl/8.5.0",
    };
    private static final String[] COUNTRIES = {
        "USA", "DEU", "FRA", "GBR", "JPN", "CHN", "IND", "BRA", "CAN", "AUS", "ESP", "ITA", "NLD", "SWE", "KOR", "MEX",
    };
    private static final String[] LANGUAGES = {
        "en-US", "de-DE", "fr-FR", "en-GB", "ja-JP", "zh-CN", "hi-IN", "pt-BR", "en-CA", "en-AU", "es-ES", "it-IT",
        "nl-NL", "sv-SE", "ko-KR", "es-MX",
    };

    private WebData() {
    }

    /** A SplitMix64 stream: small, fast, and as good as java.util.Random for data generation. */
    static final class Stream {
        private long state;

        Stream(long seed, long table, long row) {
            state = mix(mix(seed * 0x9E3779B97F4A7C15L + table) + row);
        }

        long next() {
            state += 0x9E3779B97F4A7C15L;
            return mix(state);
        }

        /** Uniform in [0, bound); the modulo bias is below 2^-32 for the bounds used here. */
        long below(long bound) {
            return Long.remainderUnsigned(next(), bound);
        }

        int between(int low, int high) {
            return low + (int) below(high - low + 1L);
        }

        void word(StringBuilder out, String alphabet, int length) {
            for (int i = 0; i < length; i++) {
                out.append(alphabet.charAt((int) below(alphabet.length())));
            }
        }
    }

    /** The URL of page `page`: unique (it holds the page number) and 40 to 90 characters long. */
    public static String pageUrl(long seed, long page) {
        Stream random = new Stream(seed, URLS, page);
        StringBuilder url = new StringBuilder(96).append("http://www.");
        random.word(url, LETTERS, random.between(5, 15));
        url.append(".com/").append(Long.toString(page, 36)).append('/');
        random.word(url, ALPHANUMERIC, random.between(10, 40));
        return url.append(".html").toString();
    }

    /** rankings row `page`: pageURL, pageRank (1..10000), avgDuration (1..100 s). */
    public static String rankingLine(long seed, long page) {
        Stream random = new Stream(seed, RANKINGS, page);
        return pageUrl(seed, page) + ',' + random.between(1, 10000) + ',' + random.between(1, 100);
    }

    /** The address of source `ip` of the pool: a dotted quad of a unicast range (first octet 1..223). */
    public static String sourceIp(long seed, long ip) {
        Stream random = new Stream(seed, IPS, ip);
        return random.between(1, 223) + "." + random.between(0, 255) + "." + random.between(0, 255) + "."
                + random.between(0, 255);
    }

    public static long ipPool(long visits) {
        return Math.max(1, visits / VISITS_PER_IP);
    }

    /** uservisits row `visit` of `visits`, over `pages` pages. adRevenue is whole cents (0.01 to 999.99). */
    public static String visitLine(long seed, long visit, long visits, long pages) {
        Stream random = new Stream(seed, VISITS, visit);
        long days = LAST_DAY.toEpochDay() - FIRST_DAY.toEpochDay() + 1;
        StringBuilder line = new StringBuilder(200);
        line.append(sourceIp(seed, random.below(ipPool(visits)))).append(',');
        line.append(pageUrl(seed, random.below(pages))).append(',');
        line.append(LocalDate.ofEpochDay(FIRST_DAY.toEpochDay() + random.below(days))).append(',');
        long cents = 1 + random.below(99999);
        line.append(cents / 100).append('.').append(cents % 100 < 10 ? "0" : "").append(cents % 100).append(',');
        line.append(USER_AGENTS[(int) random.below(USER_AGENTS.length)]).append(',');
        int country = (int) random.below(COUNTRIES.length);
        line.append(COUNTRIES[country]).append(',');
        // Mostly the country's own language, sometimes another one.
        line.append(LANGUAGES[random.below(4) == 0 ? (int) random.below(LANGUAGES.length) : country]).append(',');
        random.word(line, LETTERS, random.between(3, 12));
        line.append(',').append(random.between(1, 1000));
        return line.toString();
    }

    /** First row of a partition: rows are split as evenly as possible, the first partitions one larger. */
    public static long firstRow(long rows, int partitions, int partition) {
        long base = rows / partitions;
        long remainder = rows % partitions;
        return partition * base + Math.min(partition, remainder);
    }

    public interface LineMaker {
        String line(long row);
    }

    /** The lines of one partition, made lazily so a partition never has to fit in memory. */
    public static Iterator<String> partition(long rows, int partitions, int partition, LineMaker maker) {
        long first = firstRow(rows, partitions, partition);
        long end = firstRow(rows, partitions, partition + 1);
        return new Iterator<>() {
            private long next = first;

            @Override
            public boolean hasNext() {
                return next < end;
            }

            @Override
            public String next() {
                if (next >= end) {
                    throw new NoSuchElementException();
                }
                return maker.line(next++);
            }
        };
    }

    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
