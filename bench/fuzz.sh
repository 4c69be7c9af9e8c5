#!/bin/sh
# Builds the libFuzzer targets (fuzz/, one per reader) with clang, ASan and UBSan in build-fuzz/ and runs each for
# a fixed time on a seed corpus gathered from tests/ and data/, at nice 19. Prints executions and findings per target.
# Usage: bench/fuzz.sh [seconds per target (default 60)] [target ...]   (targets: spice yaml hardware idx model)
set -eu
cd "$(dirname "$0")/.."
secs=${1:-60}
[ $# -gt 0 ] && shift
targets=${*:-spice yaml hardware idx model}
build=${ANASIM_FUZZ_BUILD:-build-fuzz}
root=$(pwd)

CC=clang CXX=clang++ cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DANASIM_BUILD_FUZZ=ON \
  -DANASIM_BUILD_TESTS=OFF -DANASIM_BUILD_BENCH=OFF -DANASIM_BUILD_PYTHON=OFF -DANASIM_NATIVE=OFF \
  -DANASIM_STATIC_HDF5=OFF >/dev/null
for t in $targets; do nice -n 19 cmake --build "$build" -j2 --target "fuzz_$t" >/dev/null; done

# Seed corpora: every netlist, hardware config and data file of the repository of the reader's kind.
corpus="$build/corpus"
mkdir -p "$corpus/spice" "$corpus/yaml" "$corpus/hardware" "$corpus/idx" "$corpus/model"
find tests data -type f \( -name '*.cir' -o -name '*.sp' -o -name '*.spice' -o -name '*.lib' \) -size -64k \
  -exec cp {} "$corpus/spice/" \; 2>/dev/null || true
find tests data -type f \( -name '*.yaml' -o -name '*.yml' \) -size -64k -exec cp {} "$corpus/yaml/" \; 2>/dev/null || true
grep -l -r --include='*.yaml' -e 'hardware:' -e 'sigma_g' tests data 2>/dev/null | xargs -r cp -t "$corpus/hardware/"
# IDX: tiny image and label files (plain and gzip) written here; model: the shipped models are large, so only
# their first 64 KiB (the header and the attributes) plus any small .h5 files in tests/.
printf '\000\000\010\003\000\000\000\002\000\000\000\002\000\000\000\002\001\002\003\004\005\006\007\010' >"$corpus/idx/img"
printf '\000\000\010\001\000\000\000\003\001\002\003' >"$corpus/idx/lab"
gzip -c "$corpus/idx/img" >"$corpus/idx/img.gz"
for m in data/*.h5; do head -c 65536 "$m" >"$corpus/model/$(basename "$m")"; done
find tests -type f -name '*.h5' -size -64k -exec cp {} "$corpus/model/" \; 2>/dev/null || true

for t in $targets; do
  mkdir -p "$build/findings/$t" "$build/work/$t"
  log="$build/fuzz_$t.log"
  # -rss_limit_mb: a reader that allocates more than 2 GB on some input is a finding (memory guard).
  ( cd "$build/findings/$t" && nice -n 19 "$root/$build/fuzz/fuzz_$t" -max_total_time="$secs" -rss_limit_mb=2048 \
      -timeout=10 -print_final_stats=1 -max_len=65536 "$root/$build/work/$t" "$root/$build/corpus/$t" \
      >"$root/$log" 2>&1 ) || true
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || true)
  [ -n "$execs" ] || execs=$(grep -o '#[0-9]*' "$log" | tail -1 | tr -d '#')
  found=$(ls "$build/findings/$t" | grep -c -e '^crash-' -e '^leak-' -e '^timeout-' -e '^oom-' || true)
  echo "fuzz_$t: ${execs:-?} executions in ${secs} s, ${found} findings (log $log, inputs in $build/findings/$t)"
done
