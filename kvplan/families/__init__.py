"""Per-family layouts: which weights each decoder layer has and what it caches.

One short module per family group (in the spirit of mlx-lm's ``models/``), shared pieces in
``blocks.py``. Each module declares ``MODEL_TYPES = {model_type: builder}``; a builder reads a
config through ``hf_config.Reader`` and returns the ModelSpec fields. The shapes follow the
transformers 5.x modeling files (``modeling_<family>.py``), which the tests check every preset
and family default against, parameter for parameter.

Adding a family is one module here and one preset: every module but ``blocks`` is registered.
"""

import pkgutil
from importlib import import_module


def _registry() -> dict:
    builders: dict = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        name = info.name
        if name == "blocks" or name.startswith("_"):
            continue
        module = import_module(f"kvplan.families.{name}")
        for model_type, builder in module.MODEL_TYPES.items():
            assert model_type not in builders, f"{model_type} registered twice ({name})"
            builders[model_type] = builder
    return builders


BUILDERS = _registry()


def build_generic(r, model_type: str) -> dict:
    """An unknown family with only standard decoder fields: a Llama-style decoder."""
    from kvplan.families.llama import build_llama_like

    return build_llama_like(r, "generic")
