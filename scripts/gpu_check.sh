#!/usr/bin/env bash
# GPU check (about 8 minutes on one GPU): the GPU-marked tests, the training-throughput
# benchmark, and one full-profile cell of each suite for a few hundred steps. Writes its
# report into OUTDIR; record the figures in docs/performance.md.
#
#   scripts/gpu_check.sh OUTDIR
#
# Machines without internet have no CIFAR files: the script then writes random images in
# the CIFAR pickle format under OUTDIR/data, so those cells measure speed, not accuracy.
set -uo pipefail
out=${1:?usage: scripts/gpu_check.sh OUTDIR}
mkdir -p "$out"
py=${PYTHON:-.venv/bin/python}
export PYTHONUNBUFFERED=1 GEOBENCH_DATA=${GEOBENCH_DATA:-$out/data}
log() { echo "== $*" | tee -a "$out/report.txt"; }

log "device"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv >>"$out/report.txt" 2>&1
$py -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)" \
  >>"$out/report.txt" 2>&1

log "GPU-marked tests"
timeout 150 $py -m pytest -q -m gpu -p no:cacheprovider tests >>"$out/report.txt" 2>&1

log "training throughput (SimCLR ResNet-18, 3x32x32)"
timeout 200 $py benchmarks/train_throughput.py --batch 256 --steps 40 >>"$out/report.txt" 2>&1
cp benchmarks/results/train_throughput_cuda.json "$out/" 2>/dev/null

log "CIFAR-format files for the full profiles"
timeout 60 $py scripts/fake_cifar.py "$GEOBENCH_DATA" >>"$out/report.txt" 2>&1

short=(--profile full --set train.steps=300 --set train.epochs=null --set train.device=cuda)
for suite in suites/*.yaml; do
  log "full profile, one cell, 300 steps: $suite"
  md5=(--set data.verify_md5=false)  # random CIFAR files; other datasets take no such key
  $py -m geobench.cli validate "$suite" "${short[@]}" "${md5[@]}" >/dev/null 2>&1 || md5=()
  timeout 45 $py -m geobench.cli run "$suite" "${short[@]}" "${md5[@]}" --max-cells 1 \
    --quiet --store "$out/full.sqlite" --no-leaderboard >>"$out/report.txt" 2>&1 \
    || echo "   (did not finish within its 45 s share)" >>"$out/report.txt"
done
log "done"
