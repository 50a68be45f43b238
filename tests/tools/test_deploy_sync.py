"""Upload, download and sync against a real OpenSSH sshd: round trips, conflicts, safety, loss, cancel."""

from __future__ import annotations

import os
import threading

import pytest
from deploy_helpers import AWKWARD, actions, apply, count_reads, make_deployment, plan, read_tree, write_tree

from studio.core.errors import Cancelled, UserError
from studio.core.jobs import CancelToken


@pytest.fixture
def cut_connection(sshd, monkeypatch):
    """``cut_connection(fraction)``: drop every SSH connection once that share of the bytes moved.

    It hooks the transfer's byte counter, so the cut lands mid-transfer however fast the machine.
    """
    from studio.targets.transfer.common import Progressor

    killed = []
    original = Progressor.add

    def arm(fraction: float):
        def add(self, nbytes, path=None, finished=False, size=None):
            original(self, nbytes, path, finished, size)
            if not killed and nbytes and self.done_bytes >= fraction * self.total_bytes:
                killed.append(self.done_bytes)
                sshd.kill_sessions()
        monkeypatch.setattr(Progressor, "add", add)
        return killed
    return arm


def test_upload_download_round_trip_of_awkward_names(sshd_host, tmp_path):
    deployment = make_deployment(tmp_path)
    write_tree(deployment.local_root, AWKWARD)
    os.chmod(deployment.local_root / "plain.txt", 0o777)
    first = plan(deployment, "upload", sshd_host)
    assert set(actions(first)) == set(AWKWARD) and set(actions(first).values()) == {"upload"}
    result = apply(deployment, first, sshd_host)
    assert result.ok and result.uploaded == len(AWKWARD)
    remote = tmp_path / "remote"
    assert read_tree(remote) == AWKWARD
    assert not list(remote.rglob("INJECTED*")) and not list(tmp_path.rglob("INJECTED*"))
    assert int((remote / "deep/a/b/c/d.bin").stat().st_mtime) == 1_700_000_000  # mtime kept
    assert (remote / "plain.txt").stat().st_mode & 0o777 == 0o755  # never group/world-writable
    again = plan(deployment, "sync", sshd_host)
    assert again.items == [] and again.unchanged == len(AWKWARD)
    # Download into an empty folder gives the same tree back.
    other = make_deployment(tmp_path / "second", name="copy")
    other.remote = str(remote)
    result = apply(other, plan(other, "download", sshd_host), sshd_host)
    assert result.ok and read_tree(other.local_root) == AWKWARD


def test_big_files_go_by_sftp_and_land_whole(sshd_host, tmp_path):
    deployment = make_deployment(tmp_path)
    data = os.urandom(3_000_000)
    write_tree(deployment.local_root, {"model.om": data, "small.txt": b"x"})
    assert apply(deployment, plan(deployment, "upload", sshd_host), sshd_host).ok
    assert (tmp_path / "remote/model.om").read_bytes() == data
    (deployment.local_root / "model.om").unlink()
    result = apply(deployment, plan(deployment, "download", sshd_host), sshd_host)
    assert result.downloaded == 1 and (deployment.local_root / "model.om").read_bytes() == data


def test_two_way_sync_and_conflicts(sshd_host, tmp_path):
    deployment = make_deployment(tmp_path)
    write_tree(deployment.local_root, {"a.txt": b"a0", "b.txt": b"b0", "c.txt": b"c0"})
    apply(deployment, plan(deployment, "upload", sshd_host), sshd_host)
    remote = tmp_path / "remote"
    write_tree(deployment.local_root, {"a.txt": b"a-local", "c.txt": b"c-local!"}, mtime=1_700_000_100)
    write_tree(remote, {"b.txt": b"b-remote", "c.txt": b"c-remote", "new.txt": b"n"}, mtime=1_700_000_200)
    sync = plan(deployment, "sync", sshd_host)
    assert actions(sync) == {"a.txt": "upload", "b.txt": "download", "c.txt": "conflict", "new.txt": "download"}
    result = apply(deployment, sync, sshd_host)
    assert result.conflicts == ["c.txt"] and not result.ok
    assert (remote / "c.txt").read_bytes() == b"c-remote"  # never silently overwritten
    assert (deployment.local_root / "c.txt").read_bytes() == b"c-local!"
    assert (remote / "a.txt").read_bytes() == b"a-local" and (deployment.local_root / "b.txt").read_bytes() == b"b-remote"
    again = plan(deployment, "sync", sshd_host)
    assert actions(again) == {"c.txt": "conflict"}
    again.resolve("local")
    assert apply(deployment, again, sshd_host).ok and (remote / "c.txt").read_bytes() == b"c-local!"
    assert plan(deployment, "sync", sshd_host).items == []


