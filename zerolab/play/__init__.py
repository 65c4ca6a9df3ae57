"""Play: agents (the interface and pool, checkpoints with a search, engines, lc0 networks, specs) and the arena that
plays them against each other.

Method packages import this layer's names from here (``from zerolab.play import play_match``), as listed in ``__all__``
(the rule: :mod:`zerolab`); they resolve lazily (:mod:`zerolab.lazy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from zerolab.lazy import lazy_surface

if TYPE_CHECKING:
    from zerolab.play.agents import Agent, AgentPool, lanes_to_answer
    from zerolab.play.search_agents import SearchAgent, load_search_agent, make_search_agent
    from zerolab.play.engine_agents import EngineAgent
    from zerolab.play.agent_specs import check_agent_spec, make_agent, split_spec
    from zerolab.play.arena import Match, MemberChoice, TeamAgent, TeamMoves, play_games, play_match
    from zerolab.play.lc0_agents import PolicyAgent, policy_actions, policy_probabilities
    from zerolab.play.results import MatchResult

__all__ = [
    "Agent", "AgentPool", "EngineAgent", "Match", "MatchResult", "MemberChoice", "PolicyAgent", "SearchAgent",
    "TeamAgent", "TeamMoves", "check_agent_spec", "lanes_to_answer", "load_search_agent", "make_agent",
    "make_search_agent", "play_games", "play_match", "policy_actions", "policy_probabilities", "split_spec"
]
__getattr__, __dir__ = lazy_surface(__name__)
