#!/bin/sh
# bench_results_cited.sh - the repository keeps only the benchmark runs the
# docs cite (docs/benchmarking.md, "Results"): every entry of bench/results/
# is named in docs/*.md, or in a file of another entry (a cited run's own
# note naming its raw data); and every bench/results/ path the docs name
# exists (globs and names spelt out after the path, `X.{txt,json}`, allowed;
# the placeholder DATE skipped).
# Exit 0 pass, 1 fail, 77 skip (no bench/results: a release tarball).
set -u
SRC=${srcdir:-$(dirname "$0")/..}
R=$SRC/bench/results
# a release tarball carries no results (they are not in EXTRA_DIST)
[ -d "$R" ] || { echo "SKIP: no bench/results here (a release tarball)"; exit 77; }
fails=0
for e in "$R"/*; do
    [ -e "$e" ] || continue
    name=$(basename "$e")
    stem=${name%%.*}
    stem=${stem%-summary}
    if grep -qF -- "$stem" "$SRC"/docs/*.md; then continue; fi
    if grep -rlF -- "$stem" "$R" 2>/dev/null | grep -v "/$stem[-./]" | grep -q .; then continue; fi
    if grep -rlF -- "$stem" "$R" 2>/dev/null | grep -v "^$R/$stem" | grep -q .; then continue; fi
    echo "FAIL: bench/results/$name is cited nowhere in docs/ (git rm it, or cite it)"
    fails=$((fails + 1))
done
for p in $(grep -ohE 'bench/results/[A-Za-z0-9_.*/-]+' "$SRC"/docs/*.md | sort -u); do
    p=${p%.}
    case $p in *DATE*) continue ;; esac
    # a glob, or the first part of a name the text goes on to spell out
    # (`dump-X.{txt,json}`, `scale-<stamp>`): something must match it
    # shellcheck disable=SC2086
    set -- $SRC/$p*
    if [ -e "$1" ]; then continue; fi
    echo "FAIL: docs cite $p, which is not in the tree"
    fails=$((fails + 1))
done
[ $fails = 0 ] && echo "ok: every bench/results entry cited, every citation resolves"
[ $fails = 0 ]
