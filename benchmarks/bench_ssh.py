"""SSH remote commands and terminal parsing, against the real tools in the same run.

1. A small remote command (``true``) through our Target on an open connection, and with a fresh
   connection each time, against OpenSSH's ``ssh host true`` (a new process and connection each
   time), on the same local sshd (the one the tests use, tests/sshd_server.py).
2. A job's start-up on the host's pooled connection (``HostContext``) against a fresh connection.
3. Terminal parse throughput in lines/s: our screen model (pyte plus jump scroll) against pyte's
   plain ``Screen`` fed the same bytes, for a plain flood and for coloured lines, and against
   ``cat`` moving the same bytes through a pipe (the floor: no parsing at all).

Usage: ``python benchmarks/run.py bench_ssh.py [--quick]``. Needs openssh-server and openssh-client.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


from bench_common import emit, loopback_session, median_time, peer_ssh_config


def bench_latency(runs: int) -> None:
    from studio.core.jobs import run_job
    from studio.remote.hosts import HostEntry
    from studio.remote.known_hosts import KnownHosts
    from studio.targets.ssh import SshTarget

    with loopback_session("studio-bench-ssh-", ("ssh",),
                          "the remote-command latency figures (a loopback sshd; OpenSSH's ssh is the peer)") as started:
        if started is None:
            return
        root, server = started
        entry = HostEntry(name="bench", host=server.host, port=server.port, user=server.user,
                          key_file=str(server.client_key))
        known = KnownHosts(read_only=[server.known_hosts], own=root / "own_known_hosts")
        config = peer_ssh_config(server, root / "ssh_config")
        openssh = ["ssh", "-F", str(config), "bench", "true"]
        subprocess.run(openssh, check=True, capture_output=True, timeout=30)  # warm up, and check it works

        def peer():
            subprocess.run(openssh, check=True, capture_output=True, timeout=30)

        with SshTarget(entry, known) as executor:
            run_job(executor.run(["true"]))

            def ours_open():
                assert run_job(executor.run(["true"])) == 0

            open_s = median_time(ours_open, runs)

        def ours_fresh():
            with SshTarget(entry, known) as fresh:
                assert run_job(fresh.run(["true"])) == 0

        fresh_s = median_time(ours_fresh, runs)
        peer_s = median_time(peer, runs)
        emit("ssh: `true` on an open connection", "s", open_s, peer_s, "OpenSSH `ssh host true`",
             "well under the peer (no process, no handshake per command)")
        emit("ssh: connect + `true`", "s", fresh_s, peer_s, "OpenSSH `ssh host true`", "no slower than the peer")


def bench_pool(runs: int) -> None:
    """A job's start-up through the HostContext: on the host's pooled connection against a fresh one.

    The job is what a panel or a CLI step does first on a host: get a target and run a command
    there (``true``), and a no-op deploy status of a small project (connect, list both sides, plan).
    """
    from studio.core.jobs import run_job
    from studio.remote.context import HostContext
    from studio.remote.hosts import HostEntry, HostStore
    from studio.remote.known_hosts import KnownHosts
    from studio.targets import target_for
    from studio.tools.deploy.deployments import Deployment
    from studio.tools.deploy.sync import host_connector, run_job as sync_job, status_job

    with loopback_session("studio-bench-pool-", (), "the pooled-connection figures (they need a loopback sshd)") \
            as started:
        if started is None:
            return
        root, server = started
        store = HostStore(root / "hosts.toml")
        store.put(HostEntry(name="bench", host=server.host, port=server.port, user=server.user,
                            key_file=str(server.client_key)))
        known = KnownHosts(read_only=[server.known_hosts], own=root / "own_known_hosts")
        local = root / "project"
        for i in range(50):
            (local / f"d{i % 5}").mkdir(parents=True, exist_ok=True)
            (local / f"d{i % 5}" / f"f{i}.py").write_text(f"x = {i}\n")
        deployment = Deployment("bench", "bench", str(local), str(root / "remote"))
        pooled = HostContext(store=store, known_hosts=known)
        run_job(sync_job(deployment, "upload", host_connector(pooled, deployment)))

        def command(context) -> None:
            assert run_job(target_for(context, "bench").run(["true"])) == 0

        def status(context) -> None:
            run_job(status_job(deployment, host_connector(context, deployment)))

        for name, job in (("`true`", command), ("deploy status (50 files)", status)):
            job(pooled)  # the pool holds the login from here on

            def fresh(job=job) -> None:
                with HostContext(store=store, known_hosts=known) as context:
                    job(context)

            emit(f"job start-up on a pooled connection: {name}", "s", median_time(lambda job=job: job(pooled), runs),
                 median_time(fresh, runs), "the same job on a fresh connection", "well under the fresh one")
        pooled.close()


def _feed_rate(make_feed, data: bytes, lines: int, runs: int) -> float:
    def once():
        feed = make_feed()
        for i in range(0, len(data), 32768):  # the chunk size the terminal session reads
            feed(data[i:i + 32768])

    return lines / median_time(once, runs)


def bench_parse(lines: int, runs: int) -> None:
    import pyte

    from studio.terminal.vt import Terminal

    def ours():
        return Terminal(120, 40).feed

    def plain_pyte():
        return pyte.ByteStream(pyte.Screen(120, 40)).feed

    plain = b"".join(b"build step %07d: compiling module/file_%d.cc\r\n" % (i, i % 97) for i in range(lines))
    coloured = b"".join(b"\x1b[1;32m[%5d/%5d]\x1b[0m \x1b[34mCXX\x1b[0m src/op_%d.cc \x1b[33mwarning\x1b[0m\r\n"
                        % (i, lines, i % 101) for i in range(lines // 4))
    plain_ours = _feed_rate(ours, plain, lines, runs)
    emit("terminal: plain flood", "lines/s", plain_ours, _feed_rate(plain_pyte, plain, lines, runs),
         "pyte Screen (same bytes)", "at least 5x the peer")
    emit("terminal: coloured lines", "lines/s", _feed_rate(ours, coloured, lines // 4, runs),
         _feed_rate(plain_pyte, coloured, lines // 4, runs), "pyte Screen (same bytes)", "no slower than the peer")
    with tempfile.NamedTemporaryFile(suffix=".txt") as handle:
        handle.write(plain)
        handle.flush()
        cat_s = median_time(lambda: subprocess.run(["cat", handle.name], stdout=subprocess.PIPE, check=True), runs)
    emit("terminal: plain flood vs no parsing", "lines/s", plain_ours, lines / cat_s, "`cat` through a pipe",
         "the floor: how far parsing is from moving bytes")


def main() -> int:
    quick = "--quick" in sys.argv
    bench_latency(runs=5 if quick else 15)
    bench_pool(runs=5 if quick else 15)
    bench_parse(lines=50_000 if quick else 300_000, runs=1 if quick else 3)
    return 0


if __name__ == "__main__":
    sys.exit(main())
