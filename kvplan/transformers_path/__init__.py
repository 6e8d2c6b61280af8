"""The transformers-backed path: a ``ModelSpec`` for families kvplan does not model natively.

(Interface only for now; see ``build_spec``.) Heavy imports (torch, transformers) live only here.
"""

from collections.abc import Mapping
from typing import Any


def knows(config: Mapping[str, Any]) -> bool:
    """Whether transformers can build this config's decoder without remote code."""
    return False


def build_spec(config: Mapping[str, Any], name: str):
    raise NotImplementedError
