"""Open an authenticated SSH connection to a host entry, with its host key verified first.

Every remote feature goes through :func:`connect`. It sets ``TCP_NODELAY`` (paramiko never does;
without it small operations are up to 20x slower), checks the host key against known_hosts
*before* any credential is sent, and authenticates with the entry's method. Secrets come from a
callback (the keyring or a prompt), never from a file.

paramiko's SFTP client must not be shared between threads, so :meth:`SshConnection.sftp`
gives each thread its own.
"""

from __future__ import annotations

import logging
import shlex
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path

from studio.core.errors import UserError
from studio.remote.hosts import HostEntry
from studio.remote.jump import check_jump_chain, jump_entry
from studio.remote.known_hosts import KnownHosts

# paramiko's transport thread logs a failed handshake with its traceback, line by line, at ERROR;
# connect() raises that failure as a UserError. With no handler anywhere, Python's last-resort
# handler would print the traceback to stderr as well: paramiko's records go to Studio's log file
# (studio.core.logs.setup_logging), never to the terminal.
logging.getLogger("paramiko").addHandler(logging.NullHandler())

# ask_secret(kind, prompt) -> the secret, or None when the user declines. kind is "password"
# or "passphrase"; prompt names the host or key file.
AskSecret = Callable[[str, str], "str | None"]

# paramiko logs a dropped link ("Socket exception: Connection reset by peer") at ERROR level; with
# no handler anywhere, Python's last-resort handler would print that raw line on stderr next to
# the one clear message Studio gives. The records still reach any handler the app configures.
logging.getLogger("paramiko").addHandler(logging.NullHandler())

DEFAULT_KEYS = ("id_ed25519", "id_ecdsa", "id_rsa")
KEEPALIVE_S = 5.0    # like OpenSSH's ServerAliveInterval 5 ...
DEAD_AFTER_S = 15.0  # ... with ServerAliveCountMax 3


class AuthFailed(UserError):
    """The server refused the credentials (a stored password or passphrase is then wrong)."""


class NotConnected(UserError):
    """No SSH session with the host came about (no route, no answer, no SSH handshake, a jump host
    that failed or refused to forward): its key and the credentials were never checked."""


# RFC 4254 5.1: the server's answer when its configuration forbids the forwarding
# (OpenSSH: AllowTcpForwarding no, DisableForwarding yes, or a PermitOpen that leaves this target out).
OPEN_ADMINISTRATIVELY_PROHIBITED = 1


def _open_socket(entry: HostEntry, timeout: float, jump: SshConnection | None) -> socket.socket:
    if jump is not None:
        return _open_through(jump, entry, timeout)
    try:
        sock = socket.create_connection((entry.host, entry.port), timeout=timeout)
    except socket.gaierror as exc:
        raise NotConnected(f"Cannot resolve host name {entry.host!r}: {exc.strerror}", entry.name,
                           "Check the spelling of --host, or use an IP address.") from exc
    except (TimeoutError, socket.timeout) as exc:
        raise NotConnected(f"No answer from {entry.address} within {timeout:.0f} s", entry.name,
                           "Check that the host is up, the port is right and no firewall blocks it.") from exc
    except OSError as exc:
        raise NotConnected(f"Cannot connect to {entry.address}: {exc.strerror or exc}", entry.name,
                           "Check that sshd runs on that host and port.") from exc
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def _open_through(jump: SshConnection, entry: HostEntry, timeout: float):
    """A channel from the jump host to ``entry`` (what ``ssh -J`` asks for: direct-tcpip)."""
    import paramiko

    via = f"The jump host {jump.entry.name} ({jump.entry.address})"
    try:
        return jump.transport.open_channel("direct-tcpip", (entry.host, entry.port), ("127.0.0.1", 0),
                                           timeout=timeout)
    except paramiko.ChannelException as exc:
        if exc.code == OPEN_ADMINISTRATIVELY_PROHIBITED:
            raise NotConnected(f"{via} refused to forward the connection to {entry.address} "
                               f"({exc.text or 'administratively prohibited'})", entry.name,
                               f"Its sshd forbids forwarding (AllowTcpForwarding no or DisableForwarding yes in "
                               f"its sshd_config, or a PermitOpen that leaves {entry.address} out): allow it there, "
                               f"or reach {entry.name} through another jump host.") from exc
        raise NotConnected(f"{via} could not reach {entry.address}: {exc.text or exc}",
                           entry.name, "Check the host name and port as seen from the jump host.") from exc
    except Exception as exc:  # SSHException, EOFError, socket errors: the jump host's link failed
        raise NotConnected(f"{via} failed to open a connection to {entry.address}: {exc}", entry.name,
                           "Check the jump host (`studio ssh test` it), then try again.") from exc


