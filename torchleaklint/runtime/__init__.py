"""The runtime watcher: finds memory growth in the user's own training loop while it runs.

``with torchleaklint.watch(label="train") as w: ... w.step()`` samples the harness's probes,
fits growth per step after a warm-up and reports what grows (autograd graphs, tensors,
Python lists, figures, instances of named classes) and the source line that created it,
with the torchleaklint rule that describes the pattern when the static analysis sees it.
"""
