#!/bin/bash
# metrics_chain.sh DISKMON - the real chain on 127.0.0.1: Linux live diskmon
# --metrics into a textfile directory, a real prometheus-node-exporter
# reading it (--collector.textfile.directory), a real prometheus scraping
# that every second, fio reading a loop device at a fixed rate. Then, from
# Prometheus's HTTP API:
#   - increase(diskmon_requests_total{op="read"}[W]) over exactly the fio
#     run (W from one scraped sample before fio to the last one after, so
#     no extrapolation) is within 2% of fio's total_ios;
#   - histogram_quantile(0.99, ...) over the same window is within one
#     bucket of the exact p99 of the reads the same diskmon wrote with
#     -f json -o events.jsonl.
# Everything started is stopped at exit (trap). The query answers and fio's
# figures are printed as "# ..." lines and kept in $DM_CHAIN_LOG (default
# build/logs/metrics_chain.json under the source tree) for the record.
# Exit 0 pass, 1 fail, 77 skip (not root, packages absent; FAIL under
# CI=true).
set -u

DISKMON=${1:?usage: metrics_chain.sh DISKMON}
HERE=$(cd "$(dirname "$0")" && pwd)
CHAIN_LOG=${DM_CHAIN_LOG:-$HERE/../../build/logs/metrics_chain.json}

# shellcheck source=../lib/loop_common.sh
. "$HERE/../lib/loop_common.sh"
for tool in fio prometheus prometheus-node-exporter curl python3; do
    command -v "$tool" >/dev/null ||
        skip "$tool is not installed (apt-get install fio prometheus prometheus-node-exporter curl python3)"
done
make_loop 256M chain

fails=0
pass() { echo "PASS metrics_chain/$1"; }
bad() { echo "FAIL metrics_chain/$1: $2"; fails=$((fails + 1)); }

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_http URL: up to 20 s for an answer.
wait_http() {
    for _ in $(seq 100); do
        curl -fs "$1" >/dev/null 2>&1 && return 0
        sleep 0.2
    done
    return 1
}

# query EXPR [TIME]: the API's JSON answer.
query() {
    curl -fsG "http://127.0.0.1:$prom_port/api/v1/query" --data-urlencode "query=$1" \
        ${2:+--data-urlencode "time=$2"}
}

# value JSON: the first result's value (empty when there is none).
value() {
    python3 -c 'import json, sys
r = json.load(sys.stdin)["data"]["result"]
print(r[0]["value"][1] if r else "")'
}

textdir=$work/textfile
mkdir "$textdir" "$work/tsdb"
ne_port=$(free_port)
prom_port=$(free_port)

# 1. diskmon: metrics every second, and the per-event json of the same run.
"$DISKMON" -d "$name" --metrics "$textdir/diskmon.prom" --interval 1 -f json \
    -o "$work/events.jsonl" 2>"$work/diskmon.err" &
dm=$!
bg="$bg $dm"
wait_started "$dm" "$work/diskmon.err" test -s "$textdir/diskmon.prom"

# 2. node_exporter with the textfile collector only.
prometheus-node-exporter --web.listen-address="127.0.0.1:$ne_port" \
    --collector.textfile.directory="$textdir" --collector.disable-defaults \
    --collector.textfile >"$work/ne.log" 2>&1 &
bg="$bg $!"
wait_http "http://127.0.0.1:$ne_port/metrics" || fail "node_exporter did not answer: $(tail -c 300 "$work/ne.log")"

# 3. prometheus scraping it every second.
cat >"$work/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: node
    static_configs:
      - targets: ['127.0.0.1:$ne_port']
YML
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb" \
    --web.listen-address="127.0.0.1:$prom_port" >"$work/prom.log" 2>&1 &
bg="$bg $!"
wait_http "http://127.0.0.1:$prom_port/-/ready" || fail "prometheus not ready: $(tail -c 300 "$work/prom.log")"

# One read so the disk's series exist, then a baseline sample before fio.
dd if="$loop" of=/dev/null bs=4096 count=1 iflag=direct 2>/dev/null
sel="diskmon_requests_total{op=\"read\",disk=\"$name\"}"
t0=""
for _ in $(seq 60); do
    t0=$(query "timestamp($sel)" | value)
    [ -n "$t0" ] && break
    sleep 0.5
