#!/usr/bin/env bash
# GPU check (at most 8 minutes on one GPU; each part has its own time limit, and what a part
# measured before its limit stays in the report). Writes OUTDIR/report.txt and the JSON
# figures; record them in docs/performance.md.
#
#   scripts/gpu_check.sh OUTDIR
#
#  1. the GPU-marked tests (a step never waits for the device; the fast options against fp32
#     eager; MirrorDescent's CUDA path against the float64 reference; CPU/CUDA agreement);
#  2. benchmarks/train_throughput.py: the SimCLR ResNet-18 step at batch 256 for each
#     option, engine and hand-written loop, warm-up timed apart from the steady state;
#  3. benchmarks/mirror_step.py --device cuda --json (each map eager and compiled);
#  4. benchmarks/profile_step.py: the SimCLR step's split, then the first design point of
#     each suite's full profile for 30 steps (s/step, metrics amortised over the real run).
#
# Machines without the datasets get random files in the real formats (scripts/fake_data.py,
# the writer the tests load through torchvision) under OUTDIR/data: those runs measure
# speed, not learning.
set -uo pipefail
out=${1:?usage: scripts/gpu_check.sh OUTDIR}
mkdir -p "$out"
py=${PYTHON:-.venv/bin/python}
export PYTHONUNBUFFERED=1 GEOBENCH_DATA=${GEOBENCH_DATA:-$out/data}
log() { echo "== $* ($(date +%T))" | tee -a "$out/report.txt"; }
run() { local limit=$1; shift; timeout "$limit" "$@" >>"$out/report.txt" 2>&1 \
          || echo "   (exit $?: failed, or stopped at its ${limit} s limit)" >>"$out/report.txt"; }

log "device"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv >>"$out/report.txt" 2>&1
run 20 $py -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"

log "GPU-marked tests"
run 120 $py -m pytest -q -m gpu -p no:cacheprovider tests

log "training throughput (SimCLR ResNet-18, 3x32x32, batch 256 x 2 views)"
run 90 $py benchmarks/train_throughput.py --batch 256 --steps 40
cp benchmarks/results/train_throughput_cuda.json "$out/" 2>/dev/null

log "MirrorDescent step vs SGD(foreach), ResNet-18: eager, then compiled"
run 80 $py benchmarks/mirror_step.py --device cuda --json

log "where a step's time goes: SimCLR step, then each suite's full profile (first design point)"
[ -d "$GEOBENCH_DATA/cifar-10-batches-py" ] \
  || run 15 $py scripts/fake_data.py "$GEOBENCH_DATA" --n-train 5000 --n-test 1000
run 20 $py benchmarks/profile_step.py --steps 30
for suite in suites/*.yaml; do  # one process per suite: a slow one stops alone
  run 14 $py benchmarks/profile_step.py --steps 30 --no-simclr --suite "$suite"
done
log "done"
