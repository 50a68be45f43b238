"""Studio's engine on a host: the profile round trip against the same steps by hand, in the same run.

On the local sshd the tests use (tests/sshd_server.py), with the engine venv made once before
timing (the bootstrap itself is printed, not compared):

- ours: ``studio profile run MODEL --host bench -o DIR`` (a fresh process: checks the engine,
  uploads the model, runs the profile there, fetches the folder atomically, rewrites paths);
- peer: what a user types with the same venv: ``scp MODEL host:``, ``ssh host VENV/bin/python -m
  studio profile run ...``, ``scp -r host:DIR .`` (OpenSSH, one connection per command).

A second row: the reuse check of an existing engine (one probe) against one ``true`` over the
same open connection (goal: about one SSH round trip).

Usage: ``python benchmarks/run.py bench_engine_host.py [--quick]``. Needs openssh-server/-client and a
package index for the one bootstrap.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time

from bench_common import REPO, OpenSshPeer, emit, loopback_session, median_time, ours_and_peer_times


def main() -> int:
    quick = "--quick" in sys.argv
    runs = 3 if quick else 5
    import onnx
    from standins import write_host

    from studio.core.jobs import run_job
    from studio.remote.hosts import HostEntry
    from studio.remote.known_hosts import KnownHosts
    from studio.runs.engine_env import ensure_engine
    from studio.runs.engine_wheel import build_wheel
    from studio.targets.ssh import SshTarget
    from studio.tools.demo.models import build_unet

    with loopback_session("studio-bench-engine-") as started:
        if started is None:
            return 0
        root, server = started
        engines = root / "engines"
        home = root / "home"
        write_host(home, server, name="bench", engine_root=str(engines))
        model = root / "unet.onnx"
        onnx.save(build_unet(), str(model))
        entry = HostEntry(name="bench", host=server.host, port=server.port, user=server.user,
                          key_file=str(server.client_key), extra={"engine_root": str(engines)})
        target = SshTarget(entry, KnownHosts(read_only=[server.known_hosts]))
        wheel = build_wheel(root / "wheels")
        start = time.perf_counter()
        env = run_job(ensure_engine(target, wheel=wheel))
        print(f"bootstrap (venv + pip install from the index): {time.perf_counter() - start:.1f} s",
              file=sys.stderr)

        reuse_s = median_time(lambda: run_job(ensure_engine(target, wheel=wheel)), runs)
        true_s = median_time(lambda: target.run_script("true"), runs)
        emit("engine reuse check (open connection)", "s", reuse_s, true_s, "one `true` over the same connection",
             "about one SSH round trip (one python start-up there)")

        counter = iter(range(1_000_000))
        cli_env = {**os.environ, "STUDIO_HOME": str(home), "PYTHONPATH": str(REPO)}
        args = ["--iterations", "10", "--warmup", "2"]

        def ours():
            out = root / "ours" / str(next(counter))
            subprocess.run([sys.executable, "-m", "studio", "profile", "run", str(model), "--host", "bench", "-o",
                            str(out), *args], check=True, capture_output=True, env=cli_env, timeout=300)

        openssh = OpenSshPeer(server, root, timeout=300)

        def peer():
            work, local = openssh.fresh()
            openssh.ssh(f"mkdir -p {shlex.quote(work)}")
            openssh.scp(str(model), f"bench:{work}/unet.onnx")
            command = shlex.join([env.python, "-m", "studio", "profile", "run", "unet.onnx", "-o", "prof", *args])
            openssh.ssh(f"cd {shlex.quote(work)} && STUDIO_HOME={shlex.quote(env.folder + '/home')} {command}")
            openssh.scp("-r", f"bench:{work}/prof", str(local))

        ours_s, peer_s = ours_and_peer_times(ours, peer, runs)
        emit("engine profile round trip (U-Net, env reused)", "s", ours_s, peer_s,
             "OpenSSH by hand: scp model + ssh studio profile run + scp -r",
             "no slower than the peer (ours also checks the engine, a new CLI process each time)")
        target.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
