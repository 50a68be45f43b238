"""Everything Qt: the main window, the job runner, panels and shared widgets."""
