#!/usr/bin/env bash
# docs.sh - the man page renders without warnings (groff -ww, mandoc -T lint,
# man at 80 columns); every option --help lists is in the man page, in the
# README's options table, in docs/options.md's and in the bash completion,
# and the reverse; the README has at most 250 lines and every relative link
# of it and of docs/*.md resolves (file and heading); the
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
# docs/options.md (every option's rules): the first cell of its table rows.
awk '/^## Options/ { on = 1; next } /^## / { on = 0 } on && /^\| `/' "$ROOT/docs/options.md" |
    cut -d'|' -f2 >"$TMP/full.cells"
grep -o -- '--[a-z-]*' "$TMP/full.cells" | sort -u >"$TMP/full.long"
grep -o -- '`-[a-zA-Z]\b' "$TMP/full.cells" | tr -d '`' | sort -u >"$TMP/full.short"
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
same help_long_options_in_options_md "$TMP/help.long" "$TMP/full.long"
same help_short_options_in_options_md "$TMP/help.short" "$TMP/full.short"
# Sanity: the extraction found the options it must (a broken sed would
# make every list empty or equal for the wrong reason).
if [ "$(wc -l <"$TMP/help.long")" -ge 20 ] && grep -qx -- '--utc' "$TMP/help.long" &&
    grep -qx -- '-r' "$TMP/help.short"; then
    pass help_extraction_sane
else
    fail help_extraction_sane "$(tr '\n' ' ' <"$TMP/help.long")"
fi

# --- the README: short, and its links lead somewhere --------------------------
# At most 250 lines (the rest lives in docs/, one link away).
lines=$(wc -l <"$ROOT/README.md")
if [ "$lines" -le 250 ]; then
    pass readme_at_most_250_lines
else
    fail readme_at_most_250_lines "README.md has $lines lines"
fi
# Every relative link of the README and of docs/*.md names a file that
# exists and, for a .md with #anchor, a heading of it (GitHub's anchors:
# lower case, punctuation dropped, spaces as dashes). The glob is taken in
# the source tree: CTest runs this from the build tree.
if ! command -v python3 >/dev/null; then
    skip links_resolve "python3 is not installed (apt-get install python3)"
elif (cd "$ROOT" && python3 - "$ROOT" README.md docs/*.md) >"$TMP/links" 2>&1 <<'PY'; then
import os, re, sys
os.chdir(sys.argv[1])
def slug(h):
    h = re.sub(r"[^\w\- ]", "", h.strip().lower())
    return h.replace(" ", "-")
heads = {}
def headings(path):
    if path not in heads:
        found, fenced = set(), False
        for line in open(path, encoding="utf-8"):
            fenced ^= line.startswith("```")
            if not fenced and line.startswith("#"):
                found.add(slug(line.lstrip("#")))
        heads[path] = found
    return heads[path]
bad, seen = 0, 0
for f in sys.argv[2:]:
    text = re.sub(r"```.*?```", "", open(f, encoding="utf-8").read(), flags=re.S)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        seen += 1
        path, _, frag = target.partition("#")
        full = os.path.normpath(os.path.join(os.path.dirname(f), path)) if path else f
        if not os.path.exists(full):
            print(f"{f}: {target}: no such file"); bad += 1
        elif frag and full.endswith(".md") and frag not in headings(full):
            print(f"{f}: {target}: no such heading"); bad += 1
print(f"{seen} links")
sys.exit(1 if bad or seen < 20 else 0)
PY
    pass links_resolve
else
    fail links_resolve "$(head -n 5 "$TMP/links" | tr '\n' ' ')"
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
