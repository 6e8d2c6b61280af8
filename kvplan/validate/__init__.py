"""Live validation: a torch reference decoder built from a ModelSpec, measured against the plan.

The only package that imports torch, and only inside functions that run a measurement, so
``import kvplan.validate.measure`` (the page, the CLI parser) stays light.

- ``decoder``  the reference decoder (random weights, one flat parameter buffer, grouped attention)
- ``caches``   no cache / static (preallocated, rings for windowed layers) / paged (block pool)
- ``blocks``   the paged cache's allocator and block tables (pure Python)
- ``estimate`` static-cache, workspace and bytes-moved predictions (pure Python)
- ``reduce``   reduced copies for hosts the model does not fit, and exact extrapolation back
- ``memory``   free / allocated / peak memory on a GPU (allocator) or a CPU (tensor tracker)
- ``measure``  ``run_validation``: the run, the safety checks, the lock, the result
- ``hf_local`` the same comparisons for a local Hugging Face checkpoint and its own cache
- ``cli``      ``python -m kvplan validate``
"""
