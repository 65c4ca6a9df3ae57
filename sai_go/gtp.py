"""SAI as a GTP engine: ``python -m sai_go.gtp --checkpoint DIR [--step N] [--lambda L] [--simulations N] [--seed S]``.

The core's GTP server (:class:`~zerolab.frontends.GTPServer`: protocol handling, pgx as referee, ``final_score`` by
Tromp–Taylor area at the session's komi, out-of-turn moves as inserted passes) with an :class:`~sai_go.agents.SaiAgent`
choosing the moves at the session's komi, plus:

* ``komi K`` — any finite number (the network plays every komi);
* ``fixed_handicap N`` / ``place_free_handicap N`` (2 ≤ N ≤ 4 on 7×7: the 3-3 points, GTP's order) and
  ``set_free_handicap V1 V2 ...`` — on an empty board only: Black's stones are played as Black moves alternating
  with White passes, so White moves next (:mod:`sai_go.handicap`, also the arena's handicap start positions);
* ``time_settings`` / ``time_left`` — accepted (the engine searches a fixed number of simulations);
* ``sai-lambda [L]`` — shows or sets λ; ``sai-estimate_score`` — Black's expected margin at the session's komi,
  ``α^B − k`` from the root's children weighted by visits (``B+2.3``); ``sai-winrate K`` — Black's winrate at komi K
  from the network at the current position.

Logs go to stderr.  The engine never plays an illegal move or a positional-superko repetition.
"""

from __future__ import annotations

import argparse
import logging
import math
import sys

import jax

from zerolab import SearchChanges, configure_logging
from zerolab.frontends import GTPError, GTPServer
from sai_go.agents import SaiAgent
from sai_go.handicap import fixed_handicap, handicap_moves
from sai_go.search import check_lambda
from sai_go.value import winrate

logger = logging.getLogger(__name__)


class SaiGTPServer(GTPServer):
    """The core server with SAI's commands (see the module docstring); ``agent`` plays ``genmove``."""

    extra_commands = ("fixed_handicap", "place_free_handicap", "set_free_handicap", "time_settings", "time_left",
                      "sai-lambda", "sai-estimate_score", "sai-winrate")

    def __init__(self, agent: SaiAgent, seed: int = 0):
        self.agent = agent

        def choose(game, state, key):
            batched = jax.tree.map(lambda leaf: leaf[None], state)
            return int(agent.analyse(batched, key, komi=game.komi).action[0])

        super().__init__(agent.game, choose, board_sizes=(agent.game.size,), name="sai_go", version="0.1", seed=seed)

    # --- komi and handicap --------------------------------------------------------------------------------------

    def _place_handicap(self, vertices: list[str]) -> None:
        if self.moves:
            raise GTPError("handicap stones go on an empty board (clear_board first)")
        if len(vertices) < 2:
            raise GTPError(f"a handicap has at least 2 stones, got {len(vertices)}")
        actions = []
        for vertex in vertices:
            try:
                action = self.game.gtp_to_action(vertex)
            except ValueError as error:
                raise GTPError(f"invalid vertex: {error}") from None
            if action == self.game.pass_action or action in actions:
                raise GTPError(f"bad handicap vertex {vertex!r} (a pass or a repeated point)")
            actions.append(action)
        for vertex in handicap_moves(vertices):  # White passes between Black's stones
            self._step(self.game.gtp_to_action(vertex))

    def _fixed_points(self, command: str, arguments: list[str]) -> list[str]:
        (text,) = self._arguments(command, arguments, ("number_of_stones",))
        if not text.isdigit():
            raise GTPError(f"invalid number of handicap stones {text!r}")
        try:
            return fixed_handicap(self.game.size, int(text))
        except ValueError as error:
            raise GTPError(str(error)) from None

    def command_fixed_handicap(self, arguments):
        vertices = self._fixed_points("fixed_handicap", arguments)
        self._place_handicap(vertices)
        return " ".join(vertices)

    def command_place_free_handicap(self, arguments):
        return self.command_fixed_handicap(arguments)

    def command_set_free_handicap(self, arguments):
        self._place_handicap(arguments)
        return ""

    def command_time_settings(self, arguments):
        self._arguments("time_settings", arguments, ("main_time", "byo_yomi_time", "byo_yomi_stones"))
        return ""

    def command_time_left(self, arguments):
        self._arguments("time_left", arguments, ("color", "time", "stones"))
        return ""

    # --- SAI's own commands -------------------------------------------------------------------------------------

    def command_sai_lambda(self, arguments):
        if len(arguments) > 1:
            raise GTPError("sai-lambda expects at most one argument (λ in [0, 1])")
        if arguments:
            try:
                self.agent.lam = check_lambda(arguments[0], "lambda")
            except ValueError as error:
                raise GTPError(str(error)) from None
        return f"{self.agent.lam:g}"

    def _analyse(self):
        self.key, key = jax.random.split(self.key)
        batched = jax.tree.map(lambda leaf: leaf[None], self.state)
        return self.agent.analyse(batched, key, komi=self.game.komi)

    def command_sai_estimate_score(self, arguments):
        self._arguments("sai-estimate_score", arguments, ())
        if bool(self.state.terminated):
            margin = float(self.game.area_difference(self.state)) - self.game.komi
        else:
            margin = float(self._analyse().searched_score_estimate[0])
        return "0" if margin == 0 else f"{'B' if margin > 0 else 'W'}+{abs(margin):.1f}"

    def command_sai_winrate(self, arguments):
        (text,) = self._arguments("sai-winrate", arguments, ("komi",))
        try:
            komi = float(text)
        except ValueError:
            raise GTPError(f"sai-winrate expects a komi, got {text!r}") from None
        if not math.isfinite(komi):
            raise GTPError(f"sai-winrate expects a finite komi, got {text!r}")
        output = self._analyse()
        black_alpha = output.alpha[0] if output.black_to_move[0] else -output.alpha[0]
        return f"{float(winrate(black_alpha, output.beta[0], -komi)):.4f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sai_go.gtp", description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", required=True, help="an SAI run directory (newest step) or step directory")
    parser.add_argument("--step", type=int, default=None)
    parser.add_argument("--lambda", dest="lam", type=float, default=0.0, help="λ of the agent, in [0, 1]")
    parser.add_argument("--simulations", type=int, default=None, help="simulations per move (default: the run's)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    configure_logging()
    try:
        check_lambda(args.lam, "--lambda")
        if args.simulations is not None and args.simulations < 1:
            raise ValueError(f"--simulations must be at least 1, got {args.simulations}")
        search = None if args.simulations is None else SearchChanges.of(num_simulations=args.simulations)
        agent = SaiAgent.from_checkpoint(args.checkpoint, args.step, args.lam, search)
    except (ValueError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    logger.info("sai_go gtp: %s, %d simulations, lambda %g, komi %g", agent.name, agent.search.num_simulations,
                agent.lam, agent.game.komi)
    SaiGTPServer(agent, seed=args.seed).serve(sys.stdin, sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
