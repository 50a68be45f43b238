"""The Accuracy panel's own widgets."""
