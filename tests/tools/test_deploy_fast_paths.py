"""The short cuts that make many small files (and one big one) move fast keep every safety check.

A download batch lands each file relative to its folder's open descriptor and checks the root by
its remembered identity; an upload to a folder the host does not have yet skips the listing
command. Each test here pins one of those mechanisms down against the real sshd.
"""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import pytest
from deploy_helpers import actions, apply, make_deployment, plan, read_tree, write_tree
from test_deploy_sync import cut_connection  # noqa: F401  (a fixture: drop every connection mid-transfer)

from studio.targets.transfer import download, safe_paths


def _small(folder: str, count: int = 12) -> dict[str, bytes]:
    return {f"{folder}/f{i:02}.txt": f"{folder} {i}\n".encode() for i in range(count)}


def _after_first_landing(monkeypatch, act) -> None:
    """Run ``act()`` once, right after the first file of a download batch landed (landings in a row)."""
    real, lock, done = download.Downloader._land_small, threading.Lock(), []

    def land(self, *args, **kwargs):
        with lock:
            value = real(self, *args, **kwargs)
            if not done:
                done.append(True)
                act()
            return value

    monkeypatch.setattr(download.Downloader, "_land_small", land)


def test_a_local_folder_swapped_for_a_symlink_during_a_download_batch_is_not_written_through(
        sshd_host, tmp_path, monkeypatch):
    deployment = make_deployment(tmp_path)
    files = _small("sub")
    write_tree(tmp_path / "remote", files)
    (deployment.local_root / "sub").mkdir()
    the_plan = plan(deployment, "download", sshd_host)
    assert set(actions(the_plan).values()) == {"download"}
    outside, aside = tmp_path / "outside", tmp_path / "aside"
    outside.mkdir()

    def swap() -> None:  # the folder the batch is writing into becomes a symlink to another place
        os.rename(deployment.local_root / "sub", aside)
        (deployment.local_root / "sub").symlink_to(outside)

    _after_first_landing(monkeypatch, swap)
    result = apply(deployment, the_plan, sshd_host)
    assert list(outside.iterdir()) == [], "a file was written through the symlink"
    assert result.downloaded + len(result.failed) + len(result.refused) == len(files), result.summary()


def test_a_local_root_swapped_during_a_download_batch_stops_the_rest(sshd_host, tmp_path, monkeypatch):
    deployment = make_deployment(tmp_path)
    files = _small("sub") | _small("other")
    write_tree(tmp_path / "remote", files)
    the_plan = plan(deployment, "download", sshd_host)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    def swap() -> None:
        os.rename(deployment.local_root, tmp_path / "old_root")
        deployment.local_root.symlink_to(elsewhere)

    _after_first_landing(monkeypatch, swap)
    result = apply(deployment, the_plan, sshd_host)
    assert list(elsewhere.iterdir()) == []
    assert result.downloaded == 1 and not result.ok
    refused = dict(result.refused)
    assert len(refused) == len(files) - 1 and all("root" in why for why in refused.values()), result.summary()


def test_the_root_check_of_a_download_batch_does_not_resolve_the_path_per_file(sshd_host, tmp_path, monkeypatch):
    deployment = make_deployment(tmp_path)
    files = _small("a", 40) | _small("b", 40)
    write_tree(tmp_path / "remote", files)
    the_plan = plan(deployment, "download", sshd_host)
    calls = []
    real = os.path.realpath

    def counted(path, *args, **kwargs):
        if Path(path) == deployment.local_root:
            calls.append(path)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(safe_paths.os.path, "realpath", counted)
    result = apply(deployment, the_plan, sshd_host)
    assert result.ok and result.downloaded == len(files), result.summary()
    assert read_tree(deployment.local_root) == files
    assert len(calls) <= 10, f"the root's path was resolved {len(calls)} times for {len(files)} files"


