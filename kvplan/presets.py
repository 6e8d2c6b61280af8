"""Built-in models: real config.json files shipped in ``kvplan/presets/``, listed in MANIFEST.json.

The only file I/O in the core. ``resolve_model`` accepts a preset name or a path to a config.json.
"""

import difflib
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from kvplan.errors import ConfigError
from kvplan.hf_config import MAX_CONFIG_BYTES, load_config_text, parse_config
from kvplan.spec import ModelSpec

PRESET_DIR = Path(__file__).parent / "presets"


@lru_cache(maxsize=1)
def manifest() -> tuple[dict[str, Any], ...]:
    """The manifest entries: name, file, hf_repo, family, source, provenance, notes; ``same_shape_repos`` (optional)
    lists sibling repos whose config.json has the same shape (Qwen3-Next's -Instruct beside the preset's -Thinking),
    each checked by hand: a name alone never says so (Kimi-K2-Thinking is INT4 where -Instruct is FP8)."""
    return tuple(json.loads((PRESET_DIR / "MANIFEST.json").read_text()))


def repo_keys(entry: dict[str, Any]) -> tuple[str, ...]:
    """The lower-cased names an entry answers to: its name, its hf_repo and its same-shape siblings."""
    return tuple(k.lower() for k in (entry["name"], entry.get("hf_repo", ""), *entry.get("same_shape_repos", ())) if k)


def preset_names() -> list[str]:
    return [entry["name"] for entry in manifest()]


def _entry(name: str) -> dict[str, Any]:
    key = name.strip().lower()
    for entry in manifest():
        if key in repo_keys(entry):
            return entry
    close = difflib.get_close_matches(key, preset_names(), n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else "; `python -m kvplan presets` lists them"
    raise ConfigError("model", f"no preset named {name!r}{hint}")


def preset_config(name: str) -> dict[str, Any]:
    """The raw config.json dict of a preset (a fresh copy each call)."""
    return json.loads((PRESET_DIR / _entry(name)["file"]).read_text())


@lru_cache(maxsize=128)
def load_preset(name: str) -> ModelSpec:
    entry = _entry(name)
    return parse_config(preset_config(entry["name"]), name=entry["name"])


def resolve_model(arg: str) -> ModelSpec:
    """A preset name, an HF repo id of a preset, or a path to a config.json file."""
    path = Path(arg)
    try:  # a name the OS cannot stat (too long, a NUL byte) is no file: it falls through to the presets
        is_file = path.is_file()
    except (OSError, ValueError):
        is_file = False
    if arg.endswith(".json") or is_file:
        if not is_file:
            raise ConfigError("model", f"no such file: {arg[:200]}")
        try:
            with path.open("rb") as f:  # read one byte past the cap, so an oversized file is refused, not loaded
                data = f.read(MAX_CONFIG_BYTES + 1)
        except OSError as exc:
            raise ConfigError("model", f"cannot read {arg[:200]}: {exc.strerror or exc}") from None
        return parse_config(load_config_text(data), name=path.parent.name or path.name)
    return load_preset(arg)
