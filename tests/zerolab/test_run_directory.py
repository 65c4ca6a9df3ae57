"""A run directory's config record (which changes a rerun may make, which are refused, what is kept) and its
file-system checks (a file where a directory should be, a read-only or full file system, errors that name no path).
The same behaviour through the training loop and the command lines is in test_train.py."""

from __future__ import annotations

import errno
import json
import logging
import os
import sys

import ml_collections
import pytest

from zerolab.logs import OneLineLibraryErrors
from zerolab.training.file_system import RunDirectoryError, check_run_directory, file_system_error, writing
from zerolab.training.run_directory import (
    MISSING,
    ConfigChange,
    ConfigConflictError,
    check_run_config,
    config_changes,
    config_changes_allowed,
    is_safe_change,
    record_run_config,
)

RECORDED = {"iterations": 2, "progress": True, "seed": 0, "game": {"name": "gardner_chess"},
            "model": {"channels": 8}, "selfplay": {"num_games": 16, "device_memory_gib": None},
            "pretrain": {"iterations": 12}}


def config(**changes) -> ml_collections.ConfigDict:
    """RECORDED with dotted-key ``changes`` (``selfplay__num_games=64`` sets ``selfplay.num_games``)."""
    values = json.loads(json.dumps(RECORDED))
    for key, value in changes.items():
        *parents, leaf = key.split("__")
        node = values
        for parent in parents:
            node = node[parent]
        node[leaf] = value
    return ml_collections.ConfigDict(values)


@pytest.fixture
def run_directory(tmp_path):
    """A directory holding a run of RECORDED: its record and some work."""
    record_run_config(tmp_path, config())
    (tmp_path / "checkpoints").mkdir()
    return tmp_path


@pytest.mark.parametrize("key, recorded, requested, safe", [
    ("iterations", 2, 5, True),  # extends the run
    ("pretrain.iterations", 12, 13, True),  # a stage's iterations too
    ("iterations", 2, 2.5, False),
    ("iterations", 5, 2, False),  # fewer iterations than recorded is a change of the run
    ("progress", True, False, True),
    ("compilation_cache", "~/.cache/a", "/tmp/b", True),
    ("selfplay.device_memory_gib", None, 40.0, True),
    ("selfplay.progress_plies", 0, 8, True),  # self-play's progress lines: what is shown
    ("selfplay.num_games", 16, 64, False),
    ("seed", 0, 1, False),
    ("model.channels", 8, 16, False),
    ("search.lc0_cpuct", MISSING, 1.7, True),  # a key the record predates
    ("search.retired_key", 3, MISSING, True),
])
def test_which_changes_a_rerun_may_make_without_the_flag(key, recorded, requested, safe):
    assert is_safe_change(ConfigChange(key, recorded, requested)) is safe


def test_a_launcher_names_its_own_growing_counts_and_only_inside_its_block_do_they_grow_freely(capsys):
    from zerolab.training import growing_leaves

    change = ConfigChange("framework.num_bitstrings", 16, 32)
    assert not is_safe_change(change)  # the core knows no skill-compat key
    with growing_leaves(("num_bitstrings",)):
        assert is_safe_change(change) and is_safe_change(ConfigChange("iterations", 2, 3))
        assert not is_safe_change(ConfigChange("framework.num_bitstrings", 32, 16))
    assert not is_safe_change(change)


@pytest.mark.engine
def test_python_m_experiments_reads_a_runners_growing_counts(tmp_path, capsys, stockfish_path):
    from experiments.__main__ import main
    from experiments.configs import load_config
    from zerolab import config as config_lib

    workdir = tmp_path / "run"
    (workdir / "matchups").mkdir(parents=True)  # it holds work: a change of settings is checked
    overrides = [f"senior.engine={stockfish_path}"]
    (workdir / "config.json").write_text(config_lib.to_json(load_config(
        "skill-compat-stt", "tiny", overrides + ["framework.num_bitstrings=2"])))
    assert main(["run", "skill-compat-stt", "--workdir", str(workdir), *overrides,
                 "framework.num_bitstrings=1"]) == 2  # fewer bitstrings: a change of the run, refused
    error = capsys.readouterr().err
    assert "framework.num_bitstrings 2 → 1" in error
    assert "no flag is needed to raise iterations or num_bitstrings" in error  # the runner's GROWING_LEAVES


