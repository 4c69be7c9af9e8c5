#!/bin/sh
# Monte Carlo throughput over MPI ranks (issue 16): trials per second of `anasim nn mc` on the shipped 784-128-10
# network with 1 rank x 2 threads and 2 ranks x 1 thread, the parallel efficiency, and the bytes communicated
# per trial (as anasim reports them). Run it on a quiet machine; the numbers go into bench/RESULTS.md by hand.
#
# Usage: sh bench/mpi_scaling.sh [TRIALS] [SAMPLES]
#   TRIALS   trials per configuration (default 20; a trial of the full test set is about a second on 2 cores)
#   SAMPLES  test images per trial (default 0 = all 10,000)
# Environment: ANASIM (binary, default build/anasim), ANASIM_MNIST (MNIST IDX directory, default ../shared/mnist).
set -eu
cd "$(dirname "$0")/.."
TRIALS=${1:-20}
SAMPLES=${2:-0}
ANASIM=${ANASIM:-build/anasim}
MNIST=${ANASIM_MNIST:-../shared/mnist}
MODEL=data/mlp_784_128_10.h5
CONFIG=data/examples/mnist_hw.yaml
command -v mpirun >/dev/null 2>&1 || { echo "mpirun not found (apt-get install openmpi-bin)" >&2; exit 1; }
[ -x "$ANASIM" ] || { echo "no anasim binary at $ANASIM (set ANASIM=...)" >&2; exit 1; }
# Open MPI refuses root without these; 2 ranks on a 2-core machine with hyperthreads may need --oversubscribe.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ARGS="nn mc --model $MODEL --config $CONFIG --data $MNIST --trials $TRIALS --samples $SAMPLES --seed 1"
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

# Wall time [s] of a command, its stdout into $OUT/$1.txt.
timed() {
  name=$1
  shift
  t0=$(date +%s.%N)
  "$@" > "$OUT/$name.txt"
  t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc -l
}

echo "anasim nn mc, 784-128-10, $TRIALS trials x ${SAMPLES:-all} images ($(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg))"
t_1x2=$(OMP_NUM_THREADS=2 timed r1x2 "$ANASIM" $ARGS)
t_2x1=$(timed r2x1 mpirun --oversubscribe -np 2 -x OMP_NUM_THREADS=1 "$ANASIM" $ARGS)
t_1x1=$(OMP_NUM_THREADS=1 timed r1x1 "$ANASIM" $ARGS)
# The accuracies must not depend on the layout (the per-point table is the same text).
for r in r2x1 r1x1; do
  [ "$(sed -n '/ mean /,/^wrote/p' "$OUT/r1x2.txt")" = "$(sed -n '/ mean /,/^wrote/p' "$OUT/$r.txt")" ] ||
    { echo "the accuracies of r1x2 and $r differ" >&2; exit 1; }
done
bytes=$(sed -n 's/^communication: \([0-9]*\) bytes per trial.*/\1/p' "$OUT/r2x1.txt")
printf '%-22s %10s %12s %12s\n' layout "wall [s]" "trials/s" efficiency
for row in "1 rank x 1 thread:$t_1x1" "1 rank x 2 threads:$t_1x2" "2 ranks x 1 thread:$t_2x1"; do
  name=${row%%:*}
  t=${row##*:}
  printf '%-22s %10.2f %12.3f %11.0f%%\n' "$name" "$t" "$(echo "$TRIALS / $t" | bc -l)" \
    "$(echo "100 * $t_1x1 / (2 * $t)" | bc -l)"
done
echo "efficiency = (1 x 1 wall time) / (2 x wall time): the share of two cores' ideal speed-up (the 1 x 1 row: 50%)"
echo "communicated: ${bytes:-?} bytes per trial between the 2 ranks (item results, gathered to every rank each round)"
