"""Where a run goes: this computer, or a host through the process's HostContext."""

from __future__ import annotations

from studio.core.errors import UserError


def local_target(toolkit: str | None = None):
    """A Target for this computer."""
    from studio.targets.local import LocalTarget

    return LocalTarget(toolkit=toolkit)


def target_for_host(context, host: str | None, toolkit: str | None = None):
    """The Target for ``host`` (None or "local": this computer) on ``context``'s connection pool."""
    from studio.targets import target_for

    if host in (None, "", "local"):
        return local_target(toolkit)
    if context is None:
        raise UserError(f"Host {host!r} cannot be reached from here", host, "Add it with studio ssh add.")
    return target_for(context, host, toolkit)


def target_for_config(context, config):
    """The Target a run configuration names (its toolkit path, when set, wins over the host's)."""
    return target_for_host(context, None if config.is_local else config.target, config.toolkit or None)
