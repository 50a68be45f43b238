"""Jump hosts: reading a ``ProxyJump`` hop and following a host's chain of hops before connecting.

A hop is a Studio host name, an alias of ``~/.ssh/config`` or ``[user@]host[:port]`` (the caller's
``resolve_host`` decides); ``ProxyJump a,b`` (OpenSSH's chain) means a first, then b through a,
then the host through b. Hand-edited entries can make hops that lead back to a host already on
the way (a -> b -> a): :func:`check_jump_chain` refuses those before any connection is opened.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from studio.core.errors import UserError
from studio.remote.hosts import HostEntry

MAX_HOPS = 16  # far more than any real route; a longer chain is a mistake in the entries


def parse_jump(spec: str) -> HostEntry:
    """``[user@]host[:port]`` (``[v6addr]:port`` too), as OpenSSH's ProxyJump writes a hop."""
    user, _, rest = spec.rpartition("@")
    if rest.startswith("["):
        host, _, port = rest[1:].partition("]")
        port = port.lstrip(":")
    else:
        host, _, port = rest.partition(":")
    if not host or (port and not port.isdigit()):
        raise UserError(f"Cannot read the jump host {spec!r}", spec,
                        "Write it as a Studio host name, an alias from ~/.ssh/config, or user@host:port.")
    return HostEntry(name=host, host=host, port=int(port or 22), user=user)


def jump_entry(entry: HostEntry, resolve_host: Callable[[str], HostEntry] | None) -> HostEntry | None:
    """The entry of the hop ``entry`` is reached through (its last ``proxy_jump`` hop, itself reached
    through the hops before it), or None when ``entry`` is reached directly."""
    if not entry.proxy_jump:
        return None
    hops = [hop.strip() for hop in entry.proxy_jump.split(",") if hop.strip()]
    if not hops:
        return None
    last, rest = hops[-1], ",".join(hops[:-1])
    hop = resolve_host(last) if resolve_host else parse_jump(last)
    return replace(hop, proxy_jump=rest) if rest else hop


def _key(entry: HostEntry) -> tuple:
    return entry.name, entry.host, entry.port, entry.proxy_jump or ""


def check_jump_chain(entry: HostEntry, resolve_host: Callable[[str], HostEntry] | None) -> list[HostEntry]:
    """The hops from ``entry`` outwards (nearest first); a UserError when they loop back or never end."""
    chain, seen, current = [], [_key(entry)], entry
    while (current := jump_entry(current, resolve_host)) is not None:
        route = " -> ".join([entry.name, *(hop.name for hop in chain), current.name])
        if _key(current) in seen:
            raise UserError(f"The jump hosts of {entry.name} lead back to a host already on the way: {route}",
                            entry.name, "Change the proxy_jump of one of these hosts (`studio ssh add NAME ... "
                            "--proxy-jump HOP`, or edit hosts.toml) so the chain ends at a host reached directly.")
        if len(chain) >= MAX_HOPS:
            raise UserError(f"{entry.name} is reached through more than {MAX_HOPS} jump hosts: {route} ...",
                            entry.name, "Shorten the chain of proxy_jump hosts.")
        chain.append(current)
        seen.append(_key(current))
    return chain