def test_changes_are_listed_key_by_key_with_both_values():
    changes = config_changes(RECORDED, config(iterations=1, selfplay__num_games=64).to_dict())
    assert [str(change) for change in changes] == ["iterations 2 → 1", "selfplay.num_games 16 → 64"]


def test_a_conflicting_rerun_is_refused_in_one_line_and_changes_nothing(run_directory):
    before = (run_directory / "config.json").read_bytes()
    with pytest.raises(ConfigConflictError) as refused:
        check_run_config(run_directory, config(iterations=1, selfplay__num_games=64, progress=False))
    message = str(refused.value)
    assert "\n" not in message
    assert "iterations 2 → 1; selfplay.num_games 16 → 64" in message and "progress" not in message.split("(no")[0]
    assert "--allow-config-change" in message and "raise iterations" in message
    with pytest.raises(ConfigConflictError):
        record_run_config(run_directory, config(seed=3))
    assert (run_directory / "config.json").read_bytes() == before
    assert sorted(path.name for path in run_directory.iterdir()) == ["checkpoints", "config.json"]


def test_an_allowed_change_keeps_the_previous_record_and_logs_the_change(run_directory, caplog):
    first = (run_directory / "config.json").read_text()
    with caplog.at_level(logging.WARNING), config_changes_allowed():
        record_run_config(run_directory, config(selfplay__num_games=64))
    assert "selfplay.num_games 16 → 64" in caplog.text and "config.previous-1.json" in caplog.text
    assert (run_directory / "config.previous-1.json").read_text() == first
    assert json.loads((run_directory / "config.json").read_text())["selfplay"]["num_games"] == 64
    record_run_config(run_directory, config(selfplay__num_games=64, iterations=3))  # safe: no flag needed
    assert json.loads((run_directory / "config.previous-2.json").read_text())["iterations"] == 2
    record_run_config(run_directory, config(selfplay__num_games=64, iterations=3))  # the same: nothing written
    assert not (run_directory / "config.previous-3.json").exists()


def test_game_and_model_never_change_even_when_changes_are_allowed(run_directory):
    with pytest.raises(ConfigConflictError, match=r"model.channels 8 → 16.*no rerun changes; use another --workdir"):
        check_run_config(run_directory, config(model__channels=16), allow_change=True)


def test_a_game_or_model_key_the_record_predates_is_no_conflict(run_directory):
    """A key the code gained since the record was written (its recorded value missing) changes no checkpoint's shape:
    a directory holding work takes it without the flag, under model.* as anywhere; a changed model key is refused."""
    record = check_run_config(run_directory, config(model__new_option=3, selfplay__new_option=True))
    assert [str(change) for change in record.changes] == ["model.new_option (absent) → 3",
                                                          "selfplay.new_option (absent) → true"]
    with pytest.raises(ConfigConflictError, match="model.channels 8 → 16"):
        check_run_config(run_directory, config(model__channels=16, model__new_option=3))


def test_a_renamed_key_is_compared_under_its_new_name(tmp_path):
    """AlphaGateau's width was recorded as model.embedding_size (beside a base config's model.channels, which it
    overrode): a rerun naming it model.channels resumes when the width is the same and is refused when it is not."""
    record_run_config(tmp_path, config(model__embedding_size=16))
    (tmp_path / "checkpoints").mkdir()
    assert check_run_config(tmp_path, config(model__channels=16)).changes == ()
    with pytest.raises(ConfigConflictError, match=r"model.channels 16 → 8"):
        check_run_config(tmp_path, config())


