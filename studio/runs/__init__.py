"""Run configurations: a named command line, where it runs, and how (MindStudio's Run Configurations)."""
