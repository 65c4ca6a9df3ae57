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

**The file system.**  :func:`check_run_directory` refuses, before any work, a run directory that cannot hold a run:
a path naming a file, a file where one of the run's directories should be, a directory that cannot be written
(read-only file system, no permission) or a file system with no room; and :func:`file_system_error` turns an
``OSError`` met mid-run (a full disk, say), wherever it is in the chain of exceptions, into one line naming the path
and the problem.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import errno
import json
import logging
import os
import pathlib
import re
import shutil
import sys
import time
from collections.abc import Iterator, Mapping
from typing import Any

from zerolab import config as config_lib
from zerolab.search.config import RETIRED_RULES

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
#: Directories of a run directory: a file under one of these names stops the run before it starts.
RUN_SUBDIRECTORIES = ("checkpoints", "replay", "games", "figures", "tb")
#: Operating-system errors of a write that fails: no room, no quota, read-only, no permission, a device error, a
#: file where a directory should be (or the reverse), a file too large.
WRITE_FAILURES = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EIO,
                            errno.ENOTDIR, errno.EISDIR, errno.EEXIST, errno.EFBIG})
#: A file system with less room than this cannot take a checkpoint: the run is refused before it starts.
MINIMUM_FREE_BYTES = 1 << 20

_CHANGES_ALLOWED: contextvars.ContextVar[bool] = contextvars.ContextVar("config_changes_allowed", default=False)
_GROWING_LEAVES: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar("growing_leaves",
                                                                                 default=GROWING_LEAVES)


class RunDirectoryError(ValueError):
    """A run directory cannot be used as asked: its message is one line naming the path and the problem."""


class RunDirectoryBusyError(RunDirectoryError):
    """Another process owns the run directory (:class:`RunDirectoryOwner`); the message names it."""


#: The file whose lock marks a run directory's owner (its text says who holds it).
OWNER_FILE = "owner.lock"


class RunDirectoryOwner:
    """One owner per run directory: an exclusive ``flock`` on ``<workdir>/owner.lock``, held while a run writes.

    A second process that asks for a directory another holds gets :class:`RunDirectoryBusyError` naming the holder
    (pid, host, start time and command, which the holder writes into the file when it starts writing) and has written
    nothing.  The lock is the operating system's, so it goes with its process, however that ends (``kill -9``
    included): a stale file is no owner.  Within one process a directory may be claimed again (an experiment's
    launcher, then the training run it starts in the same directory): the claims nest and the lock is released with
    the outermost.

    Use :meth:`claim` (a context manager).  ``claim(create=False)`` locks a directory that already has an owner file
    (nothing is written, so a run refused by a later check leaves the directory as it was; a directory without one has
    had no owner since owners were recorded); :meth:`take`, once the caller is about to write, locks it if it is not
    yet (making the directory's owner file) and records this process as the owner.
    """

    _held: dict[str, list] = {}  # the process's own claims: real path -> [open owner file, depth]

    def __init__(self, workdir: str | pathlib.Path, flag: str = "--workdir"):
        self.workdir = pathlib.Path(workdir)
        self.flag = flag
        self._locked = False
        self._recorded = False

    @contextlib.contextmanager
    def claim(self, create: bool = True):
        """Holds the directory for the ``with`` block (made and recorded first where ``create``; see the class)."""
        try:
            if create:
                self.workdir.mkdir(parents=True, exist_ok=True)
                self.take()
            elif (self.workdir / OWNER_FILE).exists():
                self._lock(create=False)
            yield self
        finally:
            self.release()

    def take(self) -> None:
        """Locks the directory (it must exist) unless this claim holds it, and records this process as its owner;
        :class:`RunDirectoryBusyError` if another process holds it."""
        if not self._locked:
            self._lock(create=True)
        if self._recorded:
            return
        import socket

        handle, depth = self._held[os.path.realpath(self.workdir)]
        if depth == 1:  # the outermost claim of this process records it
            started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
            command = " ".join(os.path.basename(part) if index == 0 else part for index, part in enumerate(sys.argv))
            handle.seek(0)
            handle.truncate()
            handle.write(f"pid {os.getpid()} on {socket.gethostname()} since {started} ({command})\n")
            handle.flush()
        self._recorded = True

    def _lock(self, create: bool) -> None:
        import fcntl

        key = os.path.realpath(self.workdir)
        held = self._held.get(key)
        if held is not None:  # this process holds it already: nest
            held[1] += 1
            self._locked = True
            return
        handle = open(self.workdir / OWNER_FILE, "a+" if create else "r+")  # noqa: SIM115 - open while held
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            handle.close()
            raise RunDirectoryBusyError(f"{self.flag} {self.workdir} is in use by {holder}: one run at a time writes a "
                                        f"run directory; wait for it to end or stop it, then run again") from None
        self._held[key] = [handle, 1]
        self._locked = True

    def release(self) -> None:
        """Gives the claim up (the lock goes with the process's last claim on the directory)."""
        if not self._locked:
            return
        self._locked = self._recorded = False
        key = os.path.realpath(self.workdir)
        held = self._held.get(key)
        if held is None:
            return
        held[1] -= 1
        if held[1] == 0:
            del self._held[key]
            held[0].close()  # closing the file releases the flock


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


