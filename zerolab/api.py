"""The core's public surface: everything a method package (``alphagateau``, ``distill``, ``contempt_search``,
``sai_go``, ``skill_compat``) may use, in one place.

Method packages import from here (``from zerolab.api import SearchRules, make_game``) and never from the core's
modules directly; a test (``tests/zerolab/test_layers.py``) holds them to it.  Names resolve lazily (PEP 562): importing
one name imports only the module that defines it, so a JAX-free name (FEN validation, UCI engines, progress bars)
does not pull in JAX or pgx — annotation workers and command-line start-up stay fast.

``PUBLIC_NAMES`` maps each name to the module that defines it; that module is the one place the concept lives.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

#: name -> defining module.  Grouped by the layers of the core (see the project README's map).
PUBLIC_NAMES: dict[str, str] = {
    # configs and logging
    "config": "zerolab.config",
    "ConfigError": "zerolab.config",
    "PRESETS": "zerolab.config",
    "load_config": "zerolab.config",
    "from_json": "zerolab.config",
    "to_json": "zerolab.config",
    "configure_logging": "zerolab.logs",
    "progress_bar": "zerolab.progress",
    # games (FEN validation has no JAX/pgx import)
    "Game": "zerolab.games",
    "ChessGame": "zerolab.games",
    "GoGame": "zerolab.games",
    "InvalidPositionError": "zerolab.fen",
    "START_FENS": "zerolab.fen",
    "validate_fen": "zerolab.fen",
    "make_game": "zerolab.games",
    "move_table": "zerolab.games",
    "PROMOTION_PIECES": "zerolab.games.chess",
    "square_name": "zerolab.games.chess",
    # cost plans (python -m experiments plan)
    "PlannedProgram": "zerolab.plan",
    "abstract_states": "zerolab.plan",
    "compile_cost": "zerolab.plan",
    "format_programs": "zerolab.plan",
    "search_program": "zerolab.plan",
    # networks
    "NetworkInputs": "zerolab.networks",
    "NetworkOutput": "zerolab.networks",
    "AlphaZeroResNet": "zerolab.networks",
    "residual_tower": "zerolab.networks",
    "policy_head": "zerolab.networks",
    "ResidualBlock": "zerolab.networks",
    "make_network": "zerolab.networks",
    "init_variables": "zerolab.networks",
    "apply_network": "zerolab.networks",
    "count_parameters": "zerolab.networks",
    # lc0-format networks (maia): make_game("chess", observation="lc0") plays them
    "load_lc0_weights": "zerolab.lc0",
    "read_lc0_weights": "zerolab.lc0.weights",
    "maia_weights_path": "zerolab.lc0.weights",
    "make_lc0": "zerolab.lc0.network",
    "Lc0Network": "zerolab.lc0.network",
    "PolicyAgent": "zerolab.lc0.agents",
    "convert_to_run": "zerolab.lc0.convert",
    "policy_actions": "zerolab.lc0.agents",
    "policy_probabilities": "zerolab.lc0.agents",
    # search
    "SearchConfig": "zerolab.search",
    "SearchOutput": "zerolab.search",
    "SearchRules": "zerolab.search",
    "STANDARD_RULES": "zerolab.search",
    "project_loop_rules": "zerolab.search",
    "run_search": "zerolab.search",
    "search_policy": "zerolab.search",
    "masked_logits": "zerolab.search",
    "selection_functions": "zerolab.search",
    "RootActionSelectionFn": "zerolab.search",
    "InteriorActionSelectionFn": "zerolab.search",
    "InitNodeStateFn": "zerolab.search",
    "UpdateNodeStateFn": "zerolab.search",
    "BackupFn": "zerolab.search",
    "SummaryFn": "zerolab.search",
    "standard_backup": "zerolab.search",
    # self-play, replay, runs, training
    "SelfPlayConfig": "zerolab.selfplay",
    "Frames": "zerolab.selfplay",
    "PlyRecord": "zerolab.selfplay",
    "PlyDecision": "zerolab.selfplay",
    "PlayVariables": "zerolab.selfplay",
    "MoveRule": "zerolab.selfplay",
    "ActFn": "zerolab.selfplay",
    "InitCarryFn": "zerolab.selfplay",
    "InitialStatesFn": "zerolab.selfplay",
    "ValueTargetsFn": "zerolab.selfplay",
    "PlayFn": "zerolab.selfplay",
    "GameRule": "zerolab.selfplay",
    "Lanes": "zerolab.selfplay",
    "PlayedPly": "zerolab.selfplay",
    "StartFn": "zerolab.selfplay",
    "RewardFn": "zerolab.selfplay",
    "ResetFn": "zerolab.selfplay",
    "RecordsSummaryFn": "zerolab.selfplay",
    "standard_start": "zerolab.selfplay",
    "standard_reset": "zerolab.selfplay",
    "pgx_reward": "zerolab.selfplay",
    "ply_summary": "zerolab.selfplay",
    "advance_lanes": "zerolab.selfplay",
    "restart_games": "zerolab.selfplay",
    "select_where": "zerolab.selfplay",
    "search_move_rule": "zerolab.selfplay",
    "standard_initial_states": "zerolab.selfplay",
    "initial_states_from_fens": "zerolab.selfplay",
    "make_play_fn": "zerolab.selfplay",
    "choose_actions": "zerolab.selfplay",
    "complete_games": "zerolab.selfplay",
    "make_selfplay_fn": "zerolab.selfplay",
    "summarize": "zerolab.selfplay",
    "value_targets": "zerolab.selfplay",
    "outcome_value_targets": "zerolab.selfplay",
    "Method": "zerolab.method",
    "GameRuleFactory": "zerolab.method",
    "LossFn": "zerolab.method",
    "alphazero_loss": "zerolab.method",
    "IterationHook": "zerolab.train",
    "default_config": "zerolab.train",
    "train": "zerolab.train",
    "Components": "zerolab.runs",
    "TrainState": "zerolab.runs",
    "TrainedVariables": "zerolab.runs",
    "load_trained_variables": "zerolab.runs",
    "resolve_checkpoint": "zerolab.checkpoint",
    "Checkpointer": "zerolab.checkpoint",
    "MetricsLog": "zerolab.metrics",
    # devices
    "make_mesh": "zerolab.devices",
    "replicated": "zerolab.devices",
    "batch_sharded": "zerolab.devices",
    "check_divisible": "zerolab.devices",
    "shard_host_batch": "zerolab.devices",
    "jit_step": "zerolab.devices",
    # play
    "Agent": "zerolab.agents",
    "SearchAgent": "zerolab.agents",
    "EngineAgent": "zerolab.agents",
    "GTPEngineAgent": "zerolab.agents",
    "GTPEngine": "zerolab.gtp_client",
    "GTPEngineOptions": "zerolab.gtp_client",
    "GTPEngineError": "zerolab.gtp_client",
    "GTPServer": "zerolab.gtp",
    "GTPError": "zerolab.gtp",
    "MoveChooser": "zerolab.gtp",
    "agent_chooser": "zerolab.gtp",
    "load_search_agent": "zerolab.agents",
    "make_agent": "zerolab.agents",
    "play_match": "zerolab.arena",
    "play_games": "zerolab.arena",
    "Match": "zerolab.arena",
    "write_pgn": "zerolab.arena",
    "TeamAgent": "zerolab.arena",
    "GameBoards": "zerolab.board",
    "GardnerBoard": "zerolab.board",
    "StateTracker": "zerolab.board",
    "board_from_state": "zerolab.board",
    "state_from_board": "zerolab.board",
    "GameRecord": "zerolab.pgn",
    "write_games": "zerolab.pgn",
    "write_game_records": "zerolab.pgn",
    "read_game_records": "zerolab.pgn",
    # evaluation
    "EloBook": "zerolab.elo",
    "MatchResult": "zerolab.elo",
    "rate_new_player": "zerolab.elo",
    "EvaluationConfig": "zerolab.rating",
    "Contestant": "zerolab.rating",
    "rate_contestants": "zerolab.rating",
    "match_key": "zerolab.rating",
    "new_figure": "zerolab.plots",
    "plot_elo_curves": "zerolab.plots",
    "plot_training_curves": "zerolab.plots",
    "save_figure": "zerolab.plots",
    # front ends and external engines
    "UCIEngine": "zerolab.engines",
    "EngineError": "zerolab.engines",
    "find_engine": "zerolab.engines",
    "MoveChoice": "zerolab.uci",
    "SearchBudget": "zerolab.uci",
    "UCIOption": "zerolab.uci",
    "UCIServer": "zerolab.uci",
    "main_loop": "zerolab.uci",
    "AgentMoveChooser": "zerolab.uci_search",
    "agent_server": "zerolab.uci_search",
    "LoadedSearch": "zerolab.uci_search",
    "SearchEngine": "zerolab.uci_search",
    "checkpoint_search": "zerolab.uci_search",
    "play_search": "zerolab.uci_search",
    "serve_search_engine": "zerolab.uci_search",
    "split_overrides": "zerolab.cli",
    "best_time": "zerolab.bench",
    "interleaved_best_times": "zerolab.bench",
}

__all__ = sorted(PUBLIC_NAMES)


def __getattr__(name: str) -> Any:
    module_name = PUBLIC_NAMES.get(name)
    if module_name is None:
        raise AttributeError(f"zerolab.api has no public name {name!r}; the public names are listed in PUBLIC_NAMES")
    module = importlib.import_module(module_name)
    value = module if module_name.rsplit(".", 1)[-1] == name else getattr(module, name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:  # static tools see the real definitions
    from zerolab import config, train  # noqa: F401
