# results.sh - the result lines of the replay test scripts (cli.sh, top.sh),
# sourced after SUITE is set: "PASS SUITE/name" and "FAIL SUITE/name: why",
# the form tests/run.sh counts; $fails counts the failures. need ends a
# suite that cannot go on here.
fails=0
pass() { echo "PASS $SUITE/$1"; }
fail() { echo "FAIL $SUITE/$1: $2"; fails=$((fails + 1)); }
check() { # name, condition command...
    local name=$1; shift
    if "$@"; then pass "$name"; else fail "$name" "$*"; fi
}

# need NAME WHY: what the rest of the suite needs is missing (the sample
# traces, a tool). Under CI=true, where everything must be there, that is
# "FAIL SUITE/NAME: WHY (required under CI=true)", else "SKIP SUITE/NAME:
# WHY". Then exit: 1 when a check failed, else 77 (a skip).
need() {
    if [ "${CI:-}" = true ]; then
        fail "$1" "$2 (required under CI=true)"
    else
        echo "SKIP $SUITE/$1: $2"
    fi
    [ "$fails" -eq 0 ] && exit 77
    exit 1
}