done
[ -n "$t0" ] || fail "prometheus never scraped $sel: $(query up)"
sleep 2
t0=$(query "timestamp($sel)" | value)

# 4. fio: 4 KiB direct random reads at a fixed rate diskmon keeps up with.
fio --name=chain --filename="$loop" --rw=randread --bs=4k --direct=1 \
    --ioengine=psync --rate_iops=2000 --runtime=10 --time_based \
    --output-format=json --output="$work/fio.json" >/dev/null 2>&1 ||
    fail "fio failed: $(head -c 300 "$work/fio.json")"
total_ios=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["jobs"][0]["read"]["total_ios"])' "$work/fio.json")

# Let diskmon write and Prometheus scrape the last of it.
sleep 4
t1=$(query "timestamp($sel)" | value)
win_ms=$(python3 -c 'import sys; print(round((float(sys.argv[2]) - float(sys.argv[1])) * 1000))' "$t0" "$t1")

inc_json=$(query "increase(${sel}[${win_ms}ms])" "$t1")
inc=$(printf '%s' "$inc_json" | value)
p99_expr="histogram_quantile(0.99, sum by (le) (increase(diskmon_request_duration_seconds_bucket{op=\"read\",disk=\"$name\"}[${win_ms}ms])))"
p99_json=$(query "$p99_expr" "$t1")
p99=$(printf '%s' "$p99_json" | value)

interrupt "$dm"
[ "$rc" = 0 ] || [ "$rc" = 3 ] || bad diskmon_exit "exit $rc: $(cat "$work/diskmon.err")"

mkdir -p "$(dirname "$CHAIN_LOG")"
python3 - "$work/fio.json" "$CHAIN_LOG" "$inc_json" "$p99_json" "$win_ms" "$t1" <<'PY'
import json, sys
fio = json.load(open(sys.argv[1]))["jobs"][0]["read"]
rec = {"fio_read": {k: fio[k] for k in ("total_ios", "io_bytes", "iops", "runtime")},
       "fio_clat_ns_p99": fio["clat_ns"]["percentile"].get("99.000000"),
       "window_ms": int(sys.argv[5]), "time": sys.argv[6],
       "increase_reads": json.loads(sys.argv[3]), "p99": json.loads(sys.argv[4])}
json.dump(rec, open(sys.argv[2], "w"), indent=1)
PY
echo "# fio read total_ios=$total_ios; Prometheus increase=$inc over ${win_ms} ms; p99=$p99 s"
echo "# increase answer: $inc_json"
echo "# p99 answer: $p99_json"

if python3 -c 'import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(0 if b > 0 and abs(a - b) <= 0.02 * b else 1)' "${inc:-0}" "$total_ios"; then
    pass increase_reads_within_2pct
else
    bad increase_reads_within_2pct "Prometheus says ${inc:-nothing}, fio total_ios $total_ios"
fi

# The exact p99 of the run's reads from events.jsonl (nearest rank), and
# the bucket each answer falls in.
out=$(python3 - "$work/events.jsonl" "$name" "${p99:-nan}" <<'PY'
import json, math, sys
from decimal import Decimal
LE = [0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
      0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, math.inf]
d = []
for line in open(sys.argv[1]):
    ev = json.loads(line, parse_float=Decimal)
    if ev["request"] == "Read" and str(ev["disk"]) == sys.argv[2]:
        d.append(float(ev["duration_ms"]) / 1000)
d.sort()
exact = d[max(0, math.ceil(0.99 * len(d)) - 1)]
got = float(sys.argv[3])
def bucket(v):
    return next(i for i, le in enumerate(LE) if v <= le)
ok = not math.isnan(got) and abs(bucket(exact) - bucket(got)) <= 1
print("ok" if ok else "no", len(d), exact, got, bucket(exact), bucket(got))
PY
)
echo "# p99 check (ok, reads in events.jsonl, exact p99 s, Prometheus p99 s, their buckets): $out"
[ "${out%% *}" = ok ] && pass p99_within_one_bucket || bad p99_within_one_bucket "$out"

[ "$fails" = 0 ] || exit 1
exit 0
