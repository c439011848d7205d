#!/usr/bin/env bash
# report.sh - --report FILE.html opened in headless Chromium (Debian's
# chromium, tests/deps.sh): for the shared x64 and Windows 11 traces
# (skipped with the reason where absent) and a synthetic gen_etl trace,
# report_check.py finds no script and nothing that fetches (in the page
# and in the DOM Chromium rendered), no console line, the -s counts that
# python sums from the json rows of the same input in the rendered table,
# and screenshots at phone and desktop width that are not blank; the page
# prints to PDF; the same for a trace whose names hold control bytes and
# escape sequences (hostile_names.py's patch). Two pages of our own prove the checks can fail: one with
# a script error (console), one with an outside image (fetches).
# Usage: report.sh PATH/TO/diskmon BUILD_DIR. Exit 0 pass, 1 fail, 77 skip.
set -u
DISKMON=${1:?usage: report.sh DISKMON BUILD_DIR}
BUILD=${2:?usage: report.sh DISKMON BUILD_DIR}
DISKMON=$(cd "$(dirname "$DISKMON")" && pwd)/$(basename "$DISKMON")
HERE=$(cd "$(dirname "$0")" && pwd)
ETL=${DM_SHARED_ETL:-$HERE/../../../shared/etl}
CHECK=$HERE/../oracles/report_check.py
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
SUITE=report
# shellcheck source=../lib/results.sh
. "$HERE/../lib/results.sh"

CHROME=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROME" ]; then
    echo "SKIP $SUITE/browser: chromium is not installed (tests/deps.sh installs it as root)"
    exit 77
fi
# A fresh profile each time; no sync, updates or background fetches of its own.
browse() { # output options..., file URL last
    timeout 90 "$CHROME" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$(mktemp -d "$TMP/profile.XXXXXX")" "$@"
}

page() { # name, diskmon args...
    local name=$1 d=$TMP/$1; shift
    mkdir -p "$d"
    if ! "$DISKMON" "$@" -f json --report "$d/r.html" >"$d/rows.json" 2>"$d/err"; then
        fail "$name" "diskmon failed: $(head -c 300 "$d/err")"
        return
    fi
    browse --enable-logging=stderr --v=0 --dump-dom "file://$d/r.html" >"$d/dom.html" \
        2>"$d/console.log"
    browse --screenshot="$d/phone.png" --window-size=412,2400 "file://$d/r.html" 2>/dev/null
    browse --screenshot="$d/desk.png" --window-size=1280,2400 "file://$d/r.html" 2>/dev/null
    browse --print-to-pdf="$d/r.pdf" "file://$d/r.html" 2>/dev/null
    python3 "$CHECK" "$SUITE/$name" "$d/r.html" "$d/rows.json" "$d/dom.html" "$d/console.log" \
        "$d/phone.png" "$d/desk.png" || fails=$((fails + 1))
    if [ "$(head -c 4 "$d/r.pdf" 2>/dev/null)" = "%PDF" ] && [ "$(stat -c %s "$d/r.pdf")" -gt 10000 ]; then
        pass "${name}_prints"
    else
        fail "${name}_prints" "no PDF from --print-to-pdf"
    fi
    [ -n "${KEEP:-}" ] && cp "$d/desk.png" "$KEEP/$name.png"
}

for t in perfview-net452-x64-win8 filtrace-diskio-win11; do
    if [ -f "$ETL/$t.etl" ]; then
        page "$t" -r "$ETL/$t.etl"
    else
        echo "SKIP $SUITE/$t: $ETL/$t.etl is absent (the shared sample traces)"
    fi
done
GEN=$BUILD/gen_etl
[ -x "$GEN" ] || cmake --build "$BUILD" --target gen_etl >"$TMP/build.log" 2>&1
if [ -x "$GEN" ] && "$GEN" --ios 20000 --stretch 50 "$TMP/syn.etl" >/dev/null; then
    page synthetic -r "$TMP/syn.etl"
else
    fail synthetic "gen_etl could not be built or run"
fi

# Names with control bytes, escape sequences and C1 controls in the top
# tables (hostile_names.py's patch of a gen_etl trace): the page still
# parses, fetches nothing and shows the counts.
if [ -x "$GEN" ] && "$GEN" --ios 3000 --cpus 2 --processes 16 --threads 4 --files 64 \
    --open 64 "$TMP/plain.etl" >/dev/null &&
    python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import hostile_names as h
d, n = h.patch(open(sys.argv[2], "rb").read()); open(sys.argv[3], "wb").write(d)
sys.exit(0 if n > 10 else 1)' "$HERE" "$TMP/plain.etl" "$TMP/hostile.etl"; then
    page hostile_names -r "$TMP/hostile.etl"
else
    fail hostile_names "the hostile trace could not be made"
fi

# --- the checks can fail ----------------------------------------------------------
d=$TMP/controls
mkdir -p "$d"
printf '<!DOCTYPE html><html><body><script>nosuch();</script><p>x</p></body></html>\n' >"$d/js.html"
browse --enable-logging=stderr --v=0 --dump-dom "file://$d/js.html" >"$d/js.dom" 2>"$d/js.log"
grep -q ':CONSOLE' "$d/js.log" && pass control_script_error_seen ||
    fail control_script_error_seen "Chromium's log shows no console line for a script error"
printf '<!DOCTYPE html><html><body><img src="http://192.0.2.1/x.png"></body></html>\n' >"$d/img.html"
python3 "$CHECK" control "$d/img.html" /dev/null "$d/img.html" /dev/null >"$d/img.out" 2>&1
grep -q '^FAIL control/page_fetches_nothing' "$d/img.out" && pass control_outside_image_seen ||
    fail control_outside_image_seen "$(head -3 "$d/img.out")"

[ "$fails" -eq 0 ]
