"""The Hosts panel (SSH hosts, connection checklist, host keys)."""

from studio.ui.panels.hosts.panel import HostsPanel

__all__ = ["HostsPanel"]