def test_a_search_key_moved_into_its_search_section_is_compared_there(tmp_path):
    """Older runs recorded an agent's search keys in its own section (``evaluation.num_simulations``, a launcher's
    top-level ``num_simulations`` and ``kind``); they now live in a ``search`` section.  A rerun resumes when the
    values are the same, is refused naming the new key when one differs, and a key the new config still has where
    it was is not moved."""
    def launcher(evaluation: dict, **top) -> ml_collections.ConfigDict:
        return ml_collections.ConfigDict({**config().to_dict(), "evaluation": {"games": 4, **evaluation}, **top})

    record_run_config(tmp_path, launcher({"num_simulations": 8}, num_simulations=16, kind="muzero"))
    (tmp_path / "checkpoints").mkdir()
    moved = launcher({"search": {"num_simulations": 8}}, search={"num_simulations": 16, "kind": "muzero"})
    assert check_run_config(tmp_path, moved).changes == ()
    with pytest.raises(ConfigConflictError, match=r"evaluation.search.num_simulations 8 → 2"):
        check_run_config(tmp_path, launcher({"search": {"num_simulations": 2}}, search={"num_simulations": 16,
                                                                                         "kind": "muzero"}))
    with pytest.raises(ConfigConflictError, match=r"search.kind 'muzero' → 'gumbel'"):
        check_run_config(tmp_path, launcher({"search": {"num_simulations": 8}}, search={"num_simulations": 16,
                                                                                         "kind": "gumbel"}))
    # where the config keeps the key itself, the record's key is compared as it is
    assert [str(change) for change in check_run_config(tmp_path, launcher(
        {"num_simulations": 8, "search": {"num_simulations": 4}}, num_simulations=16, kind="muzero")).changes] == [
        "evaluation.search.num_simulations (absent) → 4"]


def test_a_retired_rules_name_is_compared_as_what_it_names_now(tmp_path):
    """The search-contempt experiments' plain arm recorded ``search.rules`` as the retired
    ``zerolab.search.mcts:project_loop_rules``, the standard search: a rerun with empty rules resumes; other rules
    are still a change."""
    def with_rules(rules: str) -> ml_collections.ConfigDict:
        values = config().to_dict()
        values["search"] = {"rules": rules}
        return ml_collections.ConfigDict(values)

    record_run_config(tmp_path, with_rules("zerolab.search.mcts:project_loop_rules"))
    (tmp_path / "checkpoints").mkdir()
    assert check_run_config(tmp_path, with_rules("")).changes == ()
    with pytest.raises(ConfigConflictError, match=r"search.rules '' → 'contempt_search.rules:contempt_rules'"):
        check_run_config(tmp_path, with_rules("contempt_search.rules:contempt_rules"))


def test_a_directory_without_work_takes_any_config(tmp_path):
    record_run_config(tmp_path, config())  # a run that stopped before it made anything
    record_run_config(tmp_path, config(model__channels=16, seed=4))
    assert json.loads((tmp_path / "config.json").read_text())["model"]["channels"] == 16


def test_a_file_where_a_directory_should_be_is_named(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(RunDirectoryError, match=f"^--workdir {tmp_path / 'file'} is a file, not a directory$"):
        check_run_directory(tmp_path / "file")
    with pytest.raises(RunDirectoryError, match=f"cannot be created: {tmp_path / 'file'} is a file"):
        check_run_directory(tmp_path / "file" / "run")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "replay").write_text("x")
    with pytest.raises(RunDirectoryError, match=f"^{tmp_path / 'run' / 'replay'} is a file where the run keeps a "):
        check_run_directory(tmp_path / "run")
    assert check_run_directory(tmp_path / "new" / "run") == tmp_path / "new" / "run"
    assert not (tmp_path / "new").exists()  # the check creates nothing


@pytest.mark.skipif(os.geteuid() == 0, reason="as root, a directory without write permission is still written "
                                              "(chmod does not stop root); the file cases above run instead")
