"""SAI's self-play pinned: frames, records, metrics and one training update of a small run, compared with what SAI's
own self-play scan produced before it became the core's scan plus SAI's hooks.

``tests/sai_go/data/selfplay_reference.{npz,json}`` were written by ``tests/sai_go/data/make_selfplay_reference.py``
at commit bc9e941 (SAI's own scan); the scenario is :func:`reference_run` below.  The one output that changed on
purpose is the records' position hash (SAI's copy of the core's hash used another projection): it is stored as each
position's class, the index of its first equal position, which both hashes give alike.
Two per-call counts added later (``fresh_games_finished``, ``branch_games_finished``) were appended to the stored
files by a script that first checked every pinned array and number unchanged.  The parameters after the update
(``update.params…``) were appended the same way in issue 48, on a 2-core AMD EPYC (AVX2, no AVX-512), after every
other pinned value was checked within the tolerances below; they replaced a SHA-256 of those parameters, which held
on the machine that wrote it only.

**What is exact and what is within a tolerance.**  The reference was written on one machine; XLA compiles float
arithmetic for the CPU it runs on (the order of a dot product's sums, fused multiply-adds or not differ between
AVX-512, AVX2 and AVX code), so floats computed from the network round differently on another CPU.  Exact: every
integer and boolean (actions, game lengths, results, masks, the observation planes), and the floats that hold
discrete values, made by counting and choosing, not by the network's arithmetic: visit fractions (0, ½, 1), value
targets and rewards (±1, 0), half-integer komi, counts.  Within :data:`NETWORK_FLOATS`' tolerances: α (the network's
output), the per-call means of β, of the score estimate's error and of the fresh komi, the loss and its parts, and
the updated parameters (:data:`PARAMETER_ATOL`).  A choice made from floats (a move, a komi) that rounding flipped
would still fail the exact comparisons; none does on the machines tried.

The scenario makes every hook matter: four lanes of 32 plies with a 10-ply cap (three games a lane, counted at their
komi), branch probability 0.5 with a queue of 4 (branches started, pushed, dropped), the first four plies drawn from
the visits (a branch from ply 1–3 is still sampled: its plies count from the empty board), fresh games at a sampled
komi, λ = 0.5.
"""

from __future__ import annotations

import json
import pathlib

import jax
import numpy as np
import optax
import pytest

from zerolab import NetworkInputs, SearchConfig, SelfPlayConfig
from zerolab.selfplay.records import summarize
from sai_go.selfplay import SaiSelfPlayOptions, make_sai_play_fn
from sai_go.train import sai_loss
from tests.fast_compile import fast_jit

REFERENCE = pathlib.Path(__file__).parent / "data" / "selfplay_reference"
CONFIG = SelfPlayConfig(num_games=4, plies_per_iteration=32, max_game_plies=10, temperature_plies=4)
OPTIONS = SaiSelfPlayOptions(lam=0.5, branch_probability=0.5, max_branches=3, queue_size=4)
SEARCH = SearchConfig(kind="muzero", num_simulations=2, dirichlet_alpha=0.22)
LEARNING_RATE = 1e-3

#: Tolerances of the floats computed from the network (everything else is compared exactly; see the module
#: docstring).  ``atol`` 2e-5 for α: each α ends in float32 dot products over 72 (a 3×3 convolution of 8 channels),
#: 49 and 64 terms (the α head's layers); a float32 sum of n terms rounds within about n · 2⁻²⁴ of the sum of the
#: terms' magnitudes, in whatever order and with whatever fusing an instruction set sums them, so the difference
#: scales with the terms, not with α (relative differences reach 1e-4 where α is near 0: an absolute tolerance).
#: Seen against the AVX-512 machine that wrote the reference: 2.6e-6 at most on an AVX2 CPU, 3.8e-6 with
#: ``XLA_FLAGS=--xla_cpu_max_isa=AVX``; 2e-5 is five times that, and α moved by 1e-4 fails the test.  ``rtol`` 1e-5
#: for the means (β, the score estimate's error, fresh komi, the loss and its parts): a float32 mean of 128 terms
#: rounds within 128 · 2⁻²⁴ ≈ 7.6e-6 of its value whatever the order (seen: 2.5e-7).
NETWORK_FLOATS = {"rtol": 1e-5, "atol": 2e-5}
#: The updated parameters' tolerance: Adam's first step moves each parameter by lr · g / (|g| + ε) ≈ ±1e-3, so the
#: rounding of a gradient g moves it by a few float32 ulps of the parameter (|p| < 8.6 here: ≤ 9.5e-7) and, for a
#: gradient near ε = 1e-8, by lr · g's relative rounding (the smallest non-zero |g| here is above 1e-8).  Seen between
#: AVX2 and AVX code: 9.5e-7.  1e-5 is 1% of a step: an update that changes any parameter's step by more fails.
PARAMETER_ATOL = 1e-5
#: The float arrays and numbers computed from the network's arithmetic (the others hold discrete values).
NETWORK_ARRAYS = ("frames.extras['alpha']", "records.summary['mean_beta']", "records.summary['score_estimate_mae']",
                  "records.summary['fresh_komi_mean']", "records.summary['fresh_komi_std']")
