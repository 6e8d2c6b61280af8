"""Per-family layouts: which weights each decoder layer has and what it caches.

One short module per family group (in the spirit of mlx-lm's ``models/``), shared pieces in
``blocks.py``. Each module declares ``MODEL_TYPES = {model_type: builder}``; a builder reads a
config through ``hf_config.Reader`` and returns the ModelSpec fields. The shapes follow the
transformers 5.x modeling files (``modeling_<family>.py``), which the tests check every preset
and family default against, parameter for parameter.

Adding a family is one module here (listed in ``_MODULES``) and one preset.
"""

from importlib import import_module

_MODULES = ("llama", "gpt", "deepseek", "gpt_oss", "llama4", "nemotron_h", "qwen3_next")


def _registry() -> dict:
    builders: dict = {}
    for name in _MODULES:
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
