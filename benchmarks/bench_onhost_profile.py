"""Remote profile round trip: ours against the same steps done by hand with OpenSSH, in the same run.

Both sides, on the local sshd the tests use (tests/sshd_server.py) with the tests' stand-in msprof
(tests/cann_standins: it checks its arguments and writes a PROF_ folder of ~50 MB of raw device
data plus the real msprof export files), profile one command:

- ours: ``profile_on_host`` — check the NPU (npu-smi info), make a symlink-free output folder,
  run msprof with CANN's set_env line and every switch written out, find the PROF_ folder from
  its output, list it, download it file by file over SFTP into a temporary folder and rename it;
- peer: what a user types: ``ssh host '. set_env.sh && msprof --application=... --output=DIR'``,
  ``ssh host ls DIR`` to learn the PROF_ name, ``scp -r host:DIR/PROF_x .`` (OpenSSH, one
  connection per command, as people run them).

Usage: ``python benchmarks/run.py bench_onhost_profile.py [--quick]``. Needs openssh-server/-client.
"""

from __future__ import annotations

import shlex
import sys

from bench_common import REPO, OpenSshPeer, emit, loopback_session, ours_and_peer_times

PAD_MB = 50


def main() -> int:
    quick = "--quick" in sys.argv
    runs = 3 if quick else 5
    from standins import make_standin_toolkit

    from studio.core.jobs import run_job
    from studio.remote.context import HostContext
    from studio.remote.hosts import HostEntry, HostStore
    from studio.remote.known_hosts import KnownHosts
    from studio.runs.config import RunConfig
    from studio.targets.ssh import SshTarget
    from studio.targets.transfer.fetch import folder_fetcher
    from studio.ops.msprof_host import profile_on_host

    fixtures = REPO.parent / "shared" / "fixtures" / "ascend"
    with loopback_session("studio-bench-msprof-") as started:
        if started is None:
            return 0
        root, server = started
        toolkit = make_standin_toolkit(root / "cann", fixtures if fixtures.is_dir() else None,
                                       STANDIN_MSPROF_PAD_MB=str(PAD_MB))
        entry = HostEntry(name="bench", host=server.host, port=server.port, user=server.user,
                          key_file=str(server.client_key), toolkit=str(toolkit),
                          extra={"deploy_root": str(root / "host-ours")})
        store = HostStore(root / "hosts.toml")
        store.put(entry)
        context = HostContext(store=store, known_hosts=KnownHosts(read_only=[server.known_hosts]))
        target = SshTarget(entry, context)
        config = RunConfig("app", "echo app ran", target="bench")
        counter = iter(range(1_000_000))
        sizes = []

        def ours():
            result = run_job(profile_on_host(target, config, root / "ours" / str(next(counter)),
                                             fetch=folder_fetcher(target)))
            sizes.append(result.bytes)

        openssh = OpenSshPeer(server, root, timeout=120)

        def peer():
            work, local = openssh.fresh()
            msprof = shlex.join(["msprof", "--application=echo app ran", f"--output={work}", "--ascendcl=on",
                                 "--runtime-api=on", "--aicpu=on", "--msproftx=on"])
            openssh.ssh(f". {shlex.quote(str(toolkit / 'set_env.sh'))} && {msprof}")
            name = openssh.ssh(f"ls {shlex.quote(work)}").stdout.decode().split()[0]
            openssh.scp("-r", f"bench:{work}/{name}", str(local))

        ours_s, peer_s = ours_and_peer_times(ours, peer, runs)
        emit(f"remote msprof round trip ({sizes[-1] / 2**20:.0f} MiB PROF_ folder, stand-in msprof)", "s",
             ours_s, peer_s, "OpenSSH by hand: ssh msprof + ssh ls + scp -r",
             "no slower than the peer (ours also checks the NPU, resolves paths, renames atomically)")
        target.close()
        context.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