NETWORK_METRICS = ("mean_beta", "score_estimate_mae", "fresh_komi_mean", "fresh_komi_std")


def position_classes(position_hash: np.ndarray) -> np.ndarray:
    """[T, B] each position's class: the flat index of the first position with the same hash."""
    _, first, inverse = np.unique(position_hash.reshape(-1, 2), axis=0, return_index=True, return_inverse=True)
    return first[inverse.ravel()].reshape(position_hash.shape[:-1])


def one_update(network, variables, frames) -> tuple[dict, dict[str, np.ndarray]]:
    """SAI's loss over every frame and one Adam step: ``(the loss and its metrics, the new parameters by name)``."""
    flat = jax.tree.map(lambda leaf: leaf.reshape((-1,) + leaf.shape[2:]), frames)
    optimizer = optax.adam(LEARNING_RATE)

    @fast_jit
    def update(variables, frames):
        def loss(params):
            inputs = NetworkInputs(frames.observation, frames.legal_action_mask)
            return sai_loss(network.apply({**variables, "params": params}, inputs, train=False), frames)

        (value, metrics), grads = jax.value_and_grad(loss, has_aux=True)(variables["params"])
        updates, _ = optimizer.update(grads, optimizer.init(variables["params"]))
        return value, metrics, optax.apply_updates(variables["params"], updates)

    value, metrics, params = jax.device_get(update(variables, flat))
    arrays = {"update.params" + jax.tree_util.keystr(path): np.asarray(leaf)
              for path, leaf in jax.tree_util.tree_leaves_with_path(params)}
    return {"loss": float(value), **{name: float(metric) for name, metric in metrics.items()}}, arrays


def reference_run(game, network, variables) -> tuple[dict[str, np.ndarray], dict]:
    """``(arrays, numbers)``: every frame and record field of the scenario and the parameters after one update, and
    its metrics and the update's loss."""
    play = fast_jit(make_sai_play_fn(game, network, SEARCH, CONFIG, OPTIONS), static_argnums=2)
    packed, records = jax.device_get(play(variables, jax.random.key(0), CONFIG.num_games))
    frames = packed.to_frames()  # the dense frames the window gives training
    arrays = {}
    for prefix, tree in (("frames", frames), ("records", records.replace(position_hash=None))):
        for path, leaf in jax.tree_util.tree_leaves_with_path(tree):
            arrays[prefix + jax.tree_util.keystr(path)] = np.asarray(leaf)
    arrays["records.position_class"] = position_classes(np.asarray(records.position_hash))
    update, parameters = one_update(network, variables, frames)
    return {**arrays, **parameters}, {"metrics": summarize(records), "update": update}


def assert_like_the_reference(arrays: dict[str, np.ndarray], numbers: dict, stored, expected: dict) -> None:
    """``arrays`` and ``numbers`` (:func:`reference_run`'s) against the stored ones: exact but for the floats of the
    network's arithmetic (:data:`NETWORK_FLOATS`, :data:`PARAMETER_ATOL`)."""
    assert sorted(arrays) == sorted(stored.files)
    for name in stored.files:
        want = stored[name]
        if name == "frames.policy_target":  # frames keep it as the replay window stores it, float16, since the
            want = want.astype(np.float16)  # compact tree's session; the pinned targets (0, ½, 1) are exact there
        if name == "frames.observation" and want.dtype == bool:  # pinned as pgx's boolean planes; frames decode
            want = want.astype(np.float16)  # to float16 0/1 as training reads them (stored as bits: exact)
        assert arrays[name].dtype == want.dtype, name
        if name in NETWORK_ARRAYS:
            np.testing.assert_allclose(arrays[name], want, **NETWORK_FLOATS, err_msg=name)
        elif name.startswith("update.params"):
            np.testing.assert_allclose(arrays[name], want, rtol=0, atol=PARAMETER_ATOL, err_msg=name)
        else:
            np.testing.assert_array_equal(arrays[name], want, err_msg=name)
    assert sorted(numbers) == sorted(expected) and sorted(numbers["metrics"]) == sorted(expected["metrics"])
    for name, value in numbers["metrics"].items():
        want = expected["metrics"][name]
        if name in NETWORK_METRICS:
            assert value == pytest.approx(want, rel=NETWORK_FLOATS["rtol"], abs=NETWORK_FLOATS["atol"]), name
        else:
            assert value == want, name
    assert numbers["update"] == pytest.approx(expected["update"], rel=NETWORK_FLOATS["rtol"],
                                              abs=NETWORK_FLOATS["atol"])


def test_sai_selfplay_and_one_update_equal_the_reference(go_game, tiny_network):
    arrays, numbers = reference_run(go_game, *tiny_network)
    stored = np.load(REFERENCE.with_suffix(".npz"))
    expected = json.loads(REFERENCE.with_suffix(".json").read_text())
    assert_like_the_reference(arrays, numbers, stored, expected)
    # The scenario exercised what it claims to.
    metrics = expected["metrics"]
    assert metrics["branches_started"] > 0 and metrics["branches_dropped"] > 0 and metrics["games_finished"] > 8
    branch = stored["frames.extras['branch']"]
    assert branch.any() and not branch.all()
    assert len(np.unique(stored["frames.extras['komi']"])) > 3
