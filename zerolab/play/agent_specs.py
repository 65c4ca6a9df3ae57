"""Agent specs: :func:`make_agent` reads a spec string (command line, configs) into an agent.

* ``DIR[:key=value,...]`` — a run directory (its newest checkpoint) or one checkpoint step directory, with
  ``step=N``, ``name=NAME`` and search settings by :class:`zerolab.search.config.SearchConfig`'s field names
  (:meth:`SearchConfig.with_overrides`): ``num_simulations=N``, ``kind=gumbel|muzero``, ``gumbel_scale=X``,
  ``max_num_considered_actions=N``, ``rules=package.module:factory`` (search rules; default: the run's own
  ``search.rules``) and ``rule_options.NAME=VALUE`` for the rules' options
  (``rules=contempt_search.rules:contempt_rules,rule_options.sc_limit=5``; values are Python literals or strings).
  The rules' factory rejects option names it does not take; an unknown key is an error naming the valid ones
  (:func:`zerolab.play.search_agents.load_search_agent`).
* ``ENGINE[:key=value,...]`` — an external UCI engine (``stockfish:elo=1350``, ``fairy-stockfish:skill=-20``); see
  :mod:`zerolab.engines.uci_client` for its options (:class:`zerolab.play.engine_agents.EngineAgent`).
* ``gnugo[:level=N,timeout=S,seed=K]`` — GNU Go over GTP for Go (:class:`zerolab.play.engine_agents.GTPEngineAgent`,
  :mod:`zerolab.engines.gtp_client`; ``seed`` defaults to 1, so its moves repeat from run to run).
"""

from __future__ import annotations

import pathlib

from zerolab.config import ConfigError, split_spec
from zerolab.engines.executables import EngineNotFoundError, find_engine
from zerolab.games import Game
from zerolab.play.agents import Agent
from zerolab.play.engine_agents import EngineAgent, GTPEngineAgent
from zerolab.play.search_agents import load_search_agent


GTP_ENGINE_NAMES = ("gnugo",)


def make_agent(spec: str, game: Game | None = None) -> Agent:
    """An agent from a spec string (see the module docstring)."""
    head, options = split_spec(spec)
    if pathlib.Path(head).is_dir():  # a run or checkpoint directory; an engine may be given by its file's path
        return load_search_agent(head, options)
    if game is None:
        raise ValueError(f"engine agent {spec!r} needs the game it plays")
    if pathlib.Path(head).name in GTP_ENGINE_NAMES:
        return GTPEngineAgent(spec, game)
    return EngineAgent(spec, game)


def check_agent_spec(key: str, spec: str) -> None:
    """Raises :class:`zerolab.config.ConfigError` naming ``key`` unless ``spec`` names a directory (a run or a
    checkpoint step) or an engine executable that :func:`zerolab.engines.executables.find_engine` finds: the check a
    launcher makes at its door, before it makes a run directory or starts an engine."""
    head, _ = split_spec(spec)
    if pathlib.Path(head).is_dir():
        return
    try:
        find_engine(head)
    except EngineNotFoundError as error:
        raise ConfigError(f"{key}={spec!r}: neither a run directory nor an engine found: {error}") from None
