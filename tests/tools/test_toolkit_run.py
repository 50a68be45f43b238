"""ToolRun + run_on_toolkit on this computer: the round trip, the log kept, the one failure text."""

from __future__ import annotations

import hashlib

import pytest

from studio.core.errors import UserError
from studio.core.jobs import run_job
from studio.ops.toolkit import ToolRun, run_on_toolkit
from studio.targets.local import LocalTarget


def _target(tmp_path):
    return LocalTarget(work_root=str(tmp_path / "work"))


def test_round_trip_puts_runs_in_the_work_folder_and_fetches(tmp_path):
    data = bytes(range(256)) * 300
    (tmp_path / "in.bin").write_bytes(data)
    run = ToolRun("sha", lambda work: ["sh", "-c", f"sha256sum {work}/in.bin | cut -c1-64 > out.txt; echo done"],
                  work="tool", uploads=[(tmp_path / "in.bin", "in.bin")],
                  outputs=[("out.txt", tmp_path / "back" / "out.txt")], log="tool.log")
    done = run_job(run_on_toolkit(run, _target(tmp_path)))
    # the digest the tool wrote on the target, fetched back, is the file's own (hashlib here)
    assert (tmp_path / "back" / "out.txt").read_text().strip() == hashlib.sha256(data).hexdigest()
    assert done.status == 0 and done.lines == ["done"] and done.work.endswith("/tool")
    assert (tmp_path / "work" / "tool" / "tool.log").read_text() == "done\n"


def test_a_failure_says_the_exit_code_the_output_and_where_the_log_is(tmp_path):
    run = ToolRun("frob", ["sh", "-c", "echo E10001 bad input shape; exit 3"], work="frob", log="frob.log")
    with pytest.raises(UserError) as err:
        run_job(run_on_toolkit(run, _target(tmp_path)))
    text = str(err.value)
    assert "frob failed on this computer with exit code 3" in text and "E10001 bad input shape" in text
    assert "/frob/frob.log" in text
    accepted = ToolRun("frob", ["sh", "-c", "exit 3"], work="frob", accept=(0, 3))
    assert run_job(run_on_toolkit(accepted, _target(tmp_path))).status == 3


def test_a_missing_program_says_how_to_get_it(tmp_path):
    run = ToolRun("nosuchtool", ["sh", "-c", "nosuchtool-xyz --help"], work="x", missing_fix="Install it.")
    with pytest.raises(UserError) as err:
        run_job(run_on_toolkit(run, _target(tmp_path)))
    assert "nosuchtool was not found on this computer" in str(err.value) and "Install it." in str(err.value)


def test_before_runs_first_in_the_work_folder(tmp_path):
    run = ToolRun("cat", ["cat", "made.txt"], work="b", before="echo made > made.txt")
    done = run_job(run_on_toolkit(run, _target(tmp_path)))
    assert done.lines == ["made"] and done.argv == ["cat", "made.txt"]


def test_shown_is_the_command_progress_names_the_argv_still_runs(tmp_path):
    run = ToolRun("echo", ["echo", "a b"], work="s", shown="cd /app && echo 'a b'")
    steps: list[str] = []
    done = run_job(run_on_toolkit(run, _target(tmp_path)), on_progress=lambda p: steps.append(p.message))
    assert "$ cd /app && echo 'a b'" in steps and "$ echo 'a b'" not in steps
    assert done.lines == ["a b"] and done.command == "echo 'a b'"  # the outcome names what ran


def test_list_files_lists_files_or_folders_relative_and_sorted(tmp_path):
    from studio.ops.toolkit import list_files

    root = tmp_path / "tree"
    for name in ("b/z.bin", "a/y.bin", "a/deep/x.bin", "top.txt"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(b"1")
    # the expected lists come from the file system here (pathlib), not from find
    files = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    assert list_files(_target(tmp_path), str(root)) == files
    assert list_files(_target(tmp_path), str(root), depth=1, kind="d") == sorted(
        p.name for p in root.iterdir() if p.is_dir())
    with pytest.raises(UserError) as err:
        list_files(_target(tmp_path), str(tmp_path / "absent"))
    assert "Cannot list" in str(err.value) and "absent" in str(err.value)