def _handshake(transport, entry: HostEntry, timeout: float):
    """Negotiate the SSH session; the key the host presented. NotConnected when there is none."""
    import paramiko

    # paramiko waits 15 s for the banner on its own thread, whatever start_client's timeout says;
    # its waits end just after ours, so a silent host is always reported by the check below.
    transport.banner_timeout = transport.handshake_timeout = timeout + 1
    try:
        transport.start_client(timeout=timeout)
    except paramiko.IncompatiblePeer as exc:
        raise NotConnected(f"{entry.address} and Studio share no SSH algorithm: {exc}", entry.name,
                           "The server's sshd_config allows only key exchanges, ciphers or host key types that "
                           "paramiko lacks (KexAlgorithms, Ciphers, HostKeyAlgorithms): add a common one.") from exc
    except (paramiko.SSHException, EOFError, OSError) as exc:
        raise NotConnected(f"{entry.address} did not complete the SSH handshake: {exc}", entry.name,
                           "Check that the port belongs to an SSH server.") from exc
    try:
        # start_client returns quietly when its timeout passes: no session, no key yet.
        return transport.get_remote_server_key()
    except paramiko.SSHException as exc:
        raise NotConnected(f"{entry.address} accepted the connection but did not complete the SSH handshake "
                           f"within {timeout:.0f} s", entry.name,
                           "Check that the port belongs to an SSH server and that the host is not overloaded.") from exc


def _load_key(path: Path, ask_secret: AskSecret | None):
    import paramiko

    try:
        try:
            return paramiko.PKey.from_path(path)
        except TypeError as exc:
            # paramiko 5 lets cryptography's "Key is password-protected" TypeError through for
            # OpenSSH-format keys instead of raising PasswordRequiredException.
            if "password" not in str(exc).lower():
                raise
            raise paramiko.PasswordRequiredException(str(exc)) from None
    except paramiko.PasswordRequiredException:
        passphrase = ask_secret("passphrase", f"Passphrase for key {path}") if ask_secret else None
        if passphrase is None:
            raise UserError("The key file is protected by a passphrase", path,
                            "Enter the passphrase when asked, or add the key to ssh-agent and use --agent.") from None
        try:
            return paramiko.PKey.from_path(path, password=passphrase.encode("utf-8"))
        except (paramiko.SSHException, ValueError) as exc:  # a wrong passphrase gives ValueError
            raise AuthFailed("The passphrase does not open the key file", path, "Enter the key's passphrase again.") from exc
    except FileNotFoundError:
        raise UserError("The key file does not exist", path, "Give the path of your private key with --key.") from None
    except (paramiko.SSHException, ValueError) as exc:
        raise UserError(f"The key file cannot be read: {exc}", path,
                        "Give a private key in OpenSSH or PEM format (not the .pub file).") from exc


