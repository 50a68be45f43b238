"""Exclude patterns (gitignore syntax), path safety and the plan's decisions — no server needed."""

from __future__ import annotations

import pytest

from studio.core.errors import UserError
from studio.targets.transfer.ignore import Excludes
from studio.tools.deploy.plan import make_plan
from studio.targets.transfer.safe_paths import check_relative, link_points_inside, user_relative
from studio.targets.transfer.scan import FileInfo, Scan, parse_find_output
from studio.tools.deploy.state import Synced


@pytest.mark.parametrize("pattern, path, is_dir, expected", [
    ("*.om", "model.om", False, True),
    ("*.om", "deep/er/model.om", False, True),
    ("*.om", "model.onnx", False, False),
    ("build/", "build", True, True),
    ("build/", "build", False, False),           # folder-only pattern, a file named build stays
    ("build/", "src/build/x.o", False, True),    # inside an excluded folder at any depth
    ("/out", "out/a.txt", False, True),
    ("/out", "src/out/a.txt", False, False),     # anchored to the root
    ("doc/*.md", "doc/a.md", False, True),
    ("doc/*.md", "doc/sub/a.md", False, False),  # * does not cross /
    ("**/logs", "a/b/logs/x", False, True),
    ("a/**/b", "a/b", True, True),
    ("a/**/b", "a/x/y/b", True, True),
    ("data/**", "data/x/y.bin", False, True),
    ("file?.txt", "file1.txt", False, True),
    ("[ab].txt", "b.txt", False, True),
    ("[!ab].txt", "b.txt", False, False),
    ("\\#hash", "#hash", False, True),
])
def test_gitignore_patterns(pattern, path, is_dir, expected):
    assert Excludes([pattern]).excluded(path, is_dir) is expected


def test_negation_and_comments():
    ex = Excludes(["# a comment", "*.log", "!keep.log", ""])
    assert ex.excluded("x.log") and not ex.excluded("keep.log") and not ex.excluded("# a comment")
    ex = Excludes(["logs/", "!logs/keep.log"])
    assert ex.excluded("logs/keep.log")  # as in git: a file inside an excluded folder cannot come back


def test_only_temporary_names_of_our_own_runs_are_leftovers():
    from studio.targets.files import new_token, temp_name
    from studio.targets.transfer.scan import is_leftover

    ex = Excludes([])
    assert not ex.excluded(".a.txt.studio-part-1234abcd") and not ex.excluded(".studio-staging-1a2b/x", False)
    token = new_token()
    assert is_leftover(temp_name("dir/a.txt", token), {token}) and is_leftover(f".studio-staging-{token}", {token})
    assert not is_leftover(temp_name("dir/a.txt", token), {new_token()})  # another deployment's run
    assert not is_leftover(temp_name("dir/a.txt", token))  # no run of ours left anything
    assert not is_leftover(f"sub/.studio-staging-{token}", {token})  # staging folders live in the root only


@pytest.mark.parametrize("path", ["../x", "a/../../x", "/etc/passwd", "a//b", "./a", "a/.", "", "a\0b"])
def test_unsafe_relative_paths_are_refused(path):
    with pytest.raises(UserError) as info:
        check_relative(path)
    assert info.value.fix


def test_user_paths_and_links(tmp_path):
    assert user_relative("src/./a.py", tmp_path) == "src/a.py"
    assert user_relative(str(tmp_path / "a" / "b"), tmp_path) == "a/b"
    with pytest.raises(UserError):
        user_relative("../../etc/passwd", tmp_path)
    with pytest.raises(UserError):
        user_relative("/etc/passwd", tmp_path)
    assert link_points_inside("a/link", "../b") and not link_points_inside("a/link", "../../b")
    assert not link_points_inside("link", "/etc")


def test_find_output_with_unsafe_names_is_refused_not_used():
    fields = [b"f", b"ok.txt", b"3", b"1700000000.5000000010", b"1700000001.2500000000", b"644", b"",
              b"f", b"../escape", b"3", b"1700000000.0", b"1700000000.0", b"644", b"",
              b"l", b"out", b"0", b"1700000000.0", b"1700000000.0", b"777", b"/etc",
              b"f", b"new\nline", b"1", b"1.0", b"1.0", b"600", b""]
    scan = Scan("/r")
    parse_find_output(b"\0".join(fields) + b"\0", scan, Excludes([]))
    assert scan.files == {"ok.txt": FileInfo(3, 1700000000, 0o644), "new\nline": FileInfo(1, 1, 0o600)}
    assert (scan.files["ok.txt"].mtime_ns, scan.files["ok.txt"].ctime_ns) == (1700000000500000001, 1700000001250000000)
    assert "../escape" in scan.refused and scan.links == {"out": "/etc"}


def _scan(files=None, links=None, dirs=()):
    return Scan("/r", files=dict(files or {}), links=dict(links or {}), dirs=set(dirs))


A, B, C = FileInfo(10, 100), FileInfo(20, 200), FileInfo(30, 300)


