#!/bin/sh
# Builds the libFuzzer targets (fuzz/, one per reader) with clang, ASan and UBSan in build-fuzz/ and runs each for
# a fixed time on a seed corpus gathered from tests/ and data/, at nice 19. Prints executions and findings per target.
# Usage: bench/fuzz.sh [seconds per target (default 60)] [target ...]   (targets: spice yaml hardware idx model)
#        ANASIM_FUZZ_PARALLEL=1 bench/fuzz.sh ...   runs the targets at the same time
#        ANASIM_FUZZ_NO_BUILD=1 bench/fuzz.sh ...   runs the targets as built (sources edited meanwhile ignored)
#        ANASIM_FUZZ_REV=HEAD bench/fuzz.sh ...     builds a committed revision (git archive into build-fuzz/rev/),
#                                                   not the working tree: other edits in progress are not fuzzed
#        ANASIM_FUZZ_MERGE=1 bench/fuzz.sh ...      first minimizes each target's grown corpus (libFuzzer -merge=1)
#        ANASIM_FUZZ_CHUNK=600 (default)            restarts an in-process target after this many seconds or
#        ANASIM_FUZZ_CHUNK_RUNS=300000 (default)    this many executions, whichever comes first (see below)
set -eu
cd "$(dirname "$0")/.."
secs=${1:-60}
[ $# -gt 0 ] && shift
targets=${*:-spice yaml hardware idx model}
build=${ANASIM_FUZZ_BUILD:-build-fuzz}
chunk=${ANASIM_FUZZ_CHUNK:-600}
chunk_runs=${ANASIM_FUZZ_CHUNK_RUNS:-300000}
root=$(pwd)

# The source tree built: the working tree, or with ANASIM_FUZZ_REV a revision exported to $build/rev/src (built in
# $build/rev/build). Corpora, findings and logs stay in $build either way.
src=.
bin="$build"
if [ -n "${ANASIM_FUZZ_REV:-}" ]; then
  # With ANASIM_FUZZ_NO_BUILD the revision built earlier is run as it is: a second run started meanwhile does not
  # replace the sources under the first one.
  if [ "${ANASIM_FUZZ_NO_BUILD:-0}" != 1 ]; then
    rm -rf "$build/rev/src"
    mkdir -p "$build/rev/src"
    git archive "$ANASIM_FUZZ_REV" | tar -x -C "$build/rev/src"
  fi
  src="$build/rev/src"
  bin="$build/rev/build"
fi
if [ "${ANASIM_FUZZ_NO_BUILD:-0}" != 1 ]; then
  launcher=""
  command -v ccache >/dev/null && launcher="-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"
  CC=clang CXX=clang++ cmake -S "$src" -B "$bin" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DANASIM_BUILD_FUZZ=ON \
    -DANASIM_BUILD_TESTS=OFF -DANASIM_BUILD_BENCH=OFF -DANASIM_BUILD_PYTHON=OFF -DANASIM_NATIVE=OFF \
    -DANASIM_STATIC_HDF5=OFF $launcher >/dev/null
  for t in $targets; do nice -n 19 cmake --build "$bin" -j2 --target "fuzz_$t" >/dev/null; done
  nice -n 19 cmake --build "$bin" -j2 --target model_seeds >/dev/null
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
"$bin/fuzz/model_seeds" "$corpus/model"

# One target for $secs seconds at nice 19. -rss_limit_mb: a reader that allocates more than 2 GB on some input is a
# finding (memory guard). fuzz/lsan.supp: leaks inside libhdf5 itself (see there). allocator_may_return_null: a
# huge allocation fails as it does outside ASan (libhdf5 checks for that) instead of stopping the run.
# -detect_leaks=0 turns off libFuzzer's leak check after each new input, not LeakSanitizer: every parse keeps its
# text in the process-lifetime SourceFile registry (engine/types.hpp), so every input allocates more than it frees,
# libFuzzer ran each one twice plus a full heap scan and gave up after 1000 of them ("disabled leak detection").
# The registry's growth (1-7 KB per execution) is also why an in-process target restarts every $chunk seconds or
# $chunk_runs executions (300k x 4 KB: 1.2 GB over a start near 0.5 GB), before it reaches the 2 GB limit;
# LeakSanitizer checks the whole heap at every such exit (a leak is a finding, its report in the log).
# fuzz/<target>.dict: the reader's keywords, so mutations can insert them. -entropic_scale_per_exec_time=1: the
# entropic schedule mutates fast inputs more than slow ones (up to 30x); without it 0.7% of the SPICE corpus (decks
# whose recursive .func expands to megabytes before it is refused) took 75% of the time: 630 -> 2600 executions
# per CPU second, and more features found in the same time (measured 2026-11-24, 100 s each from one corpus).
# -reload=0: one process per corpus here, so re-listing it every second for other processes' finds (5% of a YAML
# execution with 8000 files) is not needed. The hardware target runs without the entropic schedule (-entropic=0):
# its inputs all parse in microseconds, and the schedule's per-feature bookkeeping (InputCorpus::
# UpdateFeatureFrequency) was 76% of its time; 60 s from one corpus: 73k -> 179k executions, features 12097 ->
# 12132. Not for SPICE (53k instead of 195k executions in 100 s, fewer features found) nor YAML (141k instead of
# 259k in 80 s, with 0.5% more features found).
# The model target runs in fork mode past crashes and hangs: libhdf5 1.10.8 crashes or loops forever on some
# damaged files (anasim reads them in a child process, engine/isolated_read); classify() tells those apart. There
# -timeout=3 (a valid model reads in milliseconds; each endless loop in libhdf5 cost the run 10 s) and
# max_allocation_size_mb=1536: libhdf5's huge mallocs fail and it reports an error, as under the isolated reader's
# address-space limit, instead of ending the job (an allocation by anasim's own operator new still stops it).
run_target() {
  mkdir -p "$build/findings/$1" "$build/work/$1"
  extra="-detect_leaks=0" timeout=10 asan="allocator_may_return_null=1"
  [ -f "fuzz/$1.dict" ] && extra="$extra -dict=$root/fuzz/$1.dict"
  if [ "$1" = model ]; then
    extra="$extra -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1"
    timeout=3 asan="$asan:max_allocation_size_mb=1536"
  elif [ "$1" = hardware ]; then
    extra="$extra -entropic=0 -runs=$chunk_runs -reload=0"
  else
    extra="$extra -entropic_scale_per_exec_time=1 -runs=$chunk_runs -reload=0"
  fi
  if [ "${ANASIM_FUZZ_MERGE:-0}" = 1 ] && [ "$1" != model ]; then
    rm -rf "$build/work/$1.merged"
    mkdir -p "$build/work/$1.merged"
    ( cd "$build/findings/$1" && LSAN_OPTIONS="suppressions=$root/fuzz/lsan.supp" ASAN_OPTIONS="$asan" \
        nice -n 19 "$root/$bin/fuzz/fuzz_$1" -merge=1 -detect_leaks=0 -timeout=$timeout -rss_limit_mb=2048 \
        -max_len=65536 "$root/$build/work/$1.merged" "$root/$build/work/$1" >"$root/$build/fuzz_$1.merge.log" 2>&1 ) &&
      rm -rf "$build/work/$1" && mv "$build/work/$1.merged" "$build/work/$1"
  fi
  : >"$build/fuzz_$1.log"
  end=$(($(date +%s) + secs))
  ran=0
  while :; do
    left=$((end - $(date +%s)))
    [ "$left" -gt 0 ] || break
    [ "$left" -lt 20 ] && [ "$ran" = 1 ] && break  # a restart (the corpus read again) is not worth less than 20 s
    ran=1
    now=$left
    [ "$1" != model ] && [ "$now" -gt "$chunk" ] && now=$chunk
    ( cd "$build/findings/$1" && LSAN_OPTIONS="suppressions=$root/fuzz/lsan.supp" ASAN_OPTIONS="$asan" \
        nice -n 19 "$root/$bin/fuzz/fuzz_$1" -max_total_time="$now" -rss_limit_mb=2048 -timeout=$timeout \
        -print_final_stats=1 -max_len=65536 $extra "$root/$build/work/$1" "$root/$build/corpus/$1" \
        >>"$root/$build/fuzz_$1.log" 2>&1 ) || true
  done
  # The input files (fuzz/fuzz_common.hpp) of this target's processes that ended, crashed fork-mode jobs included.
  for f in /dev/shm/anasim_fuzz_* "${TMPDIR:-/tmp}"/anasim_fuzz_*; do
    if [ -e "$f" ] && ! kill -0 "${f##*_}" 2>/dev/null; then rm -f "$f"; fi
  done
}
# Each finding run again (with today's code): gone (no longer reproduces), libhdf5's own (the first stack frame
# outside the sanitizer runtime and libc is in libhdf5), or anasim's (listed).
classify() {
  gone=0 hdf5=0 other=0
  for f in "$build/findings/$1"/crash-* "$build/findings/$1"/timeout-* "$build/findings/$1"/oom-*; do
    [ -e "$f" ] || continue
    out=$(ASAN_OPTIONS=allocator_may_return_null=1 LSAN_OPTIONS="suppressions=$root/fuzz/lsan.supp" \
      nice -n 19 timeout 30 "$bin/fuzz/fuzz_$1" -timeout=5 -rss_limit_mb=2048 "$f" 2>&1 || true)
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
# Executions: the sum over the chunks' final stats (fork mode: the last "#N:" status line).
for t in $targets; do
  log="$build/fuzz_$t.log"
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | awk '{n += $1} END {print n}')
  [ -n "$execs" ] && [ "$t" != model ] || execs=$(grep -o '^#[0-9]*' "$log" | tail -1 | tr -d '#')
  found=$(ls "$build/findings/$t" | grep -c -e '^crash-' -e '^leak-' -e '^timeout-' -e '^oom-' || true)
  leaks=$(grep -c 'ERROR: LeakSanitizer' "$log" || true)
  echo "fuzz_$t: ${execs:-?} executions in ${secs} s, ${found} findings, ${leaks} leak reports at exit (log $log, inputs in $build/findings/$t)"
  [ "$found" = 0 ] || classify "$t"
done
