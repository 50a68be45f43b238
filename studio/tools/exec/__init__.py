"""Run commands here or on a remote host through one API (no Qt).

:class:`~studio.tools.exec.executor.Executor` has one ``run`` for a local subprocess
(:class:`~studio.tools.exec.local.LocalExecutor`) and for SSH
(:class:`~studio.tools.exec.remote.SshExecutor`); :mod:`studio.tools.exec.shell` is the
interactive shell behind the terminal panel and :mod:`studio.tools.exec.vt` its screen model.
"""
