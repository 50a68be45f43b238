"""Checks that keep every sync operation inside its deployment root, on both sides.

Paths inside a deployment are always relative, ``/``-separated and normalised: no empty part,
no ``.`` or ``..`` part, no leading ``/``, no NUL. Anything else — from a user argument, the
remote listing, the state file or a tar member name — is refused before it touches a disk.
Symlinks are never followed when writing: a path whose parent folder is a symlink on the side
being written is refused, because writing through it could land outside the root.
"""

from __future__ import annotations

import os
import posixpath
from pathlib import Path

from studio.core.errors import UserError


def check_relative(path: str, where: str = "deployment") -> str:
    """Return ``path`` if it is a safe relative path inside a root; raise UserError otherwise."""
    reason = escape_reason(path)
    if reason:
        raise UserError(f"Refused path {path!r}: {reason}", where,
                        "Only paths inside the deployment root can be synced; rename or remove this entry.")
    return path


def escape_reason(path: str) -> str | None:
    """Why ``path`` is not a safe relative path (None when it is)."""
    if not path:
        return "the path is empty"
    if "\0" in path:
        return "the path contains a NUL byte"
    if path.startswith("/"):
        return "absolute paths are not allowed"
    parts = path.split("/")
    if any(p == ".." for p in parts):
        return "'..' would leave the deployment root"
    if any(p in ("", ".") for p in parts):
        return "the path is not normalised (empty or '.' part)"
    return None


def user_relative(path: str, root: Path) -> str:
    """Turn a path the user typed (relative to the root, or absolute inside the local root) into a safe one."""
    text = path.replace(os.sep, "/")
    if os.path.isabs(path):
        try:
            text = Path(os.path.abspath(path)).relative_to(os.path.abspath(root)).as_posix()
        except ValueError:
            raise UserError(f"{path} is outside the deployment's local folder", root,
                            "Give a path inside the local folder, or relative to it.") from None
    text = text.strip("/")
    normal = posixpath.normpath(text) if text else text
    if normal.startswith("../") or normal == "..":
        check_relative(text)  # raises with the '..' reason
    return check_relative(normal if normal != "." else "")


def parents(path: str) -> list[str]:
    """The folders above ``path``, outermost first: ``a/b/c`` -> ``["a", "a/b"]``."""
    parts = path.split("/")[:-1]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def link_points_inside(link_path: str, target: str) -> bool:
    """True when a symlink at ``link_path`` (relative to the root) with ``target`` stays inside the root.

    Judged lexically, the way the link would resolve if no other link were involved; absolute
    targets are outside by definition (the root may move).
    """
    if not target or target.startswith("/"):
        return False
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(link_path), target))
    return not (joined == ".." or joined.startswith("../"))


def local_root_problem(root: Path, real: str | None) -> str | None:
    """Why writing under the local ``root`` could leave it now, or None.

    ``real`` is the root's real path when the plan was made (None: it did not exist then). A root
    swapped for a symlink since then resolves elsewhere; one made since then must not be a symlink.
    """
    if real is None:
        if os.path.islink(root):
            return f"the local root {root} is a symlink now (it did not exist when the plan was made)"
        return None
    now = os.path.realpath(root)
    if now != real:
        return (f"the local root {root} is {now} now, not {real} as when the plan was made (replaced by a "
                "symlink?); nothing was written there")
    return None


class LocalRootGuard:
    """:func:`local_root_problem`, cheap enough to ask before every file of a download lands.

    The full check resolves the root's path component by component (three or more ``lstat`` calls
    and a few dozen Python steps); asked twice per file, that was a fifth of landing 5,000 small
    files. Once the full check passed, the folder it saw is remembered by device and inode, and
    later checks only ``stat`` the root: the same folder means the same answer. Anything else (a
    symlink put in its place, the folder gone or re-made) goes through the full check again.
    """

    def __init__(self, root: Path, real: str | None):
        self.root, self.real = root, real
        self._pinned: tuple[int, int] | None = None

    def _identity(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.root)
        except OSError:
            return None
        return st.st_dev, st.st_ino

    def problem(self) -> str | None:
        """Why writing under the root could leave it now (see :func:`local_root_problem`), or None."""
        now = self._identity()
        if now is not None and now == self._pinned:
            return None
        problem = local_root_problem(self.root, self.real)
        if problem is None:
            if now is None or self._identity() != now:  # changed while it was being checked
                return f"the local root {self.root} changed while it was being checked; nothing was written there"
            self._pinned = now
        return problem

    def open(self) -> int:
        """A file descriptor of the root folder as checked (OSError/``problem`` text: see :meth:`problem`).

        Files created relative to it (``dir_fd``) land in that folder whatever happens to its
        path afterwards; the caller closes it."""
        fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        st = os.fstat(fd)
        if self._pinned != (st.st_dev, st.st_ino):
            os.close(fd)
            raise FileNotFoundError(f"the local root {self.root} changed while it was being opened")
        return fd


