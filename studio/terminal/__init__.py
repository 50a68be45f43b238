"""Terminal emulation behind the terminal panel (no Qt).

:class:`studio.terminal.shell.ShellSession` runs an interactive shell — over SSH (a pty channel on
a connection from :class:`~studio.remote.context.HostContext`) or on this computer
(:class:`studio.terminal.local_pty.LocalShell`) — and parses its output with
:class:`studio.terminal.vt.Terminal` (pyte) off the GUI thread.
"""
