#!/usr/bin/env bash
# docs.sh - the man page renders without warnings (groff -ww, mandoc -T lint,
# man at 80 columns); every option --help lists is in the man page, in the
# README's options table and in the bash completion, and the reverse; the
# completion offers the documented values. --help is printed from the rows
# of src/cli/option_table.c (test_options.c checks every row is on it), so
# these lists are checked against the option table itself.
# Usage: docs.sh PATH/TO/diskmon. Exit 0 pass, 1 fail, 77 skip.
set -u
DISKMON=$(realpath "${1:?usage: docs.sh DISKMON}")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
MAN=$ROOT/docs/diskmon.1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0

pass() { echo "PASS docs/$1"; }
fail() { echo "FAIL docs/$1: $2"; fails=$((fails + 1)); }
skip() { # name, reason: a failure under CI=true, where the tools must be there
    if [ "${CI:-}" = true ]; then fail "$1" "$2 (required under CI=true)"; else echo "SKIP docs/$1: $2"; fi
}

# --- the man page renders cleanly --------------------------------------------
if command -v groff >/dev/null; then
    if groff -t -man -ww -z "$MAN" >"$TMP/groff" 2>&1 && [ ! -s "$TMP/groff" ]; then
        pass man_groff_no_warnings
    else
        fail man_groff_no_warnings "$(head -5 "$TMP/groff")"
    fi
else
    skip man_groff_no_warnings "groff is not installed (apt-get install groff-base)"
fi
if command -v mandoc >/dev/null; then
    if mandoc -T lint "$MAN" >"$TMP/lint" 2>&1 && [ ! -s "$TMP/lint" ]; then
        pass man_mandoc_lint_clean
    else
        fail man_mandoc_lint_clean "$(head -5 "$TMP/lint")"
    fi
else
    skip man_mandoc_lint_clean "mandoc is not installed (apt-get install mandoc)"
fi
if command -v man >/dev/null; then
    if MANWIDTH=80 man -l "$MAN" >"$TMP/man.txt" 2>"$TMP/man.err" && [ ! -s "$TMP/man.err" ] &&
        grep -q "EXIT STATUS" "$TMP/man.txt"; then
        pass man_renders_at_80_columns
    else
        fail man_renders_at_80_columns "$(head -5 "$TMP/man.err")"
    fi
else
    skip man_renders_at_80_columns "man is not installed (apt-get install man-db)"
fi

# --- the same options everywhere --------------------------------------------
# --help: the option column of lines that start with spaces and a dash.
"$DISKMON" --help | sed -n 's/^  \{1,\}\(-[a-zA-Z], \)\{0,1\}\(--[a-z-]*\).*/\2/p' |
    sort -u >"$TMP/help.long"
"$DISKMON" --help | sed -n 's/^  \{1,\}\(-[a-zA-Z]\), --.*/\1/p' | sort -u >"$TMP/help.short"
# The man page: the tag line after each .TP in OPTIONS (roff \- is a dash).
awk '/^\.SH OPTIONS/ { on = 1; next } /^\.SH / { on = 0 }
     on && tp { print; tp = 0 } on && /^\.TP/ { tp = 1 }' "$MAN" | sed 's/\\-/-/g' >"$TMP/man.tags"
grep -o -- '--[a-z-]*' "$TMP/man.tags" | sort -u >"$TMP/man.long"
grep -o -- '^\.BR* -[a-zA-Z]\b' "$TMP/man.tags" | awk '{ print $2 }' | sort -u >"$TMP/man.short"
# The README: the first cell of the Options table rows.
awk '/^## Options/ { on = 1; next } /^## / { on = 0 } on && /^\| `/' "$ROOT/README.md" |
    cut -d'|' -f2 >"$TMP/readme.cells"
grep -o -- '--[a-z-]*' "$TMP/readme.cells" | sort -u >"$TMP/readme.long"
grep -o -- '`-[a-zA-Z]\b' "$TMP/readme.cells" | tr -d '`' | sort -u >"$TMP/readme.short"
# The completion's option list.
sed -n '/local opts="/,/"/p' "$ROOT/docs/diskmon.bash" | tr ' "' '\n\n' |
    grep -- '^-' | sort -u >"$TMP/comp.all"
cat "$TMP/help.long" "$TMP/help.short" | sort -u >"$TMP/help.all"

same() { # name, file a, file b
    if [ -s "$2" ] && cmp -s "$2" "$3"; then
        pass "$1"
    else
        fail "$1" "$(diff "$2" "$3" | grep '^[<>]' | tr '\n' ' ')"
    fi
}
same help_long_options_in_man "$TMP/help.long" "$TMP/man.long"
same help_short_options_in_man "$TMP/help.short" "$TMP/man.short"
same help_long_options_in_readme "$TMP/help.long" "$TMP/readme.long"
same help_short_options_in_readme "$TMP/help.short" "$TMP/readme.short"
same help_options_in_completion "$TMP/help.all" "$TMP/comp.all"
# Sanity: the extraction found the options it must (a broken sed would
# make every list empty or equal for the wrong reason).
if [ "$(wc -l <"$TMP/help.long")" -ge 20 ] && grep -qx -- '--utc' "$TMP/help.long" &&
    grep -qx -- '-r' "$TMP/help.short"; then
    pass help_extraction_sane
else
    fail help_extraction_sane "$(tr '\n' ' ' <"$TMP/help.long")"
fi

# --- the completion offers the values -------------------------------------
complete_words() { # words... (the last is being completed)
    bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1));
             _diskmon; printf "%s\n" "${COMPREPLY[@]}"' _ "$ROOT/docs/diskmon.bash" "$@" | sort | tr '\n' ' '
}
got=$(complete_words diskmon -f "")
[ "$got" = "csv json text " ] && pass completion_formats || fail completion_formats "[$got]"
got=$(complete_words diskmon --op read,w)
[ "$got" = "read,write " ] && pass completion_op_list || fail completion_op_list "[$got]"
got=$(complete_words diskmon --flags fua,sync_)
[ "$got" = "fua,sync_api fua,sync_paging " ] && pass completion_flags_list || fail completion_flags_list "[$got]"
got=$(complete_words diskmon --top --by "")
[ "$got" = "cgroup disk file partition process " ] && pass completion_by_keys || fail completion_by_keys "[$got]"
got=$(complete_words diskmon --ut)
[ "$got" = "--utc " ] && pass completion_options || fail completion_options "[$got]"

[ "$fails" -eq 0 ]
