"""The transformers-backed path: an exact ``ModelSpec`` for decoder families kvplan has no module for.

``kvplan.hf_config.parse_config`` sends a config here when its model_type has no native builder
(``kvplan.families.BUILDERS``) and transformers + torch are installed. ``knows`` says whether
transformers 5.23 can build the config's decoder without remote code; ``build_spec``:

1. builds the model from the config on the ``meta`` device (no memory, no weights): every
   parameter's shape, so parameter counts are exact (``parameters()`` dedups tied weights);
2. maps each parameter to a spec component (``Linear`` / ``Norm`` / ``Tensor`` / ``Experts``)
   by its module path, with its TP shard from the config class's ``base_model_tp_plan``;
3. measures the cache: a depth-reduced copy (one layer of each distinct kind, MLP / expert widths
   and vocabulary shrunk, attention geometry untouched) runs a real prefill and two decode steps
   on the CPU, and each layer's cache tensors (keys / values ``[B, H, T, D]``, conv / recurrent
   states) give its cache spec.

Builds are cached per config content (sha256 of the canonical JSON): a second request costs a dict
lookup. Heavy imports (torch, transformers) happen only in ``build.py``, on first use.
"""

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from kvplan.errors import ConfigError

TRANSFORMERS_VERSION = "5.23"  # the version requirements.txt pins; basis_note names it
CACHE_ENTRIES = 64  # specs kept (a spec is ~100 KB at most: identical layers are shared objects)

# Types in transformers' MODEL_FOR_CAUSAL_LM_MAPPING_NAMES that are not decoder-only LMs: their
# "CausalLM" class is the decoder half of an encoder-decoder, or an encoder (bidirectional
# attention) given a causal head, or a speech / music decoder over codebooks. kvplan plans decoder-only
# text LMs as an inference engine serves them; these are refused with the reason.
EXCLUDED: dict[str, str] = {
    **dict.fromkeys(
        ("bert", "bert-generation", "big_bird", "camembert", "data2vec-text", "electra", "ernie", "megatron-bert",
         "rembert", "roberta", "roberta-prelayernorm", "roc_bert", "roformer", "xlm", "xlm-roberta",
         "xlm-roberta-xl", "xmod", "xlnet"),
        "an encoder (bidirectional attention) with a causal-LM head for encoder-decoder use, not a decoder-only LM"),
    **dict.fromkeys(
        ("bart", "bigbird_pegasus", "blenderbot", "blenderbot-small", "marian", "mbart", "mvp", "pegasus", "plbart",
         "prophetnet", "trocr", "whisper"),
        "the decoder half of an encoder-decoder model (it cross-attends to an encoder's output)"),
    **dict.fromkeys(
        ("musicgen", "musicgen_melody", "moshi", "moss_transcribe_diarize"),
        "an audio model: its decoder runs over audio codebooks / an audio encoder, not a text decoder-only LM"),
    **dict.fromkeys(
        ("gemma4_assistant", "gemma4_unified_assistant"),
        "a draft (assistant) model for speculative decoding that reads its target model's KV cache; not a "
        "standalone LM"),
    "reformer": "LSH / chunked attention with its own cache layout (a research encoder-style LM), not a decoder "
                "kvplan can plan",
}

_LOCK = threading.Lock()
_CACHE: "OrderedDict[str, Any]" = OrderedDict()  # sha256 -> ModelSpec or ConfigError
_NAMED: dict[str, dict[str, Any]] = {}  # sha256 -> {name: the spec under that name}


def _mapping() -> tuple[Mapping[str, str], Mapping[str, str]]:
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    return MODEL_FOR_CAUSAL_LM_MAPPING_NAMES, CONFIG_MAPPING_NAMES


def target(config: Mapping[str, Any]) -> tuple[Mapping[str, Any], str, tuple[str, ...]] | None:
    """(the config dict transformers builds, its model_type, what was skipped) or None.

    A multimodal wrapper is unwrapped to its ``text_config`` as ``hf_config.text_decoder_config``
    does (the text decoder is what kvplan plans; the towers are listed as skipped), when the text
    type is a causal LM; else the outer type itself when it is one.
    """
    from kvplan.hf_config import text_decoder_config

    if not isinstance(config, Mapping):
        return None
    causal, configs = _mapping()

    def ok(model_type) -> bool:
        return isinstance(model_type, str) and model_type in causal and model_type in configs \
            and model_type not in EXCLUDED

    try:
        inner, inner_type, skipped, _ = text_decoder_config(config)
    except ConfigError:
        return None
    if inner is not config and ok(inner_type):
        return inner, inner_type, skipped
    outer_type = config.get("model_type")
    if ok(outer_type):
        return config, outer_type, ()
    text = config.get("text_config")
    if isinstance(text, Mapping) and ok(text.get("model_type")):
        inner = dict(text)
        for key in ("torch_dtype", "dtype", "quantization_config", "tie_word_embeddings"):
            if key not in inner and key in config:
                inner[key] = config[key]
        return inner, text["model_type"], ("non-text parts of the wrapper (outside text_config)",)
    return None


def knows(config: Mapping[str, Any]) -> bool:
    """Whether transformers can build this config's decoder-only causal LM without remote code."""
    try:
        return target(config) is not None
    except ImportError:
        return False


def config_hash(config: Mapping[str, Any]) -> str:
    """sha256 of the canonical JSON (sorted keys): the cache key of a build."""
    text = json.dumps(config, sort_keys=True, separators=(",", ":"), default=repr)
    return hashlib.sha256(text.encode()).hexdigest()


def build_spec(config: Mapping[str, Any], name: str, progress: Callable[[float, str], None] | None = None):
    """The ``ModelSpec`` of ``config`` built with transformers (see module doc); cached per content.

    ``progress(fraction, message)``, if given, is called as the build goes (fraction from 0.0 to
    1.0, message a short line such as "building on the meta device"); a cached answer calls it
    once with 1.0. Raises ``ConfigError`` naming the field for anything transformers refuses.
    """
    key = config_hash(config)
    with _LOCK:
        hit = _CACHE.get(key)
        if hit is not None:
            _CACHE.move_to_end(key)
    if hit is None:
        found = target(config)
        if found is None:
            raise ConfigError("model_type", f"{config.get('model_type')!r} is not a decoder-only causal LM that "
                              f"transformers {TRANSFORMERS_VERSION} builds without remote code")
        from kvplan.transformers_path.build import build

        try:
            hit = build(config, *found, progress=progress)
        except ConfigError as exc:
            hit = exc
        except Exception as exc:  # never a traceback for a config: anything unforeseen is refused, named
            hit = ConfigError("config", f"the transformers-backed build of {found[1]!r} failed "
                                        f"({type(exc).__name__}: {' '.join(str(exc).split())[:300]})")
        with _LOCK:
            _CACHE[key] = hit
            while len(_CACHE) > CACHE_ENTRIES:
                _NAMED.pop(_CACHE.popitem(last=False)[0], None)
    elif progress is not None:
        progress(1.0, "cached")
    if isinstance(hit, ConfigError):
        raise ConfigError(hit.field, hit.message)
    if hit.name == name:
        return hit
    from kvplan.hf_config import with_name_warning

    with _LOCK:  # a copy per name asked for, kept with the build (the spec's memo then carries over requests)
        named = _NAMED.setdefault(key, {})
        if name not in named and len(named) < 8:
            named[name] = hit.model_copy(update=with_name_warning(hit, name))
        return named.get(name) or hit.model_copy(update=with_name_warning(hit, name))


def clear_cache() -> None:
    with _LOCK:
        _CACHE.clear()
        _NAMED.clear()
