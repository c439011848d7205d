#!/usr/bin/env bash
# layers.sh - the source tree's arrows all point down the data flow.
#
# Checks, from the sources themselves (no build needed):
#   includes-down  no file includes a header of a higher layer;
#   no-cross-os    no OS backend includes another's headers;
#   include-loops  no two files include each other, directly or round a loop;
#   one-writer     nothing writes stdout or stderr through stdio;
#   in-repo        no comment cites a path outside the repository or a
#                  tracker number;
#   small-files    no source file is over 800 lines;
#   short-functions no function is over 150 lines (from its "{" to its "}",
#                  which the code keeps at column 0);
# and, for each build tree given, from its object files (with the tree's own
# nm, CMAKE_NM in its CMakeCache.txt: x86_64-w64-mingw32-nm for MinGW, so
# the Windows folders are held to the same rule):
#   call-loops     no two source files call each other, directly or round a
#                  loop (a file's undefined symbols resolved to the file that
#                  defines them). Objects whose source is gone are left out;
#                  a tree older than its sources, or one that is missing, is
#                  a SKIP that says so (tests/run.sh windows builds MinGW's).
#
# The layers, low to high. A file may include its own layer and lower ones.
#   0 include/, src/base   the event, errors, notes, k-way merge, byte reads
#   1 src/platform         threads, clocks, signals, files per OS
#   2 src/output           one event as a line; escapes, digits, time zones
#   3 src/decode           NT kernel records to events
#   4 src/views            the summary, --top, --metrics
#   5 src/cli              the command line, parsed once (struct dm_options,
#                          which every layer above reads)
#   6 src/core             the pipe: sink, filter, ring, printer, pipeline
#   7 src/etl              the .etl reader and the replay source
#     src/input            -r's formats (one file each, input_list.h), the
#                          line runner and dm_input_source, which picks
#                          the format and runs it (the .etl one through
#                          src/etl's replay source)
#   8 src/linux, src/etw, src/unsupported  the live sources (push into the
#                          core's sink); none includes another
#     src/selftest         --self-test: drives a live source through the
#                          core (the replay-only stub in src/unsupported
#                          answers for it)
#   9 src/main.c
# A new folder must be given a layer here, or the check fails.
#
# Usage: layers.sh SOURCE_DIR [BUILD_DIR...]. Exit 0 pass, 1 fail.
set -u
ROOT=$(cd "${1:?usage: layers.sh SOURCE_DIR [BUILD_DIR...]}" && pwd)
shift
cd "$ROOT" || exit 1
fails=0
pass() { echo "PASS layers/$1"; }
fail() { echo "FAIL layers/$1: $2"; fails=$((fails + 1)); }