def _authenticate(transport, entry: HostEntry, ask_secret: AskSecret | None) -> None:
    import paramiko

    user = entry.user or _local_user()
    try:
        if entry.auth == "password":
            password = ask_secret("password", f"Password for {user}@{entry.host}") if ask_secret else None
            if password is None:
                raise UserError(f"A password is needed for {entry.address}", entry.name,
                                "Enter it when asked (Studio keeps it only in the system keyring), or set up a key.")
            transport.auth_password(user, password)
        elif entry.auth == "agent":
            keys = paramiko.Agent().get_keys()
            if not keys:
                raise UserError("ssh-agent offers no keys", entry.name,
                                "Start ssh-agent and run `ssh-add`, or use a key file (--key).")
            for key in keys:
                try:
                    transport.auth_publickey(user, key)
                    break
                except paramiko.AuthenticationException:
                    continue
        else:
            paths = [Path(entry.key_file).expanduser()] if entry.key_file else \
                [p for p in (Path.home() / ".ssh" / n for n in DEFAULT_KEYS) if p.is_file()]
            if not paths:
                raise UserError("No key file to authenticate with", entry.name,
                                "Give one with --key FILE, or create one with ssh-keygen.")
            for path in paths:
                try:
                    transport.auth_publickey(user, _load_key(path, ask_secret))
                    break
                except paramiko.AuthenticationException:
                    continue
    except paramiko.AuthenticationException:
        pass
    except paramiko.SSHException as exc:
        raise UserError(f"Authentication with {entry.address} failed: {exc}", entry.name,
                        "Check the user name and credentials.") from exc
    if not transport.is_authenticated():
        raise AuthFailed(f"{entry.address} refused the {entry.auth} authentication of user {user!r}", entry.name,
                        "Check the user name; for keys, that the public key is in the server's "
                        "~/.ssh/authorized_keys; for passwords, that the server allows them.")


def _local_user() -> str:
    import getpass

    return getpass.getuser()


class SshConnection:
    """An authenticated SSH transport to one host, with per-thread SFTP clients."""

    def __init__(self, entry: HostEntry, transport, jump: SshConnection | None = None):
        self.entry = entry
        self.transport = transport
        self._jump = jump
        self._local = threading.local()
        self._sftp_clients: list = []
        self._lock = threading.Lock()
        self.pooled = False  # True while a HostContext hands it out (then only the context closes it)
        self.dead = False    # set when the keepalive watchdog gave up on a silent link
        self._closed = threading.Event()

    def watch(self, interval: float = KEEPALIVE_S, dead_after: float = DEAD_AFTER_S) -> None:
        """Send a keepalive every ``interval`` seconds; close the link when one is not answered
        within ``dead_after`` seconds.

        A host that stops answering (suspended, cable pulled, a NAT that forgot us) otherwise
        leaves every blocked read waiting forever: TCP alone notices nothing. Closing the
        transport makes each of them return with an error at once (reported as a lost connection).
        OpenSSH answers ``keepalive@openssh.com`` with a failure reply — any reply proves the link.
        """
        def loop() -> None:
            while not self._closed.wait(interval):
                if not self.transport.is_active():
                    return
                timer = threading.Timer(dead_after, self._give_up)
                timer.daemon = True
                timer.start()
                try:
                    self.transport.global_request("keepalive@openssh.com", wait=True)
                except Exception:  # the transport died meanwhile: nothing left to watch
                    return
                finally:
                    timer.cancel()

        threading.Thread(target=loop, name=f"ssh-keepalive-{self.entry.name}", daemon=True).start()

    def _give_up(self) -> None:
        self.dead = True
        try:
            self.transport.close()
        except Exception:  # closing a broken socket may raise; it is closed either way
            pass

    def sftp(self):
        """This thread's SFTP client (paramiko's clients deadlock when shared between threads)."""
        client = getattr(self._local, "sftp", None)
        if client is None:
            import paramiko

            client = paramiko.SFTPClient.from_transport(self.transport)
            self._local.sftp = client
            with self._lock:
                self._sftp_clients.append(client)
        return client

    def run(self, argv: list[str] | str, timeout: float | None = 60, stdin: bytes | None = None,
            started: Callable[[], None] | None = None) -> tuple[int, bytes, bytes]:
        """Run a command and wait: (exit status, stdout, stderr). A list is quoted word by word.
        ``started`` is called once the host has the command."""
        command = argv if isinstance(argv, str) else shlex.join(argv)
        channel = self.transport.open_session(timeout=timeout)
        try:
            channel.settimeout(timeout)
            channel.exec_command(command)
            if started is not None:
                started()
            if stdin is not None:
                channel.sendall(stdin)
            channel.shutdown_write()
            out, err = bytearray(), bytearray()
            while True:  # read both streams as they come: a full stderr window would stall stdout
                idle = True
                if channel.recv_ready():
                    out += channel.recv(65536)
                    idle = False
                if channel.recv_stderr_ready():
                    err += channel.recv_stderr(65536)
                    idle = False
                if idle:
                    # closed: the connection dropped (no EOF will ever come; do not spin forever)
                    if channel.exit_status_ready() and (channel.eof_received or channel.closed):
                        break
                    time.sleep(0.001)
            while channel.recv_ready():  # what arrived between the last check and EOF
                out += channel.recv(65536)
            while channel.recv_stderr_ready():
                err += channel.recv_stderr(65536)
            return channel.recv_exit_status(), bytes(out), bytes(err)
        finally:
            channel.close()

    @property
    def alive(self) -> bool:
        return self.transport.is_active()

    def close(self) -> None:
        self._closed.set()
        with self._lock:
            clients, self._sftp_clients = self._sftp_clients, []
        for client in clients:
            try:
                client.close()
            except Exception:  # closing a dead channel may raise; the transport goes next anyway
                pass
        self.transport.close()
        if self._jump is not None:
            self._jump.close()

    def __enter__(self) -> SshConnection:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _connect_jump(entry: HostEntry, known_hosts: KnownHosts, ask_secret: AskSecret | None, timeout: float,
                  resolve_host: Callable[[str], HostEntry] | None, keepalive: float, dead_after: float
                  ) -> SshConnection | None:
    """The connection to ``entry``'s jump host, or None (see :func:`~studio.remote.jump.jump_entry`).
    A chain that loops back is refused before anything is opened."""
    check_jump_chain(entry, resolve_host)
    hop = jump_entry(entry, resolve_host)
    if hop is None:
        return None
    try:
        return connect(hop, known_hosts, ask_secret, timeout, resolve_host, keepalive, dead_after)
    except UserError as exc:
        raise _at_jump(exc, hop) from None


