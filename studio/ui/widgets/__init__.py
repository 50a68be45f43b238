"""Widgets shared by panels and the main window."""