class FolderIsLink(UserError):
    """A folder on the way to a local file is a symlink (now, when it was opened)."""


def open_local_folder(guard: LocalRootGuard, folder: str, create: bool = False) -> int:
    """A directory handle of ``folder`` (relative) under the root ``guard`` checks, reached from the
    root's handle one name at a time with ``O_NOFOLLOW`` (made when missing with ``create``).

    Every write, rename and delete is then done by name relative to it (``dir_fd=``): a folder
    swapped for a symlink after it was opened is not followed — the handle stays on the folder
    that was checked. Raises WriteRefused (the root is not the folder the plan saw),
    :class:`FolderIsLink` (a symlink on the way) or OSError. The caller closes the handle.
    """
    import errno

    problem = guard.problem()
    if problem:
        raise WriteRefused(problem, guard.root, "Look at what replaced the folder, then plan again.")
    fd = guard.open()
    parts = folder.split("/") if folder else []
    try:
        for depth, name in enumerate(parts):
            if create:
                try:
                    os.mkdir(name, 0o777, dir_fd=fd)
                except FileExistsError:
                    pass
            try:
                inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR) and os.path.islink(guard.root / "/".join(parts[:depth + 1])):
                    raise FolderIsLink(f"the local folder {'/'.join(parts[:depth + 1])!r} is a symlink", guard.root,
                                       "Studio never writes through symlinks; replace the link with a folder.") from None
                if exc.errno == errno.ELOOP:
                    raise FolderIsLink(f"the local folder {'/'.join(parts[:depth + 1])!r} was a symlink when it was "
                                       "opened", guard.root, "Look at what changed it, then plan again.") from None
                raise
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


def local_parent_is_link(root: Path, path: str) -> str | None:
    """The first folder above ``path`` under ``root`` that is a symlink on disk, or None."""
    for folder in parents(path):
        if os.path.islink(root / folder):
            return folder
    return None


class WriteRefused(UserError):
    """A write refused at write time: the folder it would go through is not a plain folder now."""


def remote_parent_problem(sftp, root: bytes, path: str) -> str | None:
    """Why writing ``path`` under the real remote ``root`` could leave the root now, or None.

    Checked just before each SFTP write and rename (not only at plan time): every folder from the
    root down to the file's must be a real folder, not a symlink a process on the host put there
    after the scan. ``lstat`` never follows the last component, so each one is seen as it is.
    """
    import stat

    try:
        real = sftp.normalize(root)  # realpath on the host: a symlink anywhere above shows here too
    except OSError:
        return "the remote root is gone (changed on the host after the scan)"
    except UnicodeError:  # a real path that is not UTF-8: the lstat walk below still checks the root
        real = None
    if real is not None and real.encode("utf-8", "surrogateescape") != root:
        return (f"the remote root resolves to {real} now, not to the folder the plan saw (replaced by a "
                "symlink on the host after the scan); nothing was written there")
    for folder in ["", *parents(path)]:
        where = root + (b"/" + folder.encode("utf-8", "surrogateescape") if folder else b"")
        try:
            mode = sftp.lstat(where).st_mode
        except OSError:
            return f"the remote folder {folder or '(root)'} is gone (changed on the host after the scan)"
        if stat.S_ISLNK(mode):
            return (f"the remote folder {folder or '(root)'} is a symlink now (changed on the host after the "
                    "scan); nothing was written through it")
        if not stat.S_ISDIR(mode):
            return f"the remote {folder or '(root)'} is no longer a folder (changed on the host after the scan)"
    return None


class Changed(UserError):
    """A row whose side changed since the plan was made: applying it would lose someone's work."""


