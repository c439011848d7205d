# results.sh - the result lines of the replay test scripts (cli.sh, top.sh),
# sourced after SUITE is set: "PASS SUITE/name" and "FAIL SUITE/name: why",
# the form tests/run.sh counts; $fails counts the failures.
fails=0
pass() { echo "PASS $SUITE/$1"; }
fail() { echo "FAIL $SUITE/$1: $2"; fails=$((fails + 1)); }
check() { # name, condition command...
    local name=$1; shift
    if "$@"; then pass "$name"; else fail "$name" "$*"; fi
}
