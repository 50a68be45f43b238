"""Remote ATC round trip: ours against the same steps done by hand with OpenSSH, in the same run.

Both sides, on the local sshd the tests use (tests/sshd_server.py) with the tests' stand-in atc
(tests/tools/convert_remote_helpers.py: it checks its arguments and copies a real .om), convert
the demo U-Net (~8 MB ONNX):

- ours: ``run_atc`` on an SSH target — connect, check the toolkit, make and resolve the work folder, upload
  atomically, run ``atc`` with CANN's set_env line, stream its output, keep atc.log, download the .om
  atomically;
- peer: what a user types: ``ssh host mkdir -p DIR``, ``scp model host:DIR/``,
  ``ssh host '. set_env.sh && cd DIR && atc ...'``, ``scp host:DIR/net.om .`` (OpenSSH, one
  connection per command, as people run them).

The stand-in atc takes no time, so this measures the transport and bookkeeping around a real ATC
run (which itself takes tens of seconds to minutes on the host).

Usage: ``python benchmarks/run.py bench_convert_remote.py [--quick]``. Needs openssh-server/-client.
"""

from __future__ import annotations

import shlex
import sys

from bench_common import REPO, OpenSshPeer, emit, loopback_session, ours_and_peer_times


def main() -> int:
    quick = "--quick" in sys.argv
    runs = 3 if quick else 7
    from convert_remote_helpers import make_toolkit

    import onnx

    from studio.core.jobs import run_job
    from studio.targets.ssh import SshTarget
    from studio.ops.atc import run_atc
    from studio.tools.convert.options import ConvertOptions
    from studio.tools.demo.models import build_unet
    from studio.remote.hosts import HostEntry
    from studio.remote.known_hosts import KnownHosts

    fixture = REPO.parent / "shared" / "fixtures" / "ascend" / "om" / "root_model.om"
    with loopback_session("studio-bench-atc-") as started:
        if started is None:
            return 0
        root, server = started
        om = fixture if fixture.is_file() else root / "fake.om"
        if not fixture.is_file():
            om.write_bytes(b"\0" * 200_000)
        toolkit = make_toolkit(root / "cann", om)
        model = root / "local" / "unet.onnx"
        model.parent.mkdir()
        onnx.save(build_unet(), model)
        entry = HostEntry(name="bench", host=server.host, port=server.port, user=server.user,
                          key_file=str(server.client_key), toolkit=str(toolkit),
                          extra={"deploy_root": str(root / "deploy-ours")})
        known = KnownHosts(read_only=[server.known_hosts], own=root / "own_known_hosts")
        out = root / "out"
        out.mkdir()

        target = SshTarget(entry, known)  # one connection for every run, as the GUI's pool keeps one

        def ours():
            options = ConvertOptions(model=model, output=out / "ours.om", soc_version="Ascend310")
            result = run_job(run_atc(options, target))
            assert result.local_om is not None and result.local_om.is_file()

        openssh = OpenSshPeer(server, root, timeout=60)

        def peer():
            work, _ = openssh.fresh("deploy-peer")
            openssh.ssh(f"mkdir -p {shlex.quote(work)}")
            openssh.scp(str(model), f"bench:{work}/")
            atc = shlex.join(["atc", f"--model={work}/unet.onnx", "--framework=5", f"--output={work}/unet",
                              "--soc_version=Ascend310"])
            openssh.ssh(f". {shlex.quote(str(toolkit / 'set_env.sh'))} && cd {shlex.quote(work)} && {atc}")
            openssh.scp(f"bench:{work}/unet.om", str(out / "peer.om"))

        ours_s, peer_s = ours_and_peer_times(ours, peer, runs)
        emit(f"remote ATC round trip ({model.stat().st_size / 1e6:.0f} MB ONNX, stand-in atc)", "s", ours_s, peer_s,
             "OpenSSH by hand: ssh mkdir + scp up + ssh atc + scp down",
             "no slower than the peer (ours also checks the toolkit, resolves paths, renames atomically)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
