#!/usr/bin/env bash
# metrics.sh - --metrics FILE on the real sample traces: the file passes
# `promtool check metrics`, ends with a newline, and every counter, bucket,
# sum, busy and in-flight time, per-flag and per-process-and-disk series
# equals what metrics_check.py recomputes from the per-event json of the
# same trace (--metrics-top 20 and 2, so "(other)" is exercised), and each
# disk's process series sum to its totals and to the csv's
# (metrics_sums.py); --interval sets
# --top's interval; docs/metrics.md's alert rule passes promtool; the daemon mode
# prints no lines while -f json beside --metrics prints the same lines as
# without; an unwritable directory gives one message and exit 1;
# --metrics naming the input trace is refused; bad usages of the new
# options exit 2. Usage: metrics.sh PATH/TO/diskmon. Exit 0 pass, 1 fail,
# 77 skip.
set -u
DISKMON=${1:?usage: metrics.sh DISKMON}
HERE=$(cd "$(dirname "$0")" && pwd)
ETL=${DM_SHARED_ETL:-$HERE/../../../shared/etl}
TMP=$(mktemp -d)
chmod 755 "$TMP"
trap 'chmod -R u+w "$TMP" 2>/dev/null; rm -rf "$TMP"' EXIT
SUITE=metrics
# shellcheck source=../lib/results.sh
. "$HERE/../lib/results.sh"

# --- bad usage: exit 2, one line on stderr, nothing on stdout ----------------
for args in "--metrics-top 5" "--interval 5" "--metrics m.prom --interval 0" \
    "--metrics m.prom --interval abc" "--metrics m.prom --metrics-top -1" \
    "--metrics m.prom --metrics-top 1001" "--top 2 --interval 3 --metrics m.prom" \
    "--metrics"; do
    # shellcheck disable=SC2086
    (cd "$TMP" && "$DISKMON" $args >out 2>err); rc=$?
    name="usage_${args// /_}"
    if [ "$rc" -eq 2 ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] && [ ! -s "$TMP/out" ] &&
        [ ! -e "$TMP/m.prom" ]; then
        pass "$name"
    else
        fail "$name" "rc=$rc stderr=$(cat "$TMP/err")"
    fi
done

[ -f "$ETL/README.md" ] || need sample_traces "sample traces not found at $ETL"
command -v python3 >/dev/null || need python3 "python3 is not installed"
command -v promtool >/dev/null ||
    need promtool "promtool is not installed (Debian: apt-get install prometheus)"

