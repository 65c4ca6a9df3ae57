"""A run directory's record of its config, and the checks made before a run changes anything in it.

**The config record.**  ``config.json`` records the config a run directory holds a run of.  Every launcher passes
through :func:`check_run_config` before it writes anything (``python -m experiments run`` for the experiment's
directory, :func:`zerolab.training.train.run` for each training run, :func:`zerolab.frontends.prepare_experiment`
and the experiments that write their own record), which compares the config it is given with the record, key by
key (:func:`config_changes`):

* the same config, or changes that are safe on resume (:func:`is_safe_change`: a larger ``iterations``, or a count
  the launcher names (:func:`growing_leaves`), extends the run; ``progress``, ``compilation_cache``,
  ``selfplay.device_memory_gib`` and ``selfplay.progress_plies`` change only what is shown, where the compiled
  programs are kept, and how a device splits its games): the run goes on;
* any other difference is refused with :class:`ConfigConflictError` — one line with every differing key, recorded
  value → new value — unless the change is allowed explicitly (``--allow-config-change`` on the command lines,
  :func:`config_changes_allowed` or ``allow_change=True`` in Python); keys that fix the shapes of what the
  checkpoints hold (``game.*``, ``model.*``) are refused even then;
* a key in one config only (a record written before the key existed, or after it was removed) is no conflict, and
  a directory that holds nothing but its config records (a run that stopped before it made anything) takes any
  config.

``config.json`` is never rewritten silently: when the recorded config changes (:meth:`ConfigRecord.write`), the
record it replaces is kept as ``config.previous-N.json`` (N = 1, 2, ...) and the changed keys are logged.

The other checks made before a run writes live beside this module: what the file system must allow
(:mod:`zerolab.training.file_system`) and one owner per directory (:mod:`zerolab.training.run_owner`).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import json
import logging
import os
import pathlib
import re
from collections.abc import Iterator, Mapping
from typing import Any

from zerolab import config as config_lib
from zerolab.search.config import RETIRED_RULES
from zerolab.training.file_system import RunDirectoryError, describe_os_error

logger = logging.getLogger(__name__)

CONFIG_FILE = "config.json"
PREVIOUS_CONFIG = re.compile(r"^config\.previous-(\d+)\.json$")
#: Config keys that fix the shapes of what a checkpoint holds: a run directory's run keeps them whatever is allowed.
SHAPE_DEFINING_PREFIXES = ("game.", "model.")
#: Leaf keys a rerun may change freely: how the run is shown (its progress bars and self-play's progress lines),
#: where compiled programs are cached, how a device splits its self-play games (its memory budget).
FREELY_CHANGED_LEAVES = ("progress", "compilation_cache", "device_memory_gib", "progress_plies")
#: Leaf keys a rerun may increase (a longer run), not decrease: training iterations.  A launcher adds its own with
#: :func:`growing_leaves` (``python -m experiments run`` reads an experiment's declared ``growing_leaves``).
GROWING_LEAVES = ("iterations",)
#: Leaf keys the code has renamed (old name → new): a recorded config is compared under the new names, the old key
#: winning over a new one it sits beside, as the code reading the record lets it (AlphaGateau's width was
#: ``embedding_size``; every network's width is now ``channels``).
RENAMED_LEAVES = {"embedding_size": "channels"}
#: What the flag that allows other changes is called on the command lines.
ALLOW_FLAG = "--allow-config-change"

_CHANGES_ALLOWED: contextvars.ContextVar[bool] = contextvars.ContextVar("config_changes_allowed", default=False)
_GROWING_LEAVES: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar("growing_leaves",
                                                                                 default=GROWING_LEAVES)


class ConfigConflictError(RunDirectoryError):
    """A rerun's config differs from the one its run directory records, in keys that are not safe to change."""


class _Missing:
    def __repr__(self) -> str:
        return "(absent)"


MISSING = _Missing()


@dataclasses.dataclass(frozen=True)
class ConfigChange:
    """One key whose recorded value differs from the requested one (either may be :data:`MISSING`)."""

    key: str
    recorded: Any
    requested: Any

    @property
    def leaf(self) -> str:
        return self.key.rsplit(".", 1)[-1]

    @property
    def shape_defining(self) -> bool:
        return self.key.startswith(SHAPE_DEFINING_PREFIXES)

    @property
    def one_sided(self) -> bool:
        """A key only one of the configs has (the code gained or lost it): no conflict."""
        return self.recorded is MISSING or self.requested is MISSING

    def __str__(self) -> str:
        return f"{self.key} {_show(self.recorded)} → {_show(self.requested)}"


