"""The Graph panel's own widgets."""
