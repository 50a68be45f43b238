"""The Deployment panel: deployments, their dry-run plan, and apply with progress and cancel."""

from studio.ui.panels.deploy.panel import DeployPanel

__all__ = ["DeployPanel"]