def test_plan_conflicts_need_a_choice():
    base = {"f": Synced(A, A)}
    plan = make_plan("sync", _scan({"f": B}), _scan({"f": C}), base)
    assert [(i.path, i.action) for i in plan.items] == [("f", "conflict")]
    assert "both sides" in plan.items[0].reason
    plan.resolve("remote")
    assert plan.items[0].effective_action() == "download"
    # Upload never overwrites a remote change silently either.
    plan = make_plan("upload", _scan({"f": A}), _scan({"f": C}), base)
    assert plan.items[0].action == "conflict"
    # Never synced and different on both sides: a conflict too.
    assert make_plan("sync", _scan({"f": A}), _scan({"f": B}), {}).items[0].action == "conflict"


def test_plan_one_sided_changes_and_unchanged():
    base = {"up": Synced(A, A), "down": Synced(A, A), "same": Synced(A, A)}
    plan = make_plan("sync", _scan({"up": B, "down": A, "same": A, "new": C}),
                     _scan({"up": A, "down": B, "same": A}), base)
    got = {i.path: i.action for i in plan.items}
    assert got == {"up": "upload", "down": "download", "new": "upload"} and plan.unchanged == 1


def test_deletions_only_when_asked():
    base = {"gone": Synced(A, A), "extra": Synced(A, A)}
    local, remote = _scan({"extra": A}), _scan({"gone": A, "extra": A})
    plan = make_plan("upload", local, remote, base)
    assert plan.items[0].action == "skip" and "--delete" in plan.items[0].reason
    plan = make_plan("upload", local, remote, base, delete=True)
    assert [(i.path, i.action) for i in plan.items] == [("gone", "delete-remote")]
    # Listing errors switch deletions off for the run, and say so.
    remote.errors.append("x: Permission denied")
    plan = make_plan("upload", local, remote, base, delete=True)
    assert plan.items[0].action == "skip" and plan.notes


def test_a_deletion_never_takes_an_edit_made_since_the_last_sync():
    """Deleted on one side, edited on the other: --delete in either direction asks, never deletes."""
    base = {"f": Synced(A, A)}
    upload = make_plan("upload", _scan({}), _scan({"f": B}), base, delete=True)
    download = make_plan("download", _scan({"f": B}), _scan({}), base, delete=True)
    assert [(i.action, i.reason) for i in upload.items] == [("conflict", "deleted locally, changed on remote")]
    assert [(i.action, i.reason) for i in download.items] == [("conflict", "deleted on remote, changed locally")]
    # Unedited since the last sync, the deletion goes through.
    assert make_plan("download", _scan({"f": A}), _scan({}), base, delete=True).items[0].action == "delete-local"


def test_writes_through_symlinks_are_refused():
    local = _scan({"data/x.bin": A, "link": B})
    remote = _scan({}, links={"data": "/etc", "inside": "data"})
    plan = make_plan("upload", local, remote, {})
    got = {i.path: (i.action, i.reason) for i in plan.items}
    assert got["data/x.bin"][0] == "refuse" and "symlink" in got["data/x.bin"][1]
    assert got["data"][0] == "refuse" and "outside" in got["data"][1]
    assert got["inside"][0] == "skip"
    assert got["link"][0] == "upload"


def test_checksums_decide_equal_content():
    same_size = FileInfo(10, 999)
    plan = make_plan("sync", _scan({"f": A}), _scan({"f": same_size}), {},
                     local_hashes={"f": "aa"}, remote_hashes={"f": "aa"})
    assert plan.items == [] and plan.unchanged == 1 and plan.records["f"].sha256 == "aa"
    plan = make_plan("sync", _scan({"f": A}), _scan({"f": A}), {"f": Synced(A, A, "aa")},
                     local_hashes={"f": "aa"}, remote_hashes={"f": "bb"})
    assert plan.items[0].action == "download"  # same stat, but the remote content changed


def test_state_journal_survives_a_crash_and_belongs_to_its_roots(tmp_path):
    from studio.tools.deploy.state import SyncState

    identity = {"host": "h", "local": "/l", "remote": "/r"}
    state = SyncState("d", identity, tmp_path)
    state.record("a.txt", Synced(A, A, "aa"))
    state.record("b.txt", Synced(B, B))
    state.record("b.txt", None)
    state._journal.flush()  # a crash here: no save(), only the journal is on disk
    with open(state.journal_path, "a") as handle:
        handle.write('{"p": "cut.txt", "v": [1, 2')  # the line a crash cut in half
    again = SyncState("d", identity, tmp_path)
    assert again.files == {"a.txt": Synced(A, A, "aa")}
    again.save()
    assert not again.journal_path.exists() and SyncState("d", identity, tmp_path).files == again.files
    # A state recorded for other roots is never used as the base of this deployment.
    assert SyncState("d", {**identity, "remote": "/elsewhere"}, tmp_path).files == {}


def test_a_name_too_long_for_the_other_side_is_refused_per_file():
    long = "é" * 200  # 400 bytes: possible on a Mac (255 characters), not on the Linux host
    local = Scan("/l", files={f"d/{long}": FileInfo(1, 1), "ok.txt": FileInfo(1, 1)})
    plan = make_plan("upload", local, Scan("/r"), {})
    rows = {i.path: i for i in plan.items}
    assert rows["ok.txt"].action == "upload"
    assert rows[f"d/{long}"].action == "refuse" and "400 bytes" in rows[f"d/{long}"].reason
