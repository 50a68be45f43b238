"""The application runner: a model over a folder of pictures, post-processed per task, with metrics."""