def _show(value: Any) -> str:
    return repr(value) if isinstance(value, str) else json.dumps(value) if value is not MISSING else repr(value)


def is_safe_change(change: ConfigChange) -> bool:
    """Whether a rerun may make ``change`` without being allowed to: a key only one config has, a freely changed
    leaf (:data:`FREELY_CHANGED_LEAVES`), or a growing one (:data:`GROWING_LEAVES` and those :func:`growing_leaves`
    adds) that grows."""
    if change.one_sided or change.leaf in FREELY_CHANGED_LEAVES:
        return True
    if change.leaf in _GROWING_LEAVES.get():
        numbers = all(isinstance(value, int) and not isinstance(value, bool)
                      for value in (change.recorded, change.requested))
        return numbers and change.requested >= change.recorded
    return False


def current_names(flat: Mapping[str, Any]) -> dict[str, Any]:
    """A flat config with each key whose leaf was renamed (:data:`RENAMED_LEAVES`) under its new name, the old key's
    value winning over a new key beside it, and each retired ``search.rules`` value
    (:data:`zerolab.search.config.RETIRED_RULES`) as what it names now."""
    renamed = dict(flat)
    for key in flat:
        prefix, _, leaf = key.rpartition(".")
        if leaf in RENAMED_LEAVES:
            renamed[f"{prefix}.{RENAMED_LEAVES[leaf]}" if prefix else RENAMED_LEAVES[leaf]] = renamed.pop(key)
    for key, value in renamed.items():
        if key.rpartition(".")[2] == "rules" and isinstance(value, str):
            renamed[key] = RETIRED_RULES.get(value, value)
    return renamed


def moved_into_search(recorded: Mapping[str, Any], requested: Mapping[str, Any]) -> dict[str, Any]:
    """A flat recorded config with each search key that the code has since moved into its section's ``search``
    section under its new key: a recorded ``SECTION.KEY`` that the requested config lacks is read as
    ``SECTION.search.KEY`` where the requested config has that key and the record does not.  (An agent's search keys
    were once its section's own — ``evaluation.num_simulations``, a launcher's top-level ``num_simulations`` and
    ``kind`` —; every search's keys are now a ``search`` section's, :class:`zerolab.search.config.SearchChanges`.)"""
    moved = {}
    for key, value in recorded.items():
        section, _, leaf = key.rpartition(".")
        new_key = f"{section}.search.{leaf}" if section else f"search.{leaf}"
        keep = key in requested or new_key not in requested or new_key in recorded
        moved[key if keep else new_key] = value
    return moved


def config_changes(recorded: Mapping[str, Any], requested: Mapping[str, Any]) -> list[ConfigChange]:
    """The keys whose values differ between two configs (plain nested dicts, as JSON reads them), sorted; the
    recorded one's renamed keys are read under their new names (:func:`current_names`, :func:`moved_into_search`)."""
    flat_requested = config_lib.flatten(requested)
    flat_recorded = moved_into_search(current_names(config_lib.flatten(recorded)), flat_requested)
    return [ConfigChange(key, flat_recorded.get(key, MISSING), flat_requested.get(key, MISSING))
            for key in sorted(flat_recorded.keys() | flat_requested.keys())
            if flat_recorded.get(key, MISSING) != flat_requested.get(key, MISSING)]


def conflict_message(workdir: pathlib.Path, changes: list[ConfigChange], allowed: bool) -> str | None:
    """The one-line refusal of ``changes`` to the run in ``workdir`` (None when they may be made)."""
    fixed = [change for change in changes if change.shape_defining and not change.one_sided]
    unsafe = [change for change in changes if not is_safe_change(change) and change not in fixed]
    if fixed:
        return (f"{workdir} holds a run of another game or network ({'; '.join(map(str, fixed))}): its checkpoints' "
                f"shapes depend on the keys game.* and model.*, which no rerun changes; use another --workdir")
    if unsafe and not allowed:
        return (f"{workdir} holds a run made with other settings ({'; '.join(map(str, unsafe))}; recorded in "
                f"{workdir / CONFIG_FILE}): rerun with the recorded values to resume it, use another --workdir, or "
                f"pass {ALLOW_FLAG} to change them (no flag is needed to raise "
                f"{' or '.join(_GROWING_LEAVES.get())} or to "
                f"change {', '.join(FREELY_CHANGED_LEAVES)})")
    return None


