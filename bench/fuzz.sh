#!/bin/sh
# Builds the libFuzzer targets (fuzz/, one per reader) with clang, ASan and UBSan in build-fuzz/ and runs each for
# a fixed time on a seed corpus gathered from tests/ and data/, at nice 19. Prints executions and findings per target.
# Usage: bench/fuzz.sh [seconds per target (default 60)] [target ...]   (targets: spice yaml hardware idx model)
#        ANASIM_FUZZ_PARALLEL=1 bench/fuzz.sh ...   runs the targets at the same time
#        ANASIM_FUZZ_NO_BUILD=1 bench/fuzz.sh ...   runs the targets as built (sources edited meanwhile ignored)
set -eu
cd "$(dirname "$0")/.."
secs=${1:-60}
[ $# -gt 0 ] && shift
targets=${*:-spice yaml hardware idx model}
build=${ANASIM_FUZZ_BUILD:-build-fuzz}
root=$(pwd)

if [ "${ANASIM_FUZZ_NO_BUILD:-0}" != 1 ]; then
  CC=clang CXX=clang++ cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DANASIM_BUILD_FUZZ=ON \
    -DANASIM_BUILD_TESTS=OFF -DANASIM_BUILD_BENCH=OFF -DANASIM_BUILD_PYTHON=OFF -DANASIM_NATIVE=OFF \
    -DANASIM_STATIC_HDF5=OFF >/dev/null
  for t in $targets; do nice -n 19 cmake --build "$build" -j2 --target "fuzz_$t" >/dev/null; done
  nice -n 19 cmake --build "$build" -j2 --target model_seeds >/dev/null
fi

# Seed corpora: every netlist, hardware config and data file of the repository of the reader's kind.
corpus="$build/corpus"
mkdir -p "$corpus/spice" "$corpus/yaml" "$corpus/hardware" "$corpus/idx" "$corpus/model"
find tests data -type f \( -name '*.cir' -o -name '*.sp' -o -name '*.spice' -o -name '*.lib' \) -size -64k \
  -exec cp {} "$corpus/spice/" \; 2>/dev/null || true
find tests data -type f \( -name '*.yaml' -o -name '*.yml' \) -size -64k -exec cp {} "$corpus/yaml/" \; 2>/dev/null || true
grep -l -r --include='*.yaml' -e 'hardware:' -e 'sigma_g' tests data 2>/dev/null | xargs -r cp -t "$corpus/hardware/"
# IDX: tiny image and label files (plain and gzip) written here; model: small complete files in anasim's format and
# in Keras' two layouts, written by fuzz/model_seeds (the shipped 784-128-10 models, 800 KiB, exceed -max_len, and a
# truncated HDF5 file is not a valid seed: its object headers point past the end).
printf '\000\000\010\003\000\000\000\002\000\000\000\002\000\000\000\002\001\002\003\004\005\006\007\010' >"$corpus/idx/img"
printf '\000\000\010\001\000\000\000\003\001\002\003' >"$corpus/idx/lab"
gzip -c "$corpus/idx/img" >"$corpus/idx/img.gz"
rm -f "$corpus/model/mlp_784_128_10.h5" "$corpus/model/mlp_784_128_10_hwa.h5"  # truncated seeds of earlier runs
"$build/fuzz/model_seeds" "$corpus/model"

# One target for $secs seconds at nice 19. -rss_limit_mb: a reader that allocates more than 2 GB on some input is a
# finding (memory guard). fuzz/lsan.supp: leaks inside libhdf5 itself (see there). allocator_may_return_null: a
# huge allocation fails as it does outside ASan (libhdf5 checks for that) instead of stopping the run.
# The model target runs in fork mode past crashes and hangs: libhdf5 1.10.8 crashes or loops forever on some
# damaged files (anasim reads them in a child process, engine/isolated_read); classify() tells those apart.
run_target() {
  mkdir -p "$build/findings/$1" "$build/work/$1"
  extra=""
  [ "$1" = model ] && extra="-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1"
  ( cd "$build/findings/$1" && LSAN_OPTIONS="suppressions=$root/fuzz/lsan.supp" \
      ASAN_OPTIONS="allocator_may_return_null=1" nice -n 19 \
      "$root/$build/fuzz/fuzz_$1" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
      -max_len=65536 $extra "$root/$build/work/$1" "$root/$build/corpus/$1" >"$root/$build/fuzz_$1.log" 2>&1 ) || true
}
# Each finding run again (with today's code): gone (no longer reproduces), libhdf5's own (the first stack frame
# outside the sanitizer runtime and libc is in libhdf5), or anasim's (listed).
classify() {
  gone=0 hdf5=0 other=0
  for f in "$build/findings/$1"/crash-* "$build/findings/$1"/timeout-* "$build/findings/$1"/oom-*; do
    [ -e "$f" ] || continue
    out=$(ASAN_OPTIONS=allocator_may_return_null=1 LSAN_OPTIONS="suppressions=$root/fuzz/lsan.supp" \
      timeout 30 "$build/fuzz/fuzz_$1" -timeout=5 -rss_limit_mb=2048 "$f" 2>&1 || true)
    top=$(echo "$out" | grep -E '^ +#[0-9]+ ' |
      grep -v -E 'interceptor|__asan|__sanitizer|libFuzzer|fuzzer::|libc\.so|malloc|calloc|realloc|memcpy|memmove|strlen|strdup' |
      head -1)
    if ! echo "$out" | grep -q 'ERROR:'; then gone=$((gone + 1))
    else case "$top" in *libhdf5*) hdf5=$((hdf5 + 1)) ;; *) other=$((other + 1)); echo "  anasim's? $f" ;; esac; fi
  done
  echo "  $1 findings now: $gone no longer reproduce, $hdf5 inside libhdf5, $other elsewhere"
}
# ANASIM_FUZZ_PARALLEL=1 runs the targets side by side (each then gets a share of the idle cores).
if [ "${ANASIM_FUZZ_PARALLEL:-0}" = 1 ]; then
  for t in $targets; do run_target "$t" & done
  wait
else
  for t in $targets; do run_target "$t"; done
fi
for t in $targets; do
  log="$build/fuzz_$t.log"
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || true)
  [ -n "$execs" ] || execs=$(grep -o '#[0-9]*' "$log" | tail -1 | tr -d '#')
  found=$(ls "$build/findings/$t" | grep -c -e '^crash-' -e '^leak-' -e '^timeout-' -e '^oom-' || true)
  echo "fuzz_$t: ${execs:-?} executions in ${secs} s, ${found} findings (log $log, inputs in $build/findings/$t)"
  [ "$found" = 0 ] || classify "$t"
done