def config_changes(recorded: Mapping[str, Any], requested: Mapping[str, Any]) -> list[ConfigChange]:
    """The keys whose values differ between two configs (plain nested dicts, as JSON reads them), sorted; the
    recorded one's renamed keys are read under their new names (:func:`current_names`)."""
    flat_recorded, flat_requested = current_names(config_lib.flatten(recorded)), config_lib.flatten(requested)
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


def describe_os_error(error: OSError) -> str:
    """``"<strerror> (<ERRNO name>)"`` of an ``OSError``, e.g. ``"No space left on device (ENOSPC)"``."""
    name = errno.errorcode.get(error.errno or 0)
    reason = error.strerror or str(error)
    return f"{reason} ({name})" if name else reason


def check_run_directory(workdir: str | pathlib.Path, flag: str = "--workdir") -> pathlib.Path:
    """``workdir`` if a run can be written there; reads only (the directory is not created).

    Raises :class:`RunDirectoryError` naming the path when it is a file, when a file stands where one of its
    directories (or of the run's own, :data:`RUN_SUBDIRECTORIES`) should be, when the first existing directory on the
    way cannot be written (read-only file system, permission) or when its file system has less than
    :data:`MINIMUM_FREE_BYTES` free.
    """
    workdir = pathlib.Path(workdir)
    if workdir.exists() and not workdir.is_dir():
        raise RunDirectoryError(f"{flag} {workdir} is a file, not a directory")
    for name in RUN_SUBDIRECTORIES:
        path = workdir / name
        if path.exists() and not path.is_dir():
            raise RunDirectoryError(f"{path} is a file where the run keeps a directory; move it aside")
    existing = workdir
    while not existing.exists():
        if existing.parent == existing:
            break
        existing = existing.parent
    if not existing.is_dir():
        raise RunDirectoryError(f"{flag} {workdir} cannot be created: {existing} is a file, not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        problem = "is on a read-only file system" if _read_only(existing) else "is not writable (permission denied)"
        what = f"{existing} {problem}" if existing == workdir else f"{workdir} cannot be created: {existing} {problem}"
        raise RunDirectoryError(f"{flag} {what}")
    free = shutil.disk_usage(existing).free
    if free < MINIMUM_FREE_BYTES:
        raise RunDirectoryError(f"{flag} {workdir}: no space left on its file system ({free} bytes free at "
                                f"{existing})")
    return workdir


def _read_only(path: pathlib.Path) -> bool:
    return bool(os.statvfs(path).f_flag & os.ST_RDONLY)


def os_error_in(error: BaseException) -> OSError | None:
    """The first ``OSError`` in ``error``'s chain (itself, its causes and contexts), preferring one that names a
    file; None when there is none."""
    chain, seen = [], set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        chain.append(current)
        current = current.__cause__ or current.__context__
    errors = [item for item in chain if isinstance(item, OSError)]
    named = [item for item in errors if item.filename]
    return (named or errors or [None])[0]


def file_system_error(error: BaseException, workdir: str | pathlib.Path) -> str | None:
    """One line for a file-system failure met while running in ``workdir`` — the path, the problem and what a rerun
    does — or None when ``error`` is not one: no ``OSError`` of :data:`WRITE_FAILURES` in its chain nor such an
    operating-system error number in its message (:func:`os_error_of`).  A missing file is not one: it is reported
    as the input it is."""
    os_error = os_error_in(error) or os_error_of(error, workdir)
    if os_error is None or os_error.errno not in WRITE_FAILURES:
        return None
    return (f"writing {os_error.filename or workdir} failed: {describe_os_error(os_error)}; the checkpoints saved "
            f"before are kept, and a rerun on {workdir} resumes from the newest complete one")


#: How tensorstore (orbax's writer) gives the operating system's error number inside its own error's message.
TENSORSTORE_ERROR_CODE = re.compile(r"os_error_code='(\d+)'")


def os_error_of(error: BaseException, path: str | pathlib.Path) -> OSError | None:
    """``error`` as an ``OSError`` naming ``path`` when it is a file-system failure that names no file: an
    ``OSError`` without a file name (a failed write or flush), or a writer's own error that carries the operating
    system's error number in its message (tensorstore's ``os_error_code='28'``); None otherwise."""
    if isinstance(error, OSError):
        return None if error.filename else type(error)(error.errno, error.strerror or str(error), str(path))
    match = TENSORSTORE_ERROR_CODE.search(str(error))
    if match is None:
        return None
    number = int(match.group(1))
    return OSError(number, os.strerror(number), str(path))


@contextlib.contextmanager
def writing(path: str | pathlib.Path) -> Iterator[None]:
    """Raises a file-system failure of the block that names no file as an ``OSError`` naming ``path``
    (:func:`os_error_of`), so that the error says where it happened; other errors pass unchanged."""
    try:
        yield
    except Exception as error:
        named = os_error_of(error, path)
        if named is None:
            raise
        raise named from error
