#!/bin/sh
# make soak: runs the soak driver (tests/soak.rs, SOAK_MINUTES, default 30) on the bridge double,
# then plots its samples (target/soak/soak.csv) to target/soak/soak.png with gnuplot. The verdict
# is the driver's (also in target/soak/summary.txt); the plot is drawn whether it passed or not.
# gnuplot-nox is installed with apt-get when missing (as root), as ensure-tools.sh does.
set -eu
cd "$(dirname "$0")/.."
out="$PWD/target/soak"
mkdir -p "$out"

if ! command -v gnuplot >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "soak: installing gnuplot-nox" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y --no-install-recommends gnuplot-nox >/dev/null 2>&1 ||
            { apt-get update >/dev/null 2>&1 && apt-get install -y --no-install-recommends gnuplot-nox; } ||
            { echo "soak: FAILED: apt-get could not install gnuplot-nox" >&2; exit 1; }
    else
        echo "soak: FAILED: gnuplot is missing; install gnuplot-nox (e.g. sudo apt-get install -y gnuplot-nox)" >&2
        exit 1
    fi
fi

status=0
SOAK_MINUTES="${SOAK_MINUTES:-30}" SOAK_DIR="$out" \
    ${CARGO:-cargo} test --test soak -- --ignored --nocapture || status=$?

[ -s "$out/soak.csv" ] || { echo "soak: FAILED: no samples in $out/soak.csv" >&2; exit 1; }
verdict=$(grep '^verdict:' "$out/summary.txt" 2>/dev/null || echo "verdict: none (the driver stopped early)")
gnuplot <<EOF
set terminal pngcairo size 1200,800 font ",10"
set output "$out/soak.png"
set datafile separator ","
set key autotitle columnhead top left
set xlabel "minutes"
set grid
set yrange [0:*]
set multiplot layout 2,2 title "make soak (double, ${SOAK_MINUTES:-30} min): $verdict"
set title "memory (MiB)"
plot "$out/soak.csv" using (\$1/60):(\$2/1024) with lines lw 2 title "RSS", \
     "" using (\$1/60):(\$10/1024) with lines lw 2 title "live heap"
set title "threads and open fds"
plot "$out/soak.csv" using (\$1/60):3 with lines lw 2 title "threads", \
     "" using (\$1/60):4 with lines lw 2 title "fds"
set title "runs done and unexplained errors"
set y2tics
stats "$out/soak.csv" using 6 nooutput
set y2range [0:(STATS_max > 0 ? STATS_max * 1.2 : 1)]
plot "$out/soak.csv" using (\$1/60):5 with lines lw 2 title "runs", \
     "" using (\$1/60):6 axes x1y2 with lines lw 2 title "errors (right)"
unset y2tics
set title "bridge processes alive; bridge kills and client restarts so far (right)"
set yrange [0:3]
set y2tics
set y2range [0:*]
plot "$out/soak.csv" using (\$1/60):7 with steps lw 2 title "bridges alive", \
     "" using (\$1/60):8 axes x1y2 with lines lw 2 title "kills (right)", \
     "" using (\$1/60):9 axes x1y2 with lines lw 2 title "restarts (right)"
unset multiplot
EOF
echo "soak: $verdict; samples $out/soak.csv, plot $out/soak.png, summary $out/summary.txt"
exit $status