def test_a_directory_that_cannot_be_written_is_named(tmp_path):
    (tmp_path / "run").mkdir()
    os.chmod(tmp_path / "run", 0o555)
    try:
        with pytest.raises(RunDirectoryError, match=f"--workdir {tmp_path / 'run'} is not writable"):
            check_run_directory(tmp_path / "run")
        with pytest.raises(RunDirectoryError, match=f"cannot be created: {tmp_path / 'run'} is not writable"):
            check_run_directory(tmp_path / "run" / "sub")
    finally:
        os.chmod(tmp_path / "run", 0o755)


def test_writes_that_fail_without_a_file_name_get_the_path(tmp_path):
    with pytest.raises(OSError) as raised, writing(tmp_path / "metrics.jsonl"):
        raise OSError(errno.ENOSPC, "No space left on device")  # a failed write() or flush() names no file
    assert raised.value.filename == str(tmp_path / "metrics.jsonl") and raised.value.errno == errno.ENOSPC
    tensorstore = ValueError("RESOURCE_EXHAUSTED: Error writing local file \"/x/manifest.ocdbt\": Failed to write "
                             "113 bytes to file 17: No space left on device [os_error_code='28'] [tensorstore_spec=...]")
    with pytest.raises(OSError) as raised, writing(tmp_path / "checkpoints" / "9"):
        raise tensorstore  # orbax's writer on a full disk
    assert raised.value.filename == str(tmp_path / "checkpoints" / "9") and raised.value.__cause__ is tensorstore
    with pytest.raises(KeyError), writing(tmp_path):
        raise KeyError("not a file-system failure")
    assert file_system_error(RuntimeError("not a file-system failure"), tmp_path) is None
    try:
        try:
            with writing(tmp_path / "replay" / "frames-4.npz.tmp"):
                raise OSError(errno.ENOSPC, "No space left on device")
        except OSError as error:
            raise RuntimeError("a wrapper's error") from error
    except RuntimeError as error:
        message = file_system_error(error, tmp_path)
    assert message == (f"writing {tmp_path / 'replay' / 'frames-4.npz.tmp'} failed: No space left on device "
                       f"(ENOSPC); the checkpoints saved before are kept, and a rerun on {tmp_path} resumes from the "
                       f"newest complete one")
    assert file_system_error(FileNotFoundError(errno.ENOENT, "No such file", "x"), tmp_path) is None  # an input


def test_library_errors_log_one_short_line_without_their_traceback():
    try:
        raise ValueError("RESOURCE_EXHAUSTED: " + "x" * 1000 + "\nsecond line")
    except ValueError:
        record = logging.getLogger("absl").makeRecord("absl", logging.ERROR, __file__, 1, "failed: %s",
                                                      ("RESOURCE_EXHAUSTED " + "y" * 1000,), sys.exc_info())
    OneLineLibraryErrors().filter(record)
    assert record.exc_info is None and record.getMessage().endswith(" …") and len(record.getMessage()) < 310
    own = logging.getLogger("zerolab.training").makeRecord("zerolab.training", logging.ERROR, __file__, 1, "m %s",
                                                            ("a\nb",), None)
    OneLineLibraryErrors().filter(own)
    assert own.getMessage() == "m a\nb"


def test_sizes_that_do_not_split_over_the_devices_are_refused_before_the_run_directory_is_made(tmp_path):
    """16 games over 3 devices: refused at the door (status 2, one line naming the key), with no run directory made;
    before, "new run" had written its files when self-play found it out."""
    import pathlib
    import subprocess

    from tests.fast_compile import subprocess_env

    workdir = tmp_path / "run"
    result = subprocess.run([sys.executable, "-m", "zerolab", "train", "--config", "quickstart", "--workdir",
                             str(workdir), "--host-devices", "3", "selfplay.num_games=16"],
                            cwd=pathlib.Path(__file__).resolve().parents[2], capture_output=True, text=True,
                            timeout=300, env=subprocess_env())
    assert result.returncode == 2, result.stderr[-2000:]
    assert result.stderr.strip().splitlines()[-1] == ("error: selfplay.num_games=16 must be divisible by the number "
                                                      "of devices (3)")
    assert not workdir.exists()
