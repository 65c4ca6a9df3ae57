"""SAI tests compiled at XLA's default settings.

Every other SAI test compiles through :func:`tests.fast_compile.fast_jit`, at optimisation level 0 with XLA's
older CPU code generator (or :data:`~tests.sai_go.conftest.BIT_EXACT_COMPILE`, level 0 with the default generator).
A result that held only under those settings would go unseen, so two of them run here again with every function
they compile built by ``jax.jit`` at the default optimisation level and code generator, as training and play compile
them (given explicitly: the session compiles at the faster settings of tests/fast_compile.py): the λ backup on a
hand-built chain against quadrature, and λ = 1 preferring the larger winning margin in a real endgame (the whole SAI
search).
"""

from __future__ import annotations

import jax
import pytest

from tests.fast_compile import DEFAULT_COMPILE
from tests.sai_go import test_search

#: The options :mod:`tests.sai_go.conftest` sets on the functions it compiles; all reset here.
NON_DEFAULT_FLAGS = ("xla_backend_optimization_level", "xla_cpu_use_fusion_emitters")


def default_jit(fun=None, compiler_options=None, **jit_options):
    """``fast_jit``'s signature, compiling at XLA's defaults (:data:`tests.fast_compile.DEFAULT_COMPILE`, which
    override the session's ``XLA_FLAGS``)."""
    del compiler_options
    if fun is None:
        return lambda fun: default_jit(fun, **jit_options)
    return jax.jit(fun, compiler_options=DEFAULT_COMPILE, **jit_options)


@pytest.fixture
def default_xla(monkeypatch):
    """The SAI search tests' ``fast_jit`` replaced by ``jax.jit`` at XLA's default settings, given explicitly."""
    assert set(DEFAULT_COMPILE) == set(NON_DEFAULT_FLAGS)  # every option the fast settings change is reset
    compiled = []

    def recording_jit(fun=None, compiler_options=None, **jit_options):
        compiled.append(fun)
        return default_jit(fun, compiler_options, **jit_options)

    monkeypatch.setattr(test_search, "fast_jit", recording_jit)
    yield compiled
    assert compiled  # the test compiled through it, so what it checked ran at the default settings


@pytest.mark.parametrize("lam", [0.5, 1.0])
def test_the_lambda_backup_of_a_hand_built_chain_at_default_xla(default_xla, lam):
    test_search.test_the_lambda_backup_of_a_hand_built_chain(lam)


def test_lambda_one_prefers_the_larger_winning_margin_at_default_xla(default_xla, go_game):
    test_search.test_lambda_one_prefers_the_larger_winning_margin(go_game, "black")
