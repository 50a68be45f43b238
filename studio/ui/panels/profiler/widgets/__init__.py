"""The Profiler panel's own widgets (the timeline, tables and tabs it shows live next to the panel)."""