def test_excludes_and_deletions_only_when_asked(sshd_host, tmp_path):
    deployment = make_deployment(tmp_path, excludes=["*.om", "build/", "!keep.om"])
    write_tree(deployment.local_root, {"src/a.py": b"1", "x.om": b"2", "keep.om": b"3", "build/o.o": b"4",
                                       "src/build/p.o": b"5", "old.txt": b"6"})
    apply(deployment, plan(deployment, "upload", sshd_host), sshd_host)
    remote = tmp_path / "remote"
    assert sorted(read_tree(remote)) == ["keep.om", "old.txt", "src/a.py"]
    (deployment.local_root / "old.txt").unlink()
    write_tree(remote, {"remote-only.txt": b"r"})
    no_delete = plan(deployment, "upload", sshd_host)
    assert actions(no_delete) == {"old.txt": "skip", "remote-only.txt": "skip"}
    apply(deployment, no_delete, sshd_host)
    assert (remote / "old.txt").exists()
    with_delete = plan(deployment, "upload", sshd_host, delete=True)
    assert actions(with_delete) == {"old.txt": "delete-remote", "remote-only.txt": "delete-remote"}
    assert apply(deployment, with_delete, sshd_host).deleted_remote == 2
    assert sorted(read_tree(remote)) == ["keep.om", "src/a.py"]


def test_checksum_finds_same_size_same_mtime_change(sshd_host, tmp_path):
    deployment = make_deployment(tmp_path)
    write_tree(deployment.local_root, {"w.bin": b"AAAA"})
    apply(deployment, plan(deployment, "upload", sshd_host), sshd_host)
    write_tree(tmp_path / "remote", {"w.bin": b"BBBB"})  # same size, same mtime: only content differs
    assert plan(deployment, "sync", sshd_host).items == []
    checked = plan(deployment, "sync", sshd_host, checksum=True)
    assert actions(checked) == {"w.bin": "download"}