for etl in "$ETL"/*.etl; do
    base=$(basename "$etl" .etl)
    "$DISKMON" -r "$etl" -f json >"$TMP/ev.json" 2>/dev/null
    "$DISKMON" -r "$etl" -f csv >"$TMP/ev.csv" 2>/dev/null
    for k in 20 2; do
        rm -f "$TMP/m.prom"
        "$DISKMON" -r "$etl" --metrics "$TMP/m.prom" --metrics-top "$k" \
            >"$TMP/out" 2>"$TMP/err"; rc=$?
        check "$base/k$k/exit_0" test "$rc" -eq 0
        check "$base/k$k/daemon_mode_no_lines" test ! -s "$TMP/out"
        check "$base/k$k/no_tmp_left" test ! -e "$TMP/m.prom.tmp"
        if [ -s "$TMP/m.prom" ] && [ "$(tail -c 1 "$TMP/m.prom" | od -An -c | tr -d ' ')" = '\n' ]; then
            pass "$base/k$k/ends_with_newline"
        else
            fail "$base/k$k/ends_with_newline" "missing or no final newline"
        fi
        if out=$(promtool check metrics <"$TMP/m.prom" 2>&1); then
            pass "$base/k$k/promtool"
        else
            fail "$base/k$k/promtool" "$(printf '%s' "$out" | head -c 300)"
        fi
        if out=$(python3 "$HERE/../oracles/metrics_check.py" "$TMP/ev.json" "$TMP/m.prom" "$k" replay 2>&1); then
            pass "$base/k$k/totals"
        else
            fail "$base/k$k/totals" "$(printf '%s' "$out" | head -c 600)"
        fi
        # Each disk's process series add up to its totals and to the csv's.
        if out=$(python3 "$HERE/../oracles/metrics_sums.py" "$TMP/m.prom" "$TMP/ev.csv" 2>&1); then
            pass "$base/k$k/process_sums_per_disk"
        else
            fail "$base/k$k/process_sums_per_disk" "$(printf '%s' "$out" | head -c 600)"
        fi
    done
    # Lines and metrics together: -f json prints what it prints without.
    "$DISKMON" -r "$etl" -f json --metrics "$TMP/m2.prom" >"$TMP/ev2.json" 2>/dev/null
    check "$base/lines_beside_metrics" cmp -s "$TMP/ev.json" "$TMP/ev2.json"
    check "$base/metrics_beside_lines" test -s "$TMP/m2.prom"
done

etl=$(ls "$ETL"/*.etl | head -n 1)
# One interval for --top and --metrics: --interval sets --top's when --top
# has no SEC of its own.
"$DISKMON" -r "$etl" --top --interval 2 -f json 2>/dev/null | head -n 1 >"$TMP/top.json"
check interval_sets_top grep -q '"interval_start":0.000000000,"interval_end":2.000000000' "$TMP/top.json"

# The alert rule of docs/metrics.md is a valid Prometheus rules file.
awk '/^groups:/ { on = 1 } on && /^```/ { exit } on' "$HERE/../../docs/metrics.md" >"$TMP/rules.yml"
if [ -s "$TMP/rules.yml" ] && out=$(promtool check rules "$TMP/rules.yml" 2>&1); then
    pass readme_alert_rule
else
    fail readme_alert_rule "$(printf '%s' "$out" | head -c 300)"
fi

# The systemd unit of the daemon mode, as the build wrote it from its
# template, is one systemd accepts (its diskmon path pointed at this build,
# its man page reference left out); install.sh checks the installed one.
unit=$(dirname "$DISKMON")/pkg/diskmon-metrics.service
if [ ! -f "$unit" ]; then
    echo "SKIP metrics/systemd_unit_verifies: no $unit (not a Linux build tree)"
elif command -v systemd-analyze >/dev/null; then
    sed "s|^ExecStart=[^ ]*/diskmon |ExecStart=$DISKMON |; /^Documentation=/d" \
        "$unit" >"$TMP/diskmon-metrics.service"
    if out=$(systemd-analyze verify "$TMP/diskmon-metrics.service" 2>&1) && [ -z "$out" ]; then
        pass systemd_unit_verifies
    else
        fail systemd_unit_verifies "$(printf '%s' "$out" | head -c 300)"
    fi
else
    echo "SKIP metrics/systemd_unit_verifies: systemd-analyze is not installed"
fi

# A directory diskmon may not write into: one message, the events are
# still printed, exit 1.
mkdir "$TMP/ro"
chmod 555 "$TMP/ro"
as_user=()
if [ "$(id -u)" = 0 ]; then
    # root writes anywhere: run it as nobody, for whom 0555 holds
    if command -v setpriv >/dev/null; then
        as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups)
    fi
fi
if [ "$(id -u)" != 0 ] || [ ${#as_user[@]} -gt 0 ]; then
    "${as_user[@]}" "$DISKMON" -r "$etl" -f csv --metrics "$TMP/ro/m.prom" \
        >"$TMP/out" 2>"$TMP/err"; rc=$?
    n=$(grep -c "cannot write the metrics file" "$TMP/err")
    # Exit 1: a replay writes the file once, and that write failed.
    if [ "$rc" -eq 1 ] && [ "$n" -eq 1 ] && [ -s "$TMP/out" ] && [ ! -e "$TMP/ro/m.prom" ]; then
        pass unwritable_dir_one_message
    else
        fail unwritable_dir_one_message "rc=$rc messages=$n stderr=$(head -c 300 "$TMP/err")"
    fi
else
    echo "SKIP metrics/unwritable_dir_one_message: root without setpriv"
fi

# --metrics naming the input trace (through a symlink): refused, trace intact.
ln -s "$etl" "$TMP/link.etl"
sum_before=$(cksum <"$etl")
"$DISKMON" -r "$etl" --metrics "$TMP/link.etl" >/dev/null 2>"$TMP/err"; rc=$?
if [ "$rc" -eq 2 ] && [ "$(cksum <"$etl")" = "$sum_before" ] && [ -L "$TMP/link.etl" ]; then
    pass metrics_is_input_refused
else
    fail metrics_is_input_refused "rc=$rc $(cat "$TMP/err")"
fi

[ "$fails" -eq 0 ]
