# Source this on the device machine (see scripts/gpu/README.md): installs the carried wheels (.whl/, made by
# scripts/gpu/wheels.sh) beside the image's JAX, puts the repository on the path and prints the versions.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  || { echo "wheel install failed"; exit 1; }
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
export OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/device.txt"
python3 -c "import jax, flax, optax, chex, mctx, pgx; print('jax', jax.__version__, 'flax', flax.__version__, 'optax', optax.__version__, 'chex', chex.__version__, 'mctx', mctx.__version__, 'pgx', pgx.__version__, jax.devices())" | tee -a "$OUT/device.txt"