def test_the_root_guard_sees_a_swap_and_a_folder_made_anew(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    guard = safe_paths.LocalRootGuard(root, os.path.realpath(root))
    assert guard.problem() is None and guard.problem() is None
    shutil.rmtree(root)
    root.mkdir()  # the same path, another folder: the full check decides again (and passes)
    assert guard.problem() is None
    os.rename(root, tmp_path / "moved")
    (tmp_path / "other").mkdir()
    root.symlink_to(tmp_path / "other")
    assert "not" in guard.problem()
    root.unlink()
    assert guard.problem() is not None  # gone


def _exec_commands(monkeypatch) -> list[bytes]:
    """Every command run on the host from now on (each one pays the login shell's start-up)."""
    import paramiko

    commands, real = [], paramiko.Channel.exec_command

    def record(self, command):
        commands.append(command if isinstance(command, bytes) else command.encode())
        return real(self, command)

    monkeypatch.setattr(paramiko.Channel, "exec_command", record)
    return commands


@pytest.mark.parametrize("kind", ["tar batch", "sftp"])
def test_an_upload_to_a_folder_the_host_lacks_starts_no_listing_command(sshd_host, tmp_path, monkeypatch, kind):
    from deploy_helpers import connector_for

    from studio.core.jobs import run_job
    from studio.tools.deploy.sync import run_job as sync_job

    deployment = make_deployment(tmp_path)
    files = _small("sub") if kind == "tar batch" else {"a.bin": os.urandom(400 * 1024), "d/b.bin": os.urandom(300 * 1024)}
    write_tree(deployment.local_root, files)
    commands = _exec_commands(monkeypatch)
    _plan, result = run_job(sync_job(deployment, "upload", connector_for(sshd_host)))
    assert result.ok and result.uploaded == len(files), result.summary()
    assert read_tree(tmp_path / "remote") == files
    assert not any(b"find" in c for c in commands), commands
    # the tar batch is the one command; SFTP writes the files and ONE shell standing in the root
    # makes the folders and moves them into place (entered folders, never a path: see _land)
    assert len(commands) == 1, commands
    if kind == "sftp":
        assert commands[0].endswith(b"exec sh"), commands


def test_a_remote_root_that_appears_as_a_symlink_before_an_sftp_upload_is_refused(sshd_host, tmp_path):
    deployment = make_deployment(tmp_path)
    files = {"a.bin": os.urandom(400 * 1024)}
    write_tree(deployment.local_root, files)
    the_plan = plan(deployment, "upload", sshd_host)
    assert not the_plan.remote.exists
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "remote").symlink_to(elsewhere)
    result = apply(deployment, the_plan, sshd_host)
    assert list(elsewhere.iterdir()) == []
    assert result.uploaded == 0 and [p for p, _ in result.refused] == ["a.bin"], result.summary()
    assert "appeared" in result.refused[0][1]


def _run(deployment, mode, sshd_host):
    """The CLI's way: plan and apply on one connection (its batch command starts with the listing)."""
    from deploy_helpers import connector_for

    from studio.core.jobs import run_job
    from studio.tools.deploy.sync import run_job as sync_job

    return run_job(sync_job(deployment, mode, connector_for(sshd_host)))


def test_a_download_of_big_and_small_files_rides_the_one_command_started_with_the_listing(
        sshd_host, tmp_path, monkeypatch):
    deployment = make_deployment(tmp_path)
    files = {"weights.bin": os.urandom(20_000_000), "mid/part.bin": os.urandom(600_000), "a.txt": b"a\n",
             "many/x.txt": b"x" * 10}
    write_tree(tmp_path / "remote", files)
    commands = _exec_commands(monkeypatch)
    _plan, result = _run(deployment, "download", sshd_host)
    assert result.ok and result.downloaded == len(files), result.summary()
    assert read_tree(deployment.local_root) == files
    assert not any(b"cat " in c or b"tail " in c for c in commands), commands
    assert len([c for c in commands if b"tar -c" in c]) == 1, commands
    assert os.stat(deployment.local_root / "weights.bin").st_mtime == 1_700_000_000
    assert plan(deployment, "sync", sshd_host, checksum=True).items == []  # the recorded hashes are right