def test_path_escapes_are_refused(sshd_host, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    deployment = make_deployment(tmp_path)
    write_tree(deployment.local_root, {"data/weights.bin": b"w", "ok.txt": b"o"})
    remote = tmp_path / "remote"
    remote.mkdir()
    os.symlink(outside, remote / "data")           # a remote folder pointing out of the root
    os.symlink("/etc/passwd", remote / "pw")       # a remote file link pointing out
    the_plan = plan(deployment, "sync", sshd_host)
    got = {i.path: i for i in the_plan.items}
    assert got["data/weights.bin"].action == "refuse" and "symlink" in got["data/weights.bin"].reason
    assert got["pw"].action == "refuse" and "outside" in got["pw"].reason
    result = apply(deployment, the_plan, sshd_host)
    assert {p for p, _ in result.refused} >= {"data/weights.bin", "pw"} and not result.ok
    assert list(outside.iterdir()) == [] and (remote / "ok.txt").exists()
    # A local folder that is a symlink pointing out: downloads into it are refused.
    os.symlink(outside, deployment.local_root / "dl")
    write_tree(remote, {"dl/x.txt": b"x"})
    got = {i.path: i.action for i in plan(deployment, "download", sshd_host).items}
    assert got["dl/x.txt"] == "refuse" and got["dl"] == "refuse"


def test_connection_killed_mid_upload_leaves_no_partial_file(sshd_host, tmp_path, cut_connection):
    deployment = make_deployment(tmp_path)
    big = os.urandom(24_000_000)
    write_tree(deployment.local_root, {"big.bin": big})
    remote = tmp_path / "remote"
    write_tree(remote, {"big.bin": b"old content"})
    first = plan(deployment, "upload", sshd_host)
    first.resolve("local")
    killed = cut_connection(0.25)
    with pytest.raises(UserError) as info:
        apply(deployment, first, sshd_host)
    assert killed and "connection" in info.value.what and "again" in info.value.fix
    cut_connection(2.0)  # disarmed
    assert (remote / "big.bin").read_bytes() == b"old content"  # old or new, never partial
    again = plan(deployment, "upload", sshd_host)
    again.resolve("local")
    assert apply(deployment, again, sshd_host).ok
    assert (remote / "big.bin").read_bytes() == big
    assert sorted(p.name for p in remote.iterdir()) == ["big.bin"]  # the partial temporary file is gone


def test_cancel_stops_between_files_and_next_run_resumes(sshd_host, tmp_path, monkeypatch):
    deployment = make_deployment(tmp_path)
    files = {f"f{i:03}.bin": os.urandom(300_000) for i in range(12)}  # above the tar threshold: SFTP
    write_tree(deployment.local_root, files)
    cancel = CancelToken()
    the_plan = plan(deployment, "upload", sshd_host)
    from studio.targets.transfer.common import Progressor

    original = Progressor.add

    def add(self, nbytes, path=None, finished=False, size=None):  # the user presses Cancel at 20 %
        original(self, nbytes, path, finished, size)
        if self.done_bytes >= 0.2 * self.total_bytes:
            cancel.cancel()

    monkeypatch.setattr(Progressor, "add", add)
    with pytest.raises(Cancelled):
        apply(deployment, the_plan, sshd_host, cancel=cancel)
    monkeypatch.setattr(Progressor, "add", original)
    remote = tmp_path / "remote"
    landed = read_tree(remote)
    assert all(files[p] == data for p, data in landed.items())  # what is there is complete
    assert len(landed) < len(files)
    rest = plan(deployment, "upload", sshd_host)
    assert set(actions(rest)) == set(files) - set(landed)  # the state recorded what landed
    assert apply(deployment, rest, sshd_host).ok and read_tree(remote) == files


def test_unknown_host_in_deployment_is_a_user_error(tmp_path):
    from studio.remote.context import HostContext
    from studio.tools.deploy.sync import host_connector

    deployment = make_deployment(tmp_path)
    with pytest.raises(UserError) as info:
        host_connector(HostContext(), deployment)()
    assert "studio ssh add" in info.value.fix


def test_progress_reports_files_and_total(sshd_host, tmp_path):
    deployment = make_deployment(tmp_path)
    write_tree(deployment.local_root, {f"s/{i}.txt": b"x" * 100 for i in range(20)})
    steps = []
    apply(deployment, plan(deployment, "upload", sshd_host), sshd_host, on_progress=steps.append)
    messages = [s.message for s in steps]
    assert any("uploading 20/20 files" in m for m in messages)
    assert steps[-1].fraction == 1.0 and "20 uploaded" in steps[-1].message
    assert threading.active_count() < 20


def test_connection_killed_mid_tar_batch_changes_nothing_and_rerun_cleans_up(sshd_host, tmp_path, cut_connection):
    deployment = make_deployment(tmp_path)
    files = {f"d{i % 7}/f{i:04}.txt": os.urandom(20_000) for i in range(600)}  # ~12 MB: a few seconds of stream
    write_tree(deployment.local_root, files)
    remote = tmp_path / "remote"
    write_tree(remote, {"d0/f0000.txt": b"old"})
    first = plan(deployment, "upload", sshd_host)
    first.resolve("local")
    killed = cut_connection(0.05)
    with pytest.raises(UserError):
        apply(deployment, first, sshd_host)
    assert killed
    cut_connection(2.0)
    assert (remote / "d0/f0000.txt").read_bytes() == b"old"  # nothing was moved into place
    assert sorted(p.name for p in remote.iterdir() if not p.name.startswith(".")) == ["d0"]
    again = plan(deployment, "upload", sshd_host)
    again.resolve("local")
    assert apply(deployment, again, sshd_host).ok
    assert read_tree(remote) == files  # complete, and the staging folder of the cut run is gone


def test_connection_killed_mid_download_keeps_the_old_local_file(sshd_host, tmp_path, cut_connection):
    deployment = make_deployment(tmp_path)
    big = os.urandom(24_000_000)
    write_tree(tmp_path / "remote", {"weights.bin": big})
    write_tree(deployment.local_root, {"weights.bin": b"old local"})
    first = plan(deployment, "download", sshd_host)
    first.resolve("remote")
    killed = cut_connection(0.25)
    with pytest.raises(UserError) as info:
        apply(deployment, first, sshd_host)
    assert killed and "again" in info.value.fix
    cut_connection(2.0)
    others = [p.name for p in deployment.local_root.iterdir() if p.name != "weights.bin"]
    assert all(".studio-part-" in name for name in others)  # at most the partial copy, kept for the next run
    assert (deployment.local_root / "weights.bin").read_bytes() == b"old local"
    again = plan(deployment, "download", sshd_host)
    again.resolve("remote")
    assert apply(deployment, again, sshd_host).ok
    assert (deployment.local_root / "weights.bin").read_bytes() == big
    assert sorted(p.name for p in deployment.local_root.iterdir()) == ["weights.bin"]  # no temporary file left


def test_sftp_walk_and_find_list_the_same_tree(sshd_host, tmp_path):
    from deploy_helpers import connector_for

    from studio.targets.files import new_token, temp_name
    from studio.targets.transfer.ignore import Excludes
    from studio.targets.transfer.scan import scan_remote_find, scan_remote_sftp

    remote = tmp_path / "remote"
    token = new_token()
    ours = temp_name("x.bin", token)
    write_tree(remote, {**AWKWARD, ours: b"left", ".y.bin.studio-part-1a2b3c4d": b"a user's", "skip/me.om": b"x"})
    os.symlink("plain.txt", remote / "inside-link")
    os.symlink("/etc", remote / "outside-link")
    excludes = Excludes(["*.om"])
    with connector_for(sshd_host)() as conn:
        by_sftp = scan_remote_sftp(conn, str(remote), excludes, owned=frozenset({token}))
        by_find = scan_remote_find(conn, str(remote), excludes, frozenset({token}))
        assert by_sftp is not None and by_sftp.root == by_find.root
        for field in ("files", "links", "dirs", "leftovers", "refused"):
            assert getattr(by_sftp, field) == getattr(by_find, field), field
        assert set(by_find.files) == set(AWKWARD) | {".y.bin.studio-part-1a2b3c4d"} and by_find.leftovers == [ours]
        assert scan_remote_sftp(conn, str(remote), excludes, max_dirs=2) is None  # too big: `find` answers
        assert scan_remote_sftp(conn, str(tmp_path / "missing"), excludes).exists is False



@pytest.mark.parametrize("part", ["intact", "tampered"])
def test_a_big_upload_cut_half_way_resumes_from_the_checked_prefix(private_sshd, tmp_path, monkeypatch, part):
    from studio.core.jobs import run_job
    from studio.remote.connection import connect
    from studio.remote.hosts import HostEntry
    from studio.remote.known_hosts import KnownHosts
    from studio.tools.deploy.sync import apply_job, plan_job
    from studio.targets.transfer.common import Progressor

    server = private_sshd
    entry = HostEntry(name="testhost", host=server.host, port=server.port, user=server.user,
                      key_file=str(server.client_key))
    known = KnownHosts(read_only=[server.known_hosts])

    def connector():
        return connect(entry, known)

    size = 96_000_000
    deployment = make_deployment(tmp_path)
    data = os.urandom(size)
    write_tree(deployment.local_root, {"weights.bin": data, "small.txt": b"s"})
    original, cut = Progressor.add, []

    def add(self, nbytes, path=None, finished=False, size=None):
        original(self, nbytes, path, finished, size)
        if not cut and nbytes and self.done_bytes >= 0.6 * self.total_bytes:
            cut.append(self.done_bytes)
            server.kill_sessions()
    monkeypatch.setattr(Progressor, "add", add)
    with pytest.raises(UserError):
        run_job(apply_job(deployment, run_job(plan_job(deployment, "upload", connector)), connector))
    monkeypatch.setattr(Progressor, "add", original)
    remote = tmp_path / "remote"
    parts = [p for p in remote.iterdir() if "studio-part" in p.name]
    assert cut and len(parts) == 1 and parts[0].stat().st_size > size // 3  # the cut left a partial file
    kept = parts[0].stat().st_size
    if part == "tampered":  # its first bytes are not the local file's: all of it is sent again
        with open(parts[0], "r+b") as handle:
            handle.write(b"\0" * 16)
    import studio.targets.transfer.upload as upload

    sent = count_reads(monkeypatch, upload, "sftp_write_atomic", 1)  # the bytes that go to the host
    result = run_job(apply_job(deployment, run_job(plan_job(deployment, "upload", connector)), connector))
    assert result.ok and (remote / "weights.bin").read_bytes() == data
    assert sorted(p.name for p in remote.iterdir()) == ["small.txt", "weights.bin"]  # no partial file left
    received = sum(sent)
    if part == "intact":
        assert received == size - kept  # only the rest went over the wire
    else:
        assert received == size
    again = run_job(plan_job(deployment, "sync", connector, checksum=True))
    assert again.items == []  # the recorded state (sizes, times, hash) matches both sides


def test_downloading_many_small_files_costs_no_more_than_uploading_them(sshd_host, tmp_path):
    """The job's own work per small file (CPU time of its thread: parsing, hashing, bookkeeping) is
    what bounds a download of many of them; it must stay close to the upload's (wall time here
    depends on the disk and on whatever else the machine runs, this does not). CPU time still
    moves some 10 % between runs on a busy machine (a CI run saw 1.77x once), so the pair is
    measured again, up to three times, before a ratio over the bound fails: a real regression
    (11-15x before) fails every time."""
    import time

    files = {f"d{i % 30:02}/f{i:05}.bin": os.urandom(4096) for i in range(5000)}
    measured = []
    for attempt in range(3):
        deployment = make_deployment(tmp_path / f"up{attempt}", name=f"up{attempt}")
        write_tree(deployment.local_root, files)
        the_plan = plan(deployment, "upload", sshd_host)
        start = time.thread_time()
        assert apply(deployment, the_plan, sshd_host).ok
        upload = time.thread_time() - start
        copy = make_deployment(tmp_path / f"copy{attempt}", name=f"copy{attempt}")
        copy.remote = deployment.remote
        the_plan = plan(copy, "download", sshd_host)
        start = time.thread_time()
        assert apply(copy, the_plan, sshd_host).ok
        download = time.thread_time() - start
        assert read_tree(copy.local_root) == files
        measured.append((download, upload))
        if download <= 1.75 * upload:
            break
    assert download <= 1.75 * upload, measured  # before: 11-15x (tarfile, per-file path work)


@pytest.mark.parametrize("part", ["intact", "tampered"])
def test_a_big_download_cut_half_way_resumes_from_the_checked_prefix(sshd_host, tmp_path, monkeypatch, cut_connection,
                                                                      part):
    from studio.targets.transfer.download import Downloader

    size = 96_000_000
    deployment = make_deployment(tmp_path)
    data = os.urandom(size)
    write_tree(tmp_path / "remote", {"weights.bin": data})
    killed = cut_connection(0.6)
    with pytest.raises(UserError) as info:
        apply(deployment, plan(deployment, "download", sshd_host), sshd_host)
    assert killed and "was lost" in info.value.what
    cut_connection(2.0)
    [kept_part] = [p for p in deployment.local_root.iterdir() if "studio-part" in p.name]  # kept for the next run
    kept = kept_part.stat().st_size
    assert kept > size // 3
    if part == "tampered":  # not the host's first bytes: the whole file comes again
        with open(kept_part, "r+b") as handle:
            handle.write(b"\0" * 16)
    received = count_reads(monkeypatch, Downloader, "_land", 2)  # the bytes that come from the host
    assert apply(deployment, plan(deployment, "download", sshd_host), sshd_host).ok
    assert (deployment.local_root / "weights.bin").read_bytes() == data
    assert [p.name for p in deployment.local_root.iterdir()] == ["weights.bin"]
    assert sum(received) == (size - kept if part == "intact" else size)
    assert plan(deployment, "sync", sshd_host, checksum=True).items == []  # the recorded hash is the whole file's
