"""Engines: headless, Qt-free building blocks that the CLI and the panels both drive."""