def _at_jump(exc: UserError, hop: HostEntry) -> UserError:
    """``exc`` (same type: AuthFailed still tells the keyring to forget) marked as the jump host's,
    so nobody takes it for the target's key or login."""
    if getattr(exc, "jump_host", None) is None:
        exc.jump_host = hop.name
        exc.what = f"Jump host {hop.name}: {exc.what}"
        exc.args = (exc.format(),)
    return exc


def _transport_to(entry: HostEntry, known_hosts: KnownHosts, ask_secret: AskSecret | None, timeout: float,
                  resolve_host: Callable[[str], HostEntry] | None, keepalive: float, dead_after: float,
                  prefer_known: bool = True):
    """(the jump host's connection or None, a Transport to ``entry`` not started yet) — directly or
    through the jump hosts; the host key types known_hosts records for ``entry`` are asked for first."""
    import paramiko

    jump = _connect_jump(entry, known_hosts, ask_secret, timeout, resolve_host, keepalive, dead_after)
    try:
        sock = _open_socket(entry, timeout, jump)
    except BaseException:
        if jump is not None:
            jump.close()
        raise
    transport = paramiko.Transport(sock)
    if prefer_known:
        prefer_known_key_types(transport, known_hosts.known_types(entry.host, entry.port))
    return jump, transport


def connect(entry: HostEntry, known_hosts: KnownHosts | None = None, ask_secret: AskSecret | None = None,
            timeout: float = 10.0, resolve_host: Callable[[str], HostEntry] | None = None,
            keepalive: float = KEEPALIVE_S, dead_after: float = DEAD_AFTER_S) -> SshConnection:
    """Connect, verify the host key, authenticate; raise UserError with the fix on any failure.

    ``resolve_host`` turns a ``proxy_jump`` name into its entry (the jump is connected first,
    with the same checks). The connection sends keepalives and closes itself when the host stops
    answering them (see :meth:`SshConnection.watch`).
    """
    known_hosts = known_hosts or KnownHosts()
    jump, transport = _transport_to(entry, known_hosts, ask_secret, timeout, resolve_host, keepalive, dead_after)
    _prefer_fast_ciphers(transport)
    try:
        key = _handshake(transport, entry, timeout)
        known_hosts.verify(entry.name, entry.host, entry.port, key.get_name(), key.asbytes())
        _authenticate(transport, entry, ask_secret)
    except BaseException:
        transport.close()
        if jump is not None:
            jump.close()
        raise
    conn = SshConnection(entry, transport, jump)
    if keepalive:
        conn.watch(keepalive, dead_after)
    return conn