layer() { # path -> layer number, or nothing for an unknown place
    case $1 in
        include/*|src/base/*) echo 0 ;;
        src/platform/*) echo 1 ;;
        src/output/*) echo 2 ;;
        src/decode/*) echo 3 ;;
        src/views/*) echo 4 ;;
        src/cli/*) echo 5 ;;
        src/core/*) echo 6 ;;
        src/etl/*|src/input/*) echo 7 ;;
        src/linux/*|src/etw/*|src/unsupported/*|src/selftest/*) echo 8 ;;
        src/main.c) echo 9 ;;
    esac
}

# "includer included" for every #include "..." in the tree; diskmon.h is
# include/, every other header is named from src/.
edges=$(mktemp)
trap 'rm -f "$edges" "$edges".*' EXIT
for f in include/*.h $(find src -name '*.[ch]' | sort); do
    sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" |
        while read -r h; do
            if [ "$h" = diskmon.h ]; then h=include/diskmon.h; else h=src/$h; fi
            echo "$f $h"
        done
done >"$edges"

up="" unknown="" cross="" missing=""
while read -r from to; do
    lf=$(layer "$from") lt=$(layer "$to")
    [ -e "$to" ] || missing="$missing $from->$to"
    if [ -z "$lf" ] || [ -z "$lt" ]; then
        unknown="$unknown $from->$to"
    elif [ "$lt" -gt "$lf" ]; then
        up="$up $from->$to"
    elif [ "$lf" -eq 8 ] && [ "$lt" -eq 8 ] && [ "${to#src/selftest/}" = "$to" ] &&
        [ "$(dirname "$from")" != "$(dirname "$to")" ]; then
        cross="$cross $from->$to"
    fi
done <"$edges"
n=$(wc -l <"$edges")
if [ -n "$up$unknown$missing" ]; then
    fail includes-down "${up:+upward:$up}${unknown:+ no layer (add it to layers.sh):$unknown}${missing:+ not found:$missing}"
else
    pass includes-down
    echo "   $n includes, none upward"
fi
if [ -n "$cross" ]; then fail no-cross-os "$cross"; else pass no-cross-os; fi

# tsort names the files of any loop on stderr.
loops() { # edge file, test name
    if tsort "$1" >/dev/null 2>"$1.err"; then
        pass "$2"
    else
        fail "$2" "$(grep -v 'input contains a loop' "$1.err" | sed 's/^tsort: //' | tr '\n' ' ')"
    fi
}
awk '$1 != $2' "$edges" >"$edges.inc"
loops "$edges.inc" include-loops

# call-loops in one build tree: "call-loops" for the first tree given,
# "call-loops/NAME" (its folder's name) for the others.
call_loops() { # build dir, test name
    local build=$1 name=$2 nmtool objs o src stale=0
    if [ ! -f "$build/CMakeCache.txt" ]; then
        echo "SKIP layers/$name: no build tree at $build (tests/run.sh windows builds build/mingw-x64)"
        return
    fi
    nmtool=$(sed -n 's/^CMAKE_NM:FILEPATH=//p' "$build/CMakeCache.txt")
    [ -n "$nmtool" ] || nmtool=nm
    # Objects of the program's own sources (the dm_core library and main).
    objs=$(find "$build/CMakeFiles/dm_core.dir" "$build/CMakeFiles/diskmon.dir" \
        -name '*.c.o' -o -name '*.c.obj' 2>/dev/null | sort)
    if [ -z "$objs" ] || ! command -v "$nmtool" >/dev/null 2>&1; then
        fail "$name" "no objects under $build/CMakeFiles (dm_core.dir, diskmon.dir) or no $nmtool"
        return
    fi
    for o in $objs; do
        src=${o#*.dir/}; src=${src%.o}; src=${src%.obj}
        [ -e "$src" ] || continue # a source since removed or renamed
        [ "$src" -nt "$o" ] && stale=$((stale + 1))
        "$nmtool" "$o" 2>/dev/null | awk -v f="$src" \
            'NF == 3 && $2 ~ /^[TDBR]$/ { print "D", $3, f }
             NF == 2 && $1 == "U" { print "U", $2, f }'
    done >"$edges.sym"
    if [ "$stale" -gt 0 ]; then
        echo "SKIP layers/$name: $stale objects in $build are older than their sources; rebuild the tree"
        return
    fi
    awk '$1 == "D" { def[$2] = $3; next }
         { use[NR] = $2; by[NR] = $3 }
         END { for (i in use) if ((use[i] in def) && def[use[i]] != by[i])
                   print by[i], def[use[i]] }' "$edges.sym" "$edges.sym" |
        sort -u >"$edges.call"
    loops "$edges.call" "$name"
    echo "   $(wc -l <"$edges.call") calls between $(awk '{ print $3 }' "$edges.sym" | sort -u | wc -l) files ($nmtool)"
}
first=1
for build in "$@"; do
    if [ "$first" -eq 1 ]; then
        call_loops "$build" call-loops
    else
        call_loops "$build" "call-loops/$(basename "$build")"
    fi
    first=0
done

# one-writer: every byte for stdout and stderr goes through dm_write_all
# (output/text.h), which owns the OS's error codes and a console's UTF-16;
# stdio writes to them would bring back the CRT's EINVAL for a closed
# pipe. Only the writer itself may call fwrite (a memory stream in tests).
stdio=$(grep -nE '\b(printf|puts|putchar|vprintf)\(|\b(fprintf|vfprintf|fputs|fputc|fwrite)\((stdout|stderr|errf|out|t->out|m->errf)\b' \
    $(find src -name '*.c' | sort) | grep -vE '^src/platform/(posix|win32_console)\.c:' || true)
if [ -n "$stdio" ]; then fail one-writer "$(echo "$stdio" | tr '\n' ' ')"; else pass one-writer; fi

# in-repo: comments cite the project's own docs or primary sources, never
# a file outside the repository, and carry no tracker numbers.
outside=$(grep -rnE '(etw|linux-block|metrics)-facts\.md|shared/docs|\b[Ii]ssue [0-9]+' \
    include src tests CMakeLists.txt docs --include='*.[ch]' --include='*.sh' \
    --include='*.py' --include='*.txt' --include='*.in' --include='*.md' 2>/dev/null |
    grep -v '^tests/scripts/layers.sh:' || true)
if [ -n "$outside" ]; then fail in-repo "$(echo "$outside" | head -5 | tr '\n' ' ')"; else pass in-repo; fi

# small-files: no source file over 800 lines (one job each).
big=$(find src include -name '*.[ch]' -exec wc -l {} + | awk '$2 != "total" && $1 > 800 { print $2 " (" $1 " lines)" }')
if [ -n "$big" ]; then fail small-files "$(echo "$big" | tr '\n' ' ')"; else pass small-files; fi

# short-functions: no function over 150 lines, counted from the "{" that
# opens it to the "}" that closes it, both at column 0 (the code's style).
long=$(find src include -name '*.[ch]' | sort | xargs awk '
    FNR == 1 { open = 0 }
    /^\{/ { open = FNR; next }
    /^\}/ { if (open && FNR - open + 1 > 150) print FILENAME ":" open " (" FNR - open + 1 " lines)"
            open = 0 }')
if [ -n "$long" ]; then fail short-functions "$(echo "$long" | tr '\n' ' ')"; else pass short-functions; fi

[ "$fails" -eq 0 ]
