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
    "InvalidPositionError": "zerolab.games.fen",
    "START_FENS": "zerolab.games.fen",
    "validate_fen": "zerolab.games.fen",
    "make_game": "zerolab.games",
    "move_table": "zerolab.games",
    "PROMOTION_PIECES": "zerolab.games.chess",
    "square_name": "zerolab.games.chess",
    # cost plans (python -m experiments plan)
    "PlannedProgram": "zerolab.training.plan",
    "abstract_states": "zerolab.training.plan",
    "compile_cost": "zerolab.training.plan",
    "format_programs": "zerolab.training.plan",
    "search_program": "zerolab.training.plan",
    # networks
    "NetworkInputs": "zerolab.networks.network",
    "NetworkOutput": "zerolab.networks.network",
    "AlphaZeroResNet": "zerolab.networks.network",
    "residual_tower": "zerolab.networks.network",
    "policy_head": "zerolab.networks.network",
    "ResidualBlock": "zerolab.networks.network",
    "make_network": "zerolab.networks.network",
    "init_variables": "zerolab.networks.network",
    "apply_network": "zerolab.networks.network",
    "count_parameters": "zerolab.networks.network",
    # lc0-format networks (maia): make_game("chess", observation="lc0") plays them
    "load_lc0_weights": "zerolab.networks.lc0",
    "read_lc0_weights": "zerolab.networks.lc0.weights",
    "maia_weights_path": "zerolab.networks.lc0.maia",
    "make_lc0": "zerolab.networks.lc0.network",
    "Lc0Network": "zerolab.networks.lc0.network",
    "PolicyAgent": "zerolab.play.lc0_agents",
    "convert_to_run": "zerolab.frontends.lc0_convert",
    "policy_actions": "zerolab.play.lc0_agents",
    "policy_probabilities": "zerolab.play.lc0_agents",
    # search
    "SearchConfig": "zerolab.search.mcts",
    "SearchOutput": "zerolab.search.mcts",
    "SearchRules": "zerolab.search.mcts",
    "STANDARD_RULES": "zerolab.search.mcts",
    "project_loop_rules": "zerolab.search.mcts",
    "run_search": "zerolab.search.mcts",
    "search_policy": "zerolab.search.mcts",
    "masked_logits": "zerolab.search.mcts",
    "selection_functions": "zerolab.search.mcts",
    "RootActionSelectionFn": "zerolab.search.mcts",
    "InteriorActionSelectionFn": "zerolab.search.mcts",
    "InitNodeStateFn": "zerolab.search.mcts",
    "UpdateNodeStateFn": "zerolab.search.mcts",
    "BackupFn": "zerolab.search.mcts",
    "SummaryFn": "zerolab.search.mcts",
    "standard_backup": "zerolab.search.mcts",
    # self-play, replay, runs, training
    "SelfPlayConfig": "zerolab.selfplay.scan",
    "Frames": "zerolab.selfplay.scan",
    "PlyRecord": "zerolab.selfplay.scan",
    "PlyDecision": "zerolab.selfplay.scan",
    "PlayVariables": "zerolab.selfplay.scan",
    "MoveRule": "zerolab.selfplay.scan",
    "ActFn": "zerolab.selfplay.scan",
    "InitCarryFn": "zerolab.selfplay.scan",
    "InitialStatesFn": "zerolab.selfplay.scan",
    "ValueTargetsFn": "zerolab.selfplay.scan",
    "PlayFn": "zerolab.selfplay.scan",
    "GameRule": "zerolab.selfplay.scan",
    "Lanes": "zerolab.selfplay.scan",
    "PlayedPly": "zerolab.selfplay.scan",
    "StartFn": "zerolab.selfplay.scan",
    "RewardFn": "zerolab.selfplay.scan",
    "ResetFn": "zerolab.selfplay.scan",
    "RecordsSummaryFn": "zerolab.selfplay.scan",
    "standard_start": "zerolab.selfplay.scan",
    "standard_reset": "zerolab.selfplay.scan",
    "pgx_reward": "zerolab.selfplay.scan",
    "ply_summary": "zerolab.selfplay.scan",
    "advance_lanes": "zerolab.selfplay.scan",
    "restart_games": "zerolab.selfplay.scan",
    "select_where": "zerolab.selfplay.scan",
    "search_move_rule": "zerolab.selfplay.scan",
    "standard_initial_states": "zerolab.selfplay.scan",
    "initial_states_from_fens": "zerolab.selfplay.scan",
    "make_play_fn": "zerolab.selfplay.scan",
    "choose_actions": "zerolab.selfplay.scan",
    "complete_games": "zerolab.selfplay.scan",
    "make_selfplay_fn": "zerolab.selfplay.scan",
    "summarize": "zerolab.selfplay.scan",
    "value_targets": "zerolab.selfplay.scan",
    "outcome_value_targets": "zerolab.selfplay.scan",
    "Method": "zerolab.training.method",
    "GameRuleFactory": "zerolab.training.method",
    "LossFn": "zerolab.training.method",
    "alphazero_loss": "zerolab.training.method",
    "IterationHook": "zerolab.training.train",
    "default_config": "zerolab.training.train",
    "train": "zerolab.training.train",
    "Components": "zerolab.training.runs",
    "TrainState": "zerolab.training.runs",
    "TrainedVariables": "zerolab.training.runs",
    "load_trained_variables": "zerolab.training.runs",
    "resolve_checkpoint": "zerolab.training.checkpoint",
    "Checkpointer": "zerolab.training.checkpoint",
    "MetricsLog": "zerolab.training.metrics",
    # devices
    "make_mesh": "zerolab.devices",
    "replicated": "zerolab.devices",
    "batch_sharded": "zerolab.devices",
    "check_divisible": "zerolab.devices",
    "shard_host_batch": "zerolab.devices",
    "jit_step": "zerolab.devices",
    # play
    "Agent": "zerolab.play.agents",
    "lanes_to_answer": "zerolab.play.agents",
    "SearchAgent": "zerolab.play.agents",
    "EngineAgent": "zerolab.play.agents",
    "GTPEngineAgent": "zerolab.play.agents",
    "GTPEngine": "zerolab.engines.gtp_client",
    "GTPEngineOptions": "zerolab.engines.gtp_client",
    "GTPEngineError": "zerolab.engines.gtp_client",
    "GTPServer": "zerolab.frontends.gtp",
    "GTPError": "zerolab.frontends.gtp",
    "MoveChooser": "zerolab.frontends.gtp",
    "agent_chooser": "zerolab.frontends.gtp",
    "load_search_agent": "zerolab.play.agents",
    "make_agent": "zerolab.play.agents",
    "play_match": "zerolab.play.arena",
    "play_games": "zerolab.play.arena",
    "Match": "zerolab.play.arena",
    "write_pgn": "zerolab.play.arena",
    "TeamAgent": "zerolab.play.arena",
    "TeamRule": "zerolab.play.arena",
    "TeamMoves": "zerolab.play.arena",
    "MemberChoice": "zerolab.play.arena",
    "delegate_moves": "zerolab.play.arena",
    "GameBoards": "zerolab.games.board",
    "GardnerBoard": "zerolab.games.board",
    "StateTracker": "zerolab.games.board",
    "board_from_state": "zerolab.games.board",
    "state_from_board": "zerolab.games.board",
    "GameRecord": "zerolab.games.pgn",
    "write_games": "zerolab.games.pgn",
    "write_game_records": "zerolab.games.pgn",
    "read_game_records": "zerolab.games.pgn",
    # evaluation
    "EloBook": "zerolab.evaluation.book",
    "MatchResult": "zerolab.play.results",
    "rate_new_player": "zerolab.evaluation.matchmaking",
    "EvaluationConfig": "zerolab.evaluation.rating",
    "Contestant": "zerolab.evaluation.rating",
    "rate_contestants": "zerolab.evaluation.rating",
    "match_key": "zerolab.evaluation.rating",
    "new_figure": "zerolab.evaluation.plots",
    "plot_elo_curves": "zerolab.evaluation.plots",
    "plot_training_curves": "zerolab.evaluation.plots",
    "save_figure": "zerolab.evaluation.plots",
    # front ends and external engines
    "UCIEngine": "zerolab.engines.uci_client",
    "EngineError": "zerolab.engines.uci_client",
    "find_engine": "zerolab.engines.executables",
    "MoveChoice": "zerolab.frontends.uci",
    "SearchBudget": "zerolab.frontends.uci",
    "UCIOption": "zerolab.frontends.uci",
    "UCIServer": "zerolab.frontends.uci",
    "main_loop": "zerolab.frontends.uci",
    "AgentMoveChooser": "zerolab.frontends.uci_search",
    "agent_server": "zerolab.frontends.uci_search",
    "LoadedSearch": "zerolab.frontends.uci_search",
    "SearchEngine": "zerolab.frontends.uci_search",
    "checkpoint_search": "zerolab.frontends.uci_search",
    "play_search": "zerolab.frontends.uci_search",
    "serve_search_engine": "zerolab.frontends.uci_search",
    "split_overrides": "zerolab.frontends.cli",
    "best_time": "zerolab.frontends.bench",
    "interleaved_best_times": "zerolab.frontends.bench",
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
