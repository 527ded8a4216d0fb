package spillway.monitoring;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.regex.Pattern;

import org.apache.spark.SparkConf;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerApplicationEnd;
import org.apache.spark.scheduler.SparkListenerApplicationStart;
import org.apache.spark.scheduler.SparkListenerStageCompleted;
import org.apache.spark.scheduler.SparkListenerStageSubmitted;
import org.apache.spark.scheduler.StageInfo;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import scala.Option;

/**
 * Pushes a start and an end marker of every stage attempt to the Pushgateway (monitoring contract, "Markers"),
 * so live dashboards can draw stage boundaries while the application runs.
 *
 * Registered on every driver through spark.extraListeners; it does nothing unless
 * spark.spillway.pushgateway.url is set (the spark-submit wrapper sets it, with the run and workload ids, when
 * the bench gives SPILLWAY_PUSHGATEWAY_URL). Monitoring must never cost a job: pushes run on a thread of their
 * own (the listener bus is never blocked by a slow or dead Pushgateway), and a failed push is logged once.
 */
public final class StageMarkerListener extends SparkListener {
    public static final String URL_KEY = "spark.spillway.pushgateway.url";
    public static final String RUN_KEY = "spark.spillway.run.id";
    public static final String WORKLOAD_KEY = "spark.spillway.workload.id";
    static final String JOB = "spillway_stage";
    private static final Logger LOG = LoggerFactory.getLogger(StageMarkerListener.class);
    private static final Pattern PLAIN_SEGMENT = Pattern.compile("[A-Za-z0-9_.:-]+");
    private static final Duration TIMEOUT = Duration.ofSeconds(3);
    // what the last pushes may take at application end before the driver exits without them
    private static final long DRAIN_SECONDS = 5;

    private final String pushgatewayUrl;
    private final String runId;
    private final String workloadId;
    private volatile String appId;
    private final HttpClient client;
    private final ExecutorService pusher;
    private final AtomicBoolean warned = new AtomicBoolean();

    public StageMarkerListener(SparkConf conf) {
        pushgatewayUrl = conf.get(URL_KEY, "").trim().replaceAll("/+$", "");
        runId = conf.get(RUN_KEY, "");
        workloadId = conf.get(WORKLOAD_KEY, "");
        appId = conf.get("spark.app.id", "");
        if (pushgatewayUrl.isEmpty()) {
            client = null;
            pusher = null;
            return;
        }
        client = HttpClient.newBuilder().connectTimeout(TIMEOUT).build();
        // one thread: a stage's end is never pushed before its start (a PUT replaces the group)
        pusher = Executors.newSingleThreadExecutor(task -> {
            Thread thread = new Thread(task, "spillway-stage-markers");
            thread.setDaemon(true);
            return thread;
        });
        LOG.info("Stage markers of run {} workload {} go to {}", runId, workloadId, pushgatewayUrl);
    }

    @Override
    public void onApplicationStart(SparkListenerApplicationStart event) {
        if (event.appId().isDefined()) {
            appId = event.appId().get();
        }
    }

    @Override
    public void onStageSubmitted(SparkListenerStageSubmitted event) {
        StageInfo stage = event.stageInfo();
        push(stage, epochSeconds(stage.submissionTime()), Double.NaN, null);
    }

    @Override
    public void onStageCompleted(SparkListenerStageCompleted event) {
        StageInfo stage = event.stageInfo();
        String status = stage.failureReason().isDefined() ? "failed" : "succeeded";
        push(stage, epochSeconds(stage.submissionTime()), epochSeconds(stage.completionTime()), status);
    }

    @Override
    public void onApplicationEnd(SparkListenerApplicationEnd event) {
        if (pusher == null) {
            return;
        }
        pusher.shutdown();
        try {
            if (!pusher.awaitTermination(DRAIN_SECONDS, TimeUnit.SECONDS)) {
                warnOnce("the last stage markers were not pushed within " + DRAIN_SECONDS + " s");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void push(StageInfo stage, double start, double end, String status) {
        if (pusher == null || pusher.isShutdown()) {
            return;
        }
        String path = "/metrics/job/" + JOB + segment("run_id", runId) + segment("app_id", appId)
                + segment("stage_id", Integer.toString(stage.stageId()))
                + segment("attempt", Integer.toString(stage.attemptNumber()));
        String labels = "workload_id=\"" + escape(workloadId) + "\",stage_name=\"" + escape(stage.name()) + "\"";
        StringBuilder body = new StringBuilder()
                .append("# TYPE spillway_stage_start_timestamp_seconds gauge\n")
                .append("spillway_stage_start_timestamp_seconds{").append(labels).append("} ")
                .append(number(start)).append('\n');
        if (status != null) {
            body.append("# TYPE spillway_stage_end_timestamp_seconds gauge\n")
                .append("spillway_stage_end_timestamp_seconds{").append(labels)
                .append(",status=\"").append(status).append("\"} ").append(number(end)).append('\n');
        }
        HttpRequest request = HttpRequest.newBuilder(URI.create(pushgatewayUrl + path))
                .timeout(TIMEOUT)
                .header("Content-Type", "text/plain; version=0.0.4")
                .PUT(HttpRequest.BodyPublishers.ofString(body.toString(), StandardCharsets.UTF_8))
                .build();
        pusher.execute(() -> send(request));
    }

    private void send(HttpRequest request) {
        try {
            HttpResponse<String> response = client.send(request, HttpResponse.BodyHandlers.ofString());
            if (response.statusCode() / 100 != 2) {
                warnOnce("PUT " + request.uri() + ": HTTP " + response.statusCode() + " " + response.body().strip());
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Exception e) {  // never let monitoring fail the job
            warnOnce("PUT " + request.uri() + ": " + e);
        }
    }

    private void warnOnce(String message) {
        if (warned.compareAndSet(false, true)) {
            LOG.warn("Stage markers: {} (the job goes on; later failures are not logged)", message);
        }
    }

    private static double epochSeconds(Option<Object> millis) {
        long value = millis.isDefined() ? ((Number) millis.get()).longValue() : System.currentTimeMillis();
        return value / 1000.0;
    }

    private static String number(double value) {
        return String.format(Locale.ROOT, "%.3f", value);
    }

    /** A grouping-key path segment; values that are not plain (a '/' or empty) use the base64 form. */
    static String segment(String name, String value) {
        if (PLAIN_SEGMENT.matcher(value).matches()) {
            return "/" + name + "/" + value;
        }
        String encoded = Base64.getUrlEncoder().encodeToString(value.getBytes(StandardCharsets.UTF_8));
        return "/" + name + "@base64/" + (encoded.isEmpty() ? "=" : encoded);
    }

    private static String escape(String value) {
        return value.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n");
    }
}
