"""The test method: an auxiliary loss on a per-frame field, FEN starts, and a learner/partner alternating move rule."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from zerolab import (
    Method,
    MoveRule,
    PlyDecision,
    init_variables,
    run_search,
    standard_lane_rule,
)
from zerolab.selfplay import initial_states_from_fens, search_move_rule
from zerolab.training import alphazero_loss

#: Gardner chess: the start position, and the position after 1. a3 (Black to move).
START_FENS = ("rnbqk/ppppp/5/PPPPP/RNBQK w - - 0 1", "rnbqk/ppppp/P4/1PPPP/RNBQK b - - 0 1")
PLY_SCALE = 10.0


def ply_loss(output, frames):
    """AlphaZero's loss + the squared error of ``extras["ply_estimate"]`` against the frame's ``ply`` / 10."""
    loss, metrics = alphazero_loss(output, frames)
    target = frames.extras["ply"].astype(jnp.float32) / PLY_SCALE
    auxiliary = jnp.mean((output.extras["ply_estimate"] - target) ** 2)
    return loss + auxiliary, {**metrics, "ply_loss": auxiliary}


def lowest_action_partner(network, game, seed: int):
    """Variables of ``network`` whose policy head prefers lower action ids by 100 logits per id."""
    variables = init_variables(network, game, jax.random.key(seed))
    head = variables["params"]["AlphaZeroResNet_0"]["Dense_0"]
    head = {"kernel": jnp.zeros_like(head["kernel"]), "bias": -100.0 * jnp.arange(head["bias"].shape[0])}
    params = {**variables["params"], "AlphaZeroResNet_0": {**variables["params"]["AlphaZeroResNet_0"], "Dense_0": head}}
    return {**variables, "params": params}


def alternating_move_rule(components, partner_seed: int = 7) -> MoveRule:
    """Even plies of a game: the learner's search; odd plies: the frozen partner's.  The carry counts the partner's
    moves in the current game; frames carry the ply and that count."""
    learner = search_move_rule(components.game, components.network, components.search, components.rules)

    def act(variables, key, states, ply, partner_moves):
        ours = learner.act(variables, key, states, ply, None)
        theirs = run_search(components.search, components.game, components.network, variables.frozen, key, states,
                            rules=components.rules)
        partner_to_move = ply % 2 == 1
        action = jnp.where(partner_to_move, theirs.action, ours.action)
        one_hot = jax.nn.one_hot(theirs.action, theirs.visit_counts.shape[-1], dtype=ours.visit_counts.dtype)
        return PlyDecision(
            action=action,
            policy_target=jnp.where(partner_to_move[:, None], theirs.policy_target, ours.policy_target),
            carry=partner_moves + partner_to_move.astype(jnp.int32),
            visit_counts=jnp.where(partner_to_move[:, None], one_hot, ours.visit_counts),
            frame_extras={"ply": ply, "partner_moves": partner_moves},
            summary=ours.summary,
        )

    return MoveRule(act=act, frozen_variables=lowest_action_partner(components.network, components.game, partner_seed))


def fen_lane_rule(game):
    """Fresh games from ``START_FENS``, each with no partner move yet (the move rule's carry)."""
    return standard_lane_rule(game, initial_states_from_fens(game, START_FENS),
                              init_carry=lambda key, num_games: jnp.zeros(num_games, jnp.int32))


def make_method(config, game, partner_seed: int = 7) -> Method:
    del config
    return Method(
        loss_fn=ply_loss,
        move_rule=lambda components: alternating_move_rule(components, partner_seed),
        lane_rule=lambda components: fen_lane_rule(components.game),
    )
