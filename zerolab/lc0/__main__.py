"""``python -m zerolab.lc0 describe|eval|convert|bench`` (see :mod:`zerolab.lc0.cli`)."""

from zerolab.lc0.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