def stat_problem(mode: int | None, size: int, mtime: float, expected, mtime_ns: int | None = None,
                 ctime_ns: int | None = None) -> str | None:
    """How a file (``mode`` None: absent) differs from what the plan saw (``expected``: a FileInfo
    or None for "absent"), or None when it is as planned.

    Size and whole-second mtime always; the nanosecond mtime and the ctime where both the plan's
    listing and this look have them (an edit may keep the size and put the mtime back, but the
    kernel moves the ctime on every write). Where only whole seconds could be compared,
    :func:`seconds_only` says so and the caller compares the content's hash when it knows one.
    """
    import stat

    if expected is None:
        return None if mode is None else "it appeared after the plan was made"
    if mode is None:
        return "it disappeared after the plan was made"
    if not stat.S_ISREG(mode):
        return "it is no longer a regular file"
    if size != expected.size or int(mtime) != expected.mtime:
        return "it changed after the plan was made"
    for now, then in ((mtime_ns, expected.mtime_ns), (ctime_ns, expected.ctime_ns)):
        if now is not None and then is not None and now != then:
            return "it changed after the plan was made (same size and second, other nanoseconds)"
    return None


def seconds_only(expected, ctime_ns: int | None) -> bool:
    """True when a present file's check could not use the ctime (one side has whole seconds only)."""
    return expected is not None and (ctime_ns is None or expected.ctime_ns is None)


HASH_CHANGED = "its content changed after the plan was made (same size and mtime)"


def local_problem(path: Path | str, expected, sha256: str | None = None, dir_fd: int | None = None) -> str | None:
    """:func:`stat_problem` for a local path (never following a symlink); with ``sha256`` (the
    content as planned), the content is compared too where the times cannot tell. With ``dir_fd``,
    ``path`` is a name in that open folder."""
    try:
        st = os.lstat(path, dir_fd=dir_fd)
    except FileNotFoundError:
        return stat_problem(None, 0, 0, expected)
    problem = stat_problem(st.st_mode, st.st_size, st.st_mtime, expected, st.st_mtime_ns, st.st_ctime_ns)
    if problem is None and sha256 and seconds_only(expected, st.st_ctime_ns):
        import hashlib

        try:
            with open(path, "rb", opener=lambda name, flags: os.open(name, flags | os.O_NOFOLLOW, dir_fd=dir_fd)) as handle:
                if hashlib.file_digest(handle, "sha256").hexdigest() != sha256:
                    return HASH_CHANGED
        except OSError:
            return "it cannot be read now"
    return problem


def remote_problem(sftp, path: bytes, expected) -> str | None:
    """:func:`stat_problem` for a remote path over SFTP (``lstat``: a symlink is not followed).

    SFTP gives whole seconds only: when the file is there and as planned by them, the caller
    asks the host (:func:`stat_check_line`) where nanoseconds, ctime or a hash can tell more.
    """
    try:
        st = sftp.lstat(path)
    except FileNotFoundError:
        return stat_problem(None, 0, 0, expected)
    except OSError as exc:
        if getattr(exc, "errno", None) == 2:
            return stat_problem(None, 0, 0, expected)
        raise
    return stat_problem(st.st_mode, st.st_size, st.st_mtime, expected)


def find_time_text(ns: int) -> str:
    """How ``find -printf %T@`` (GNU findutils) prints a time of ``ns`` nanoseconds."""
    return f"{ns // 10**9}.{ns % 10**9:09d}0"


def stat_check_line(path: str, expected, quote, sha256: str | None = None) -> bytes:
    """A POSIX ``sh`` condition true when ``path`` (relative to the cwd) is as the plan saw it.

    Absent: two builtin tests. Present: one ``find`` (GNU findutils) printing size, mtime and
    ctime with nanoseconds, compared whole where the plan's listing had them; else size and
    whole-second mtime, and then, with ``sha256``, one ``sha256sum`` of the content. Only rows
    that overwrite or delete an existing file pay for it.
    """
    q = quote(path)
    if expected is None:
        return b"! [ -e " + q + b" ] && ! [ -L " + q + b" ]"
    look = b"v=$(find " + quote("./" + path) + b" -maxdepth 0 -type f -printf '%s %T@ %C@' 2>/dev/null)"
    if expected.mtime_ns is not None and expected.ctime_ns is not None:
        want = f"{expected.size} {find_time_text(expected.mtime_ns)} {find_time_text(expected.ctime_ns)}"
        return look + b' && [ "$v" = "' + want.encode() + b'" ]'
    line = look + b' && [ "${v%%.*}" = "' + f"{expected.size} {expected.mtime}".encode() + b'" ]'
    if sha256:
        line += b' && [ "$(sha256sum < ' + q + b' 2>/dev/null)" = "' + sha256.encode() + b'  -" ]'
    return line