def connect_remembering(entry: HostEntry, known_hosts: KnownHosts | None = None, ask_secret: AskSecret | None = None,
                        timeout: float = 10.0, resolve_host: Callable[[str], HostEntry] | None = None,
                        keepalive: float = KEEPALIVE_S, dead_after: float = DEAD_AFTER_S) -> SshConnection:
    """:func:`connect`, then tell a :class:`~studio.remote.secrets.SecretAsker` how it went:
    secrets typed in go to the keyring after a login that worked, stored ones are dropped after
    the server refused them."""
    try:
        conn = connect(entry, known_hosts, ask_secret, timeout, resolve_host, keepalive, dead_after)
    except AuthFailed:
        if hasattr(ask_secret, "forget_used"):
            ask_secret.forget_used()
        raise
    if hasattr(ask_secret, "commit"):
        ask_secret.commit()
    return conn


def _prefer_fast_ciphers(transport) -> None:
    # AES-GCM authenticates and encrypts in one call per packet; measured here against OpenSSH on
    # loopback, SFTP uploads ran about 25 % faster than with paramiko's default aes128-ctr + HMAC.
    # The server still picks, so hosts without GCM fall back to the rest of the list.
    options = transport.get_security_options()
    gcm = tuple(c for c in ("aes128-gcm@openssh.com", "aes256-gcm@openssh.com") if c in options.ciphers)
    options.ciphers = gcm + tuple(c for c in options.ciphers if c not in gcm)


def is_link_error(exc: BaseException, conn: SshConnection | None = None) -> bool:
    """True when ``exc`` means the SSH link failed (as opposed to a refusal by the remote side).

    An OSError without errno is either the link (a closed socket) or an SFTP server's failure reply
    (a full disk answers plain "Failure"); given ``conn``, it is the link only when that is down.
    """
    import paramiko

    if isinstance(exc, (EOFError, ConnectionError, paramiko.SSHException, TimeoutError)):
        return True
    return isinstance(exc, OSError) and exc.errno is None and (conn is None or not conn.alive)


def quiet_prefetch(remote_file, size: int | None = None) -> None:
    """``remote_file.prefetch(size)`` whose read-ahead thread ends quietly when the link drops.

    paramiko's thread lets the EOFError of a cut connection escape, which prints a traceback on
    stderr; the reader of the file gets the error anyway and reports the lost connection.
    """
    fetch = getattr(remote_file, "_prefetch_thread", None)  # paramiko 5: the thread's target, looked up on the file
    if fetch is None:
        remote_file.prefetch(size)
        return

    def guarded(*args, **kwargs):
        try:
            fetch(*args, **kwargs)
        except Exception:  # noqa: BLE001 - the link died: the reader's next request raises it
            pass

    remote_file._prefetch_thread = guarded
    remote_file.prefetch(size)


def prefer_known_key_types(transport, known: list[str]) -> None:
    """Ask for the host key types known_hosts records for this host first, as OpenSSH does: a host
    that has several keys is then verified by the one we know, not refused (or "new") by another."""
    if not known:
        return
    options = transport.get_security_options()
    wanted = []
    for key_type in known:  # an RSA key is negotiated by its SHA-2 signature algorithms too
        wanted += ["rsa-sha2-512", "rsa-sha2-256", "ssh-rsa"] if key_type == "ssh-rsa" else [key_type]
    first = tuple(t for t in dict.fromkeys(wanted) if t in options.key_types)
    options.key_types = first + tuple(t for t in options.key_types if t not in first)


def fetch_host_key(entry: HostEntry, timeout: float = 10.0, known_hosts: KnownHosts | None = None,
                   resolve_host: Callable[[str], HostEntry] | None = None, ask_secret: AskSecret | None = None
                   ) -> tuple[str, bytes]:
    """The key type and key the host presents, without authenticating (for ``trust``); the types
    ``known_hosts`` records for it are asked for first, as when connecting. Through its jump
    host(s) when it has any — the key offered for trust is the one that route reaches."""
    jump, transport = _transport_to(entry, known_hosts or KnownHosts(), ask_secret, timeout, resolve_host, 0, 0,
                                    prefer_known=known_hosts is not None)
    try:
        key = _handshake(transport, entry, timeout)
        return key.get_name(), key.asbytes()
    finally:
        transport.close()
        if jump is not None:
            jump.close()
