# shellcheck shell=bash
# The random text that WordCount and Sort read, sourced by both step scripts (workloads/wordcount/wordcount and
# workloads/sort/sort): one generator (RandomText in this folder's Spark job) and one cache, so the two workloads
# at the same bytes, seed and partitions read the very same files and the second to run reuses the first's.
# Needs P_BYTES, P_SEED, P_PARTITIONS, SPILLWAY_ROOT, SPILLWAY_OUT.
randomtext_src=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/spark/src
# The generator's data version (RandomText.VERSION in the job): a change of the generated text changes it.
randomtext_version=randomtext-1
randomtext_data=/spillway/randomtext/b$P_BYTES-seed$P_SEED-n$P_PARTITIONS
randomtext_input=$randomtext_data/text
randomtext_marker=$randomtext_data/_READY
randomtext_jar="$SPILLWAY_ROOT/build/wordcount/spillway-wordcount-spark.jar"

seconds_since() {
    awk -v start="$1" -v now="$EPOCHREALTIME" 'BEGIN {printf "%.3f", now - start}'
}

randomtext_require() {
    if ! hadoop fs -test -e "$randomtext_marker"; then
        echo "no random text at $randomtext_data (marker $randomtext_marker missing): run the prepare step first" >&2
        exit 1
    fi
}

# Builds the generator's job, reuses the cached text when its marker matches or generates it, and writes
# $SPILLWAY_OUT/prepare.json with the text's size in HDFS.
randomtext_prepare() {
    spark-build-job "$randomtext_src" "$randomtext_jar" spillway.wordcount.WordCountSpark
    local wanted cached generated generate_s started bytes
    wanted="bytes=$P_BYTES seed=$P_SEED partitions=$P_PARTITIONS data=$randomtext_version"
    cached=$(hadoop fs -cat "$randomtext_marker" 2>/dev/null || true)
    if [ "$cached" = "$wanted" ]; then
        generated=false generate_s=0
        echo "data: reusing cached $randomtext_data ($cached)"
    else
        if [ -n "$cached" ]; then
            echo "data: cached $randomtext_data was made with '$cached', not '$wanted': generating again"
        fi
        started=$EPOCHREALTIME
        hadoop fs -rm -r -f -skipTrash "$randomtext_data"
        spark-submit --name "randomtext-generate-b$P_BYTES" "$randomtext_jar" generate "$randomtext_data" \
            "$P_BYTES" "$P_SEED" "$P_PARTITIONS" | tee "$SPILLWAY_OUT/generate.log"
        tail -n1 "$SPILLWAY_OUT/generate.log" | hadoop fs -put - "$randomtext_data/generate.json"
        echo "$wanted" | hadoop fs -put - "$randomtext_marker"
        generated=true
        generate_s=$(seconds_since "$started")
        echo "data: generated $randomtext_data ($wanted) in $generate_s s"
    fi
    # The input's size as HiBench takes it (`hadoop fs -du -s` of the input folder): the text, not the marker.
    bytes=$(hadoop fs -du -s "$randomtext_input" | awk '{print $1}')
    echo "data: $bytes bytes of text in $randomtext_input"
    printf '{"generated": %s, "generate_s": %s, "bytes": %s, "data": "%s", "format": "text", "requested_bytes": %s, "seed": %s, "partitions": %s}\n' \
        "$generated" "$generate_s" "$bytes" "$randomtext_input" "$P_BYTES" "$P_SEED" "$P_PARTITIONS" \
        > "$SPILLWAY_OUT/prepare.json"
}
