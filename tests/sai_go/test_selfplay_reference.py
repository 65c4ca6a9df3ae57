"""SAI's self-play pinned bit for bit: frames, records, metrics and one training update of a small run, compared with
what SAI's own self-play scan produced before it became the core's scan plus SAI's hooks.

``tests/sai_go/data/selfplay_reference.{npz,json}`` were written by ``tests/sai_go/data/make_selfplay_reference.py``
at commit bc9e941 (SAI's own scan); the scenario is :func:`reference_run` below.  The one output that changed on
purpose is the records' position hash (SAI's copy of the core's hash used another projection): it is stored as each
position's class, the index of its first equal position, which both hashes give alike.
Two per-call counts added later (``fresh_games_finished``, ``branch_games_finished``) were appended to the stored
files by a script that first checked every pinned array and number unchanged.

The scenario makes every hook matter: four lanes of 32 plies with a 10-ply cap (three games a lane, counted at their
komi), branch probability 0.5 with a queue of 4 (branches started, pushed, dropped), the first four plies drawn from
the visits (a branch from ply 1–3 is still sampled: its plies count from the empty board), fresh games at a sampled
komi, λ = 0.5.
"""

from __future__ import annotations

import hashlib
import json
import pathlib

import jax
import numpy as np
import optax

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


def position_classes(position_hash: np.ndarray) -> np.ndarray:
    """[T, B] each position's class: the flat index of the first position with the same hash."""
    _, first, inverse = np.unique(position_hash.reshape(-1, 2), axis=0, return_index=True, return_inverse=True)
    return first[inverse.ravel()].reshape(position_hash.shape[:-1])


def one_update(network, variables, frames) -> dict:
    """SAI's loss over every frame and one Adam step: the loss's metrics and a digest of the new parameters."""
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
    digest = hashlib.sha256(b"".join(np.asarray(leaf).tobytes() for leaf in jax.tree.leaves(params))).hexdigest()
    return {"loss": float(value), **{name: float(metric) for name, metric in metrics.items()},
            "params_sha256": digest}


def reference_run(game, network, variables) -> tuple[dict[str, np.ndarray], dict]:
    """``(arrays, numbers)``: every frame and record field of the scenario, and its metrics and one update."""
    play = fast_jit(make_sai_play_fn(game, network, SEARCH, CONFIG, OPTIONS), static_argnums=2)
    packed, records = jax.device_get(play(variables, jax.random.key(0), CONFIG.num_games))
    frames = packed.to_frames()  # the dense frames the window gives training
    arrays = {}
    for prefix, tree in (("frames", frames), ("records", records.replace(position_hash=None))):
        for path, leaf in jax.tree_util.tree_leaves_with_path(tree):
            arrays[prefix + jax.tree_util.keystr(path)] = np.asarray(leaf)
    arrays["records.position_class"] = position_classes(np.asarray(records.position_hash))
    return arrays, {"metrics": summarize(records), "update": one_update(network, variables, frames)}


def test_sai_selfplay_and_one_update_equal_the_reference_bit_for_bit(go_game, tiny_network):
    arrays, numbers = reference_run(go_game, *tiny_network)
    stored = np.load(REFERENCE.with_suffix(".npz"))
    expected = json.loads(REFERENCE.with_suffix(".json").read_text())
    assert sorted(arrays) == sorted(stored.files)
    for name in stored.files:
        want = stored[name]
        if name == "frames.policy_target":  # frames keep it as the replay window stores it, float16, since the
            want = want.astype(np.float16)  # compact tree's session; the pinned targets (0, ½, 1) are exact there
        if name == "frames.observation" and want.dtype == bool:  # pinned as pgx's boolean planes; frames decode
            want = want.astype(np.float16)  # to float16 0/1 as training reads them (stored as bits: exact)
        assert arrays[name].dtype == want.dtype, name
        np.testing.assert_array_equal(arrays[name], want, err_msg=name)
    assert numbers == expected
    # The scenario exercised what it claims to.
    metrics = expected["metrics"]
    assert metrics["branches_started"] > 0 and metrics["branches_dropped"] > 0 and metrics["games_finished"] > 8
    branch = stored["frames.extras['branch']"]
    assert branch.any() and not branch.all()
    assert len(np.unique(stored["frames.extras['komi']"])) > 3