def test_a_big_download_in_the_tar_stream_cut_half_way_resumes_from_its_part(sshd_host, tmp_path, monkeypatch,
                                                                            cut_connection):
    from deploy_helpers import count_reads

    from studio.core.errors import UserError
    from studio.targets.transfer.download import Downloader

    size = 64_000_000
    deployment = make_deployment(tmp_path)
    data = os.urandom(size)
    write_tree(tmp_path / "remote", {"weights.bin": data, "small.txt": b"s"})
    killed = cut_connection(0.5)
    with pytest.raises(UserError) as info:
        _run(deployment, "download", sshd_host)
    assert killed and "was lost" in info.value.what
    cut_connection(2.0)
    [part] = [p for p in deployment.local_root.iterdir() if "studio-part" in p.name]
    kept = part.stat().st_size
    assert kept > size // 4
    received = count_reads(monkeypatch, Downloader, "_land", 2)
    _plan, result = _run(deployment, "download", sshd_host)
    assert result.ok, result.summary()
    assert (deployment.local_root / "weights.bin").read_bytes() == data
    assert sorted(p.name for p in deployment.local_root.iterdir()) == ["small.txt", "weights.bin"]
    assert sum(received) <= size - kept + 1  # only the rest came (the small file lands apart from _land)
    assert plan(deployment, "sync", sshd_host, checksum=True).items == []


def test_the_tar_reader_streams_big_members_and_skips_what_is_left_unread(tmp_path):
    import subprocess

    from studio.targets.transfer.tar_read import MemberBody, TarReader

    files = {"a.txt": b"a" * 10, "big.bin": os.urandom(3_000_001), "b" * 120: b"long name", "big2.bin": os.urandom(700_001)}
    write_tree(tmp_path / "src", files)
    archive = subprocess.run(["tar", "-c", "-f", "-", "-C", str(tmp_path / "src"), *files], check=True,
                             capture_output=True).stdout

    class Source:  # hands out the archive in odd-sized pieces, like a channel
        def __init__(self):
            self.pos = 0

        def read(self, n):
            chunk = archive[self.pos: self.pos + min(n, 70_001)]
            self.pos += len(chunk)
            return chunk

    got = {}
    for member, data in TarReader(Source()).members(stream_over=100_000):
        if isinstance(data, MemberBody):
            if member.name == "big.bin":
                data.read(5)  # the rest is skipped by the reader
                continue
            got[member.name] = b"".join(iter(lambda: data.read(65_536), b""))
        else:
            got[member.name] = bytes(data)
    assert got == {name: data for name, data in files.items() if name != "big.bin"}
    cut = Source()
    archive = archive[: len(archive) // 2]
    with pytest.raises(EOFError):  # a stream cut inside a big member: the link was lost
        for member, data in TarReader(cut).members(stream_over=100_000):
            if isinstance(data, MemberBody):
                data.skip()


def test_the_download_command_starts_after_the_listing_command(sshd_host, tmp_path, monkeypatch):
    """Commands started together wait for each other's shell start-up on hosts whose start-up files
    lock something (pyenv's rehash): the listing, which everything waits for, must go first."""
    import time

    from studio.targets.transfer import scan

    deployment = make_deployment(tmp_path)
    files = {f"d{i % 30:02}/f{i:03}.txt": b"x" for i in range(300)}  # more folders than SFTP lists itself
    write_tree(tmp_path / "remote", files)
    real = scan.scan_remote_find

    def slow_to_start(*args, **kwargs):  # the listing's thread is late (a busy machine)
        time.sleep(0.3)
        return real(*args, **kwargs)

    monkeypatch.setattr(scan, "scan_remote_find", slow_to_start)
    commands = _exec_commands(monkeypatch)
    _plan, result = _run(deployment, "download", sshd_host)
    assert result.ok and read_tree(deployment.local_root) == files, result.summary()
    kinds = [b"find" if b"find ." in c else b"tar" if b"tar -c" in c else c for c in commands]
    assert kinds == [b"find", b"tar"], commands


def test_small_files_go_to_the_writer_threads_in_groups(sshd_host, tmp_path, monkeypatch):
    deployment = make_deployment(tmp_path)
    files = _small("a", 100) | _small("b", 60)
    write_tree(tmp_path / "remote", files)
    the_plan = plan(deployment, "download", sshd_host)
    real, tasks = download.Downloader._land_group, []

    def counted(self, group, *args):
        tasks.append(len(group))
        return real(self, group, *args)

    monkeypatch.setattr(download.Downloader, "_land_group", counted)
    result = apply(deployment, the_plan, sshd_host)
    assert result.ok and read_tree(deployment.local_root) == files, result.summary()
    assert sum(tasks) == len(files) and len(tasks) <= len(files) // download.GROUP + 1, tasks
