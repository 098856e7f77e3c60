#!/usr/bin/env bash
# GPU check (about 8 minutes on one GPU): the GPU-marked tests, the training-throughput
# benchmark, and every design point of each suite's full profile for 200 steps. Writes its
# report into OUTDIR; record the figures in docs/performance.md.
#
#   scripts/gpu_check.sh OUTDIR
#
# Machines without internet have no CIFAR files: the script then writes random images in
# the real formats under OUTDIR/data, so those runs measure speed, not accuracy.
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

log "files in the real formats for the full profiles"
timeout 60 $py scripts/fake_data.py "$GEOBENCH_DATA" >>"$out/report.txt" 2>&1
mkdir -p data && ln -sfn "$GEOBENCH_DATA/tiny-imagenet-200" data/tiny-imagenet-200

for suite in suites/*.yaml; do
  log "full profile, every design point, 200 steps (s/step, metric share): $suite"
  timeout 60 $py -m geobench.cli preflight "$suite" --profile full --steps 200 \
    --device cuda --data verify_md5=false >>"$out/report.txt" 2>&1 \
    || echo "   (failed, or did not finish within its 60 s share)" >>"$out/report.txt"
done
log "done"
