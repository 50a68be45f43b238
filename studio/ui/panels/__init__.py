"""Dock panels, one folder per tool. A panel drives its engine through the JobRunner."""
