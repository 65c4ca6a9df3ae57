"""XLA's faster CPU compilation for the programs the tests compile themselves and for their child processes.

Most of the suite's time is XLA compiling programs for tiny inputs.  Optimisation level 0 with XLA's older
(non-"fusion emitter") CPU code generator compiles them 2-3× faster: an 8×8 chess search 7.9 s of CPU → 2.5 s, the
child process of a two-iteration training run 32 s → 18 s (cold compilation cache, loaded 2-core machine).  The
programs compute the same things; only the rounding of float arithmetic that XLA fuses differently may change, so a
test that compares two *different* programs bit for bit keeps XLA's defaults.

The whole session compiles at these settings: tests/conftest.py adds them to ``XLA_FLAGS`` before JAX starts, so the
test processes and every child they start use them (``ZEROLAB_TEST_XLA=default`` runs the suite at XLA's defaults).
A test that compares two different programs bit for bit compiles them with :func:`default_jit` (explicit compiler
options override the flags).  :func:`fast_jit` and :func:`subprocess_env` give the same settings explicitly.

Optimisation level 0 code runs several times slower (256 Gardner searches of 8 simulations: 2.25 s against 0.34 s at
level 1), so a test whose own program runs far longer than it compiles — many training steps, hundreds of lanes —
compiles it with :func:`run_jit` (level 1: a third more compile time, 3-7× faster code).  jax's
``jax_optimization_level`` does not reach XLA's CPU back end, so the level is set per function, not per test.
"""

from __future__ import annotations

import functools
import os

#: XLA compiler options of the functions the tests compile with :func:`fast_jit` (see the module docstring).
FAST_COMPILE = {"xla_backend_optimization_level": 0, "xla_cpu_use_fusion_emitters": False}
#: XLA compiler options of a test's own program that runs far longer than it compiles (:func:`run_jit`).
RUN_COMPILE = {"xla_backend_optimization_level": 1, "xla_cpu_use_fusion_emitters": False}
#: XLA's own defaults, given explicitly: they override the session's ``XLA_FLAGS`` (tests/conftest.py) for a function
#: that two different programs are compared through bit for bit, or that must compile as training and play do.
DEFAULT_COMPILE = {"xla_backend_optimization_level": 2, "xla_cpu_use_fusion_emitters": True}


def fast_jit(fun=None, compiler_options=FAST_COMPILE, **jit_options):
    """``jax.jit`` with :data:`FAST_COMPILE` (usable as ``@fast_jit`` or ``functools.partial(fast_jit, ...)``)."""
    import jax

    if fun is None:
        return functools.partial(fast_jit, compiler_options=compiler_options, **jit_options)
    return jax.jit(fun, compiler_options=compiler_options, **jit_options)


def default_jit(fun=None, **jit_options):
    """``jax.jit`` with :data:`DEFAULT_COMPILE`, whatever the session's ``XLA_FLAGS`` say."""
    return fast_jit(fun, compiler_options=DEFAULT_COMPILE, **jit_options)


def run_jit(fun=None, **jit_options):
    """``jax.jit`` with :data:`RUN_COMPILE`, for a program whose running costs more than its compiling."""
    return fast_jit(fun, compiler_options=RUN_COMPILE, **jit_options)


def fast_xla_flags(flags: str = "") -> str:
    """``flags`` (an ``XLA_FLAGS`` value) followed by :data:`FAST_COMPILE` as XLA flags."""
    fast = " ".join(f"--{name}={str(value).lower()}" for name, value in FAST_COMPILE.items())
    return f"{flags} {fast}".strip()


def subprocess_env(xla_flags: str | None = None, **variables: str) -> dict[str, str]:
    """The environment of a test's child process: this one's (the compilation cache included), with ``variables``
    set and :data:`FAST_COMPILE` added to ``xla_flags`` (default: this process's ``XLA_FLAGS``)."""
    flags = os.environ.get("XLA_FLAGS", "") if xla_flags is None else xla_flags
    return {**os.environ, **variables, "XLA_FLAGS": fast_xla_flags(flags)}
