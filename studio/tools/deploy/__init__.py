"""Deployment sync: deployments, plans (dry runs), the last-synced state and the sync jobs (no Qt).

The transfers themselves (tar streams, upload, download, scan) are in studio.targets.transfer.
"""