@contextlib.contextmanager
def growing_leaves(extra: tuple[str, ...] | list[str]) -> Iterator[None]:
    """Within the block, the leaf keys in ``extra`` may also grow on a rerun without being allowed (as
    ``iterations`` may): a launcher's own counts whose first values a larger count keeps, e.g. skill-compat's
    ``num_bitstrings``."""
    token = _GROWING_LEAVES.set(GROWING_LEAVES + tuple(leaf for leaf in extra if leaf not in GROWING_LEAVES))
    try:
        yield
    finally:
        _GROWING_LEAVES.reset(token)


@contextlib.contextmanager
def config_changes_allowed(allowed: bool = True) -> Iterator[None]:
    """Within the block, :func:`check_run_config` lets a rerun change its run directories' configs (what
    ``--allow-config-change`` does for a whole command: the experiment's record and each of its training runs')."""
    token = _CHANGES_ALLOWED.set(allowed)
    try:
        yield
    finally:
        _CHANGES_ALLOWED.reset(token)


@dataclasses.dataclass(frozen=True)
class ConfigRecord:
    """The config a run directory is to record (:func:`check_run_config`'s result): ``text`` (JSON) and its
    ``changes`` from the record there (``recorded`` False: there was none)."""

    workdir: pathlib.Path
    text: str
    changes: tuple[ConfigChange, ...]
    recorded: bool

    def write(self) -> pathlib.Path | None:
        """Writes ``config.json`` unless it already holds this config; a record it replaces is kept as
        ``config.previous-N.json`` and the change logged.  Returns the kept previous record's path (or None)."""
        path = self.workdir / CONFIG_FILE
        if self.recorded and not self.changes:
            return None
        previous = None
        if self.recorded:
            previous = self.workdir / f"config.previous-{next_previous_number(self.workdir)}.json"
            os.replace(path, previous)
            logger.warning("the config of %s changed (%s); the previous one is kept as %s", self.workdir,
                           "; ".join(map(str, self.changes)), previous.name)
        temporary = path.with_name(f"{CONFIG_FILE}.tmp")
        temporary.write_text(self.text)
        os.replace(temporary, path)
        return previous


def next_previous_number(workdir: pathlib.Path) -> int:
    numbers = [int(match.group(1)) for name in os.listdir(workdir) if (match := PREVIOUS_CONFIG.match(name))]
    return max(numbers, default=0) + 1


def check_run_config(workdir: str | pathlib.Path, config: Any, allow_change: bool | None = None) -> ConfigRecord:
    """The record ``config`` makes in ``workdir`` (written by :meth:`ConfigRecord.write`), after checking it against
    the one there; reads only.  Raises :class:`ConfigConflictError` for changes that are neither safe nor allowed
    (``allow_change``; None: as :func:`config_changes_allowed` says) and a :class:`RunDirectoryError` when the record
    cannot be read."""
    workdir = pathlib.Path(workdir)
    text = config_lib.to_json(config) if hasattr(config, "to_dict") else json.dumps(config, indent=2, sort_keys=True)
    path = workdir / CONFIG_FILE
    try:
        recorded_text = path.read_text()
    except FileNotFoundError:
        return ConfigRecord(workdir, text, (), recorded=False)
    except OSError as error:
        raise RunDirectoryError(f"{path} cannot be read: {describe_os_error(error)}") from None
    try:
        recorded = json.loads(recorded_text)
    except json.JSONDecodeError as error:
        raise RunDirectoryError(f"{path} is not the JSON of a config ({error}); move it aside to record the config "
                                f"again") from None
    changes = config_changes(recorded, json.loads(text))
    allowed = _CHANGES_ALLOWED.get() if allow_change is None else allow_change
    message = conflict_message(workdir, changes, allowed) if holds_work(workdir) else None
    if message is not None:
        raise ConfigConflictError(message)
    return ConfigRecord(workdir, text, tuple(changes), recorded=True)


def holds_work(workdir: pathlib.Path) -> bool:
    """Whether ``workdir`` holds anything besides its config records (``config.json``, ``config.previous-N.json``):
    a directory whose run stopped before it made anything takes any config."""
    return any(name != CONFIG_FILE and not name.startswith("config.json") and not PREVIOUS_CONFIG.match(name)
               for name in os.listdir(workdir))


def record_run_config(workdir: str | pathlib.Path, config: Any, allow_change: bool | None = None) -> ConfigRecord:
    """:func:`check_run_config`, then :meth:`ConfigRecord.write` (``workdir`` created): for launchers that record
    their config before they do anything else."""
    record = check_run_config(workdir, config, allow_change)
    record.workdir.mkdir(parents=True, exist_ok=True)
    record.write()
    return record


# --- the file system -------------------------------------------------------------------------------------------------


