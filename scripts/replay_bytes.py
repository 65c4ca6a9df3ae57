"""Host bytes per frame of a run's newest replay window: as stored (the compact encoding) and as dense arrays in the
storage dtypes (what earlier runs stored), with the share of each stored array.

    python scripts/replay_bytes.py RUN_DIRECTORY
"""

import sys

from zerolab.training import read_window


def main(run_directory: str) -> None:
    step, window = read_window(run_directory)
    dense = sum(array.nbytes for array in window.fields().values()) / len(window)
    print(f"step {step}: {len(window)} frames; dense {dense:,.0f} bytes a frame, compact {window.bytes_per_frame():,.0f} "
          f"({dense / window.bytes_per_frame():.1f}x less)")
    for name, array in window.arrays.items():
        print(f"  {name:<22}{array.nbytes / len(window):>10,.1f} bytes a frame  {array.dtype} {array.shape[1:]}")


if __name__ == "__main__":
    main(sys.argv[1])
