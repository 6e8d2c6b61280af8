"""EAGLE / EAGLE-3 draft heads: what vLLM loads beside the target for ``--speculative-config`` methods ``eagle`` and
``eagle3`` (a separate draft checkpoint, ``"model"``), natively from the draft's config.json.

Read in the vllm 0.10.2 - 0.33.0 wheels (2026-12; the rules' first releases below): config/speculative.py (the draft's
ModelConfig takes the *target's* dtype; draft_tensor_parallel_size is 1 or the target's TP, default the target's;
EAGLEConfig renames LlamaForCausalLM -> Eagle3LlamaForCausalLM / EagleLlamaForCausalLM, LlamaForCausalLMEagle3 kept),
models/llama_eagle3.py, models/llama_eagle.py, v1/spec_decode/eagle.py (llm_base_proposer.py in later releases)
load_model, v1/worker/gpu/spec_decode/eagle/utils.py (the 0.33 V2 runner: the same sharing rules), and
gpu_model_runner.load_model (the drafter loads inside the "Model loading took" window in every one).

What an EAGLE-3 Llama head allocates (Eagle3LlamaForCausalLM), h = hidden_size, H = target hidden (target_hidden_size
or h), n = aux hidden states (3):
- layer 0: q/k/v over 2h inputs (embedding ++ hidden state; QKVParallelLinear), o_proj, the SwiGLU MLP, three RMSNorms
  (input_layernorm, hidden_norm, post_attention_layernorm); later layers (0.11.1+) the same over h inputs;
- ``norm`` [h]; ``fc`` [h, n x H] replicated on every rank (ReplicatedLinear / nn.Linear, model dtype);
  ``input_norm`` [n x H] with norm_before_fc (0.18+); n = 3 through 0.21, from the config from 0.22;
- ``lm_head`` [draft_vocab_size, h] (ParallelLMHead: rows padded to 64, split over TP);
- ``draft_id_to_target_id`` (d2t) int64 [draft_vocab_size], replicated: always through 0.29.0, only when
  draft_vocab_size != the target's vocab from 0.30.0;
- ``embed_tokens`` [vocab, h] is built, then replaced by the target's (and freed) at PP 1: 0.10.2 / 0.11.0 when the
  shapes match, 0.11.1+ when the checkpoint ships none (or an identical copy). SpecForge drops the embeddings from every
  checkpoint it exports (specforge/export/to_sglang.py: "drop the embeddings exactly as the trainer-side checkpoint
  filter does"), so the drafters kvplan ships share it;
- the target's lm_head is shared instead of the draft's own only when the checkpoint has none (0.11.1+) or, 0.11.0,
  when the shapes match (0.10.2: never for eagle3).
An EAGLE (1) Llama head (EagleLlamaForCausalLM): layers over h inputs, layer 0 without input_layernorm, ``fc`` [h, 2h],
no final norm, no lm_head of its own (the target's), the embedding shared as above.

Its attention layers (``model.layers.{target layers + i}``, Llama attention with the draft's KV heads and head_dim, the
target's KV-cache dtype) join the target's KV-cache groups on the last stage: one layer adds kv_heads x head_dim x 2 x
dtype bytes per token. Worked number: Llama-3.1-8B + its EAGLE-3 head (SpecForge llama3-8B-eagle3.json): 424,689,664
parameters, 849,379,328 B in bf16 + 256,000 B d2t = 849,635,328 B at TP 1; KV 131,072 -> 135,168 B per token.
"""

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from kvplan.errors import ConfigError, PlanInputError
from kvplan.hf_config import Reader
from kvplan.units import counted

DRAFT_METHODS = ("eagle", "eagle3")
FIELD = "--speculative-config"
DRAFTERS_FILE = Path(__file__).parent / "presets" / "DRAFTERS.json"
# Architectures vLLM builds with llama_eagle3.py / llama_eagle.py (EAGLEConfig's renaming + models/registry.py).
EAGLE3_ARCHITECTURES = ("LlamaForCausalLM", "LlamaForCausalLMEagle3", "Eagle3LlamaForCausalLM")
EAGLE_ARCHITECTURES = ("LlamaForCausalLM", "EagleLlamaForCausalLM", "LlamaForCausalLMEagle")
# The class SGLang builds for each head (it builds what the draft config's architectures names, no renaming:
# configs/model_config.py and the model registry of the 0.5.14 - 0.5.21 wheels, read 2026-12-03):
# models/llama_eagle3.py LlamaForCausalLMEagle3, models/llama_eagle.py LlamaForCausalLMEagle. vLLM renames an
# eagle draft's architecture to Eagle<arch> (transformers_utils/configs/eagle.py, 0.33.0), and has no
# EagleLlamaForCausalLMEagle: SGLang's name is refused for vLLM (draft_head).
SGLANG_HEAD_ARCH = {"eagle3": "LlamaForCausalLMEagle3", "eagle": "LlamaForCausalLMEagle"}
D2T_BYTES = 8  # torch.long
# The first release of each rule, bisected in the wheels (llama_eagle3.py, v1/spec_decode/eagle.py or
# llm_base_proposer.py, config/speculative.py of 0.10.2, 0.11.0, 0.11.1, 0.12.0, 0.13.0, 0.14.1, 0.17.0, 0.18.0,
# 0.19.0, 0.20.0, 0.20.1, 0.21.0, 0.22.0 - 0.26.0, 0.27.0, 0.27.1, 0.28.0, 0.29.0, 0.30.0, 0.32.0, 0.33.0); each is the
# first release of a kvplan profile (kvplan.engines.VLLM_PROFILES), so a profile has one rule:
MULTI_LAYER_EAGLE3 = (0, 11, 1)  # 0.10.2 / 0.11.0 build one layer whatever num_hidden_layers says; 0.11.1 all of them
SHARE_BY_CONTENT = (0, 11, 1)  # has_own_embed_tokens / has_own_lm_head from 0.11.1; 0.10.2 / 0.11.0 by shape
NORM_BEFORE_FC = (0, 18, 0)  # input_norm: in 0.18.0, not in 0.17.0
AUX_FROM_CONFIG = (0, 22, 0)  # num_aux_hidden_states / eagle_aux_hidden_state_layer_ids from 0.22.0; 3 through 0.21.0
D2T_ONLY_REDUCED = (0, 30, 0)  # d2t only when draft_vocab_size != target vocab from 0.30.0; always through 0.29.0
ROPE_TARGET_LENGTH = (0, 27, 0)  # _maybe_override_draft_max_position_embeddings from 0.27.0 (not in 0.26.0)
# rope types whose table the 0.27+ override lengthens (0.32+ _CACHE_ONLY_ROPE_TYPES; 0.27 - 0.31 every type)
CACHE_ONLY_ROPE_TYPES = ("default", "linear", "llama3", "ntk", "proportional")


class DraftSpec(BaseModel):
    """An EAGLE / EAGLE-3 draft head as given: ``config_json`` its config.json (canonical JSON, so the spec is hashable
    and an EngineConfig field), ``name`` a drafter preset or the file it came from, ``source`` its provenance.
    ``own_embed_tokens``: the checkpoint ships an embed_tokens that differs from the target's (vLLM 0.11.1+ then keeps
    it)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str
    method: Literal["eagle", "eagle3", "draft_model"]  # draft_model: a whole draft LM (kvplan.draft_model)
    config_json: str
    source: str = ""
    own_embed_tokens: bool = False

    @property
    def config(self) -> dict[str, Any]:
        return json.loads(self.config_json)


@dataclass(frozen=True)
class DraftHead:
    """What vLLM allocates for a draft head in one release line, beside a given target."""

    spec: Any  # kvplan.spec.ModelSpec of the head's weights (components) and attention layers
    d2t_bytes: int
    embed_shared: bool
    lm_head_shared: bool
    params: int  # every parameter the head holds on the GPU (shared tables not counted)
    notes: tuple[str, ...]


@functools.lru_cache(maxsize=1)
def drafter_manifest() -> tuple[dict[str, Any], ...]:
    return tuple(json.loads(DRAFTERS_FILE.read_text()))


def drafter_for_model(model: str) -> dict[str, Any] | None:
    """The DRAFTERS.json entry whose name or one of whose hf_repos is ``model`` (case-insensitive), or None."""
    key = model.strip().rstrip("/").lower()
    for entry in drafter_manifest():
        if key == entry["name"] or key in (r.lower() for r in entry["hf_repos"]):
            return entry
    return None


def load_drafter(name_or_repo: str, method: str) -> DraftSpec:
    """A shipped drafter (kvplan/presets/DRAFTERS.json) by name or HF repo id, for ``method``."""
    entry = drafter_for_model(name_or_repo)
    if entry is None:
        known = ", ".join(r for e in drafter_manifest() for r in e["hf_repos"])
        raise PlanInputError(FIELD, f"method {method}: kvplan ships no config for the draft checkpoint "
                             f"{name_or_repo[:120]!r} (known drafters: {known}); give its config.json (kvplan plan "
                             "--draft-config PATH) so its weights and KV cache are planned")
    if entry["method"] != method:
        raise PlanInputError(FIELD, f"{name_or_repo} is an {entry['method']} head, not {method}")
    cfg = json.loads((DRAFTERS_FILE.parent / entry["file"]).read_text())
    return parse_draft(method, cfg, entry["name"], f"{entry['hf_repos'][0]} ({entry['source']})")


def parse_draft(method: str, cfg: Any, name: str, source: str = "", own_embed_tokens: bool = False) -> DraftSpec:
    """A DraftSpec from a draft config dict, checked now (a bad config is refused here, naming its field)."""
    if method not in DRAFT_METHODS:
        raise PlanInputError(FIELD, f"method {method!r}: kvplan models draft heads for {', '.join(DRAFT_METHODS)}")
    if not isinstance(cfg, Mapping):
        raise ConfigError("draft_config", "must be a JSON object (the draft's config.json)")
    draft = DraftSpec(name=name[:200], method=method, config_json=json.dumps(cfg, sort_keys=True),
                      source=source[:300], own_embed_tokens=own_embed_tokens)
    _base_spec(draft)  # validates every field it reads
    return draft


def _field(name: str) -> str:
    return f"draft_config.{name}"


@functools.lru_cache(maxsize=64)
def _base_spec(draft: DraftSpec):
    """The draft config read as the Llama decoder it is (kvplan.families.llama: dims, layer kinds, rope tables),
    after refusing what vLLM's Llama EAGLE heads would build otherwise than kvplan models."""
    from kvplan.hf_config import parse_config

    cfg = draft.config
    archs = cfg.get("architectures") or []
    allowed = EAGLE3_ARCHITECTURES if draft.method == "eagle3" else EAGLE_ARCHITECTURES
    if not isinstance(archs, list) or len(archs) != 1 or archs[0] not in allowed:
        model_file = "llama_eagle3.py" if draft.method == "eagle3" else "llama_eagle.py"
        raise ConfigError(_field("architectures"), f"{archs!r}: kvplan models vLLM's Llama {draft.method} heads "
                          f"({', '.join(allowed)}: models/{model_file}) only")
    if cfg.get("model_type") != "llama":
        raise ConfigError(_field("model_type"), f"{cfg.get('model_type')!r}: a Llama draft head has model_type llama")
    for key, why in (("quantization_config", "a quantized draft head"), ("layer_types", "per-layer attention kinds"),
                     ("attention_bias", "attention biases"), ("mlp_bias", "MLP biases"),
                     ("fc_norm", "per-hidden-state fc norms (0.33 fc_norm)")):
        if cfg.get(key):
            raise ConfigError(_field(key), f"{why}: not modelled for draft heads")
    if cfg.get("sliding_window") and cfg.get("use_sliding_window", True):
        raise ConfigError(_field("sliding_window"), "a sliding-window draft head is not modelled")
    eagle = cfg.get("eagle_config")
    if eagle is not None and not isinstance(eagle, Mapping):
        raise ConfigError(_field("eagle_config"), "must be an object")
    if (eagle or {}).get("use_aux_hidden_state") is False:
        raise ConfigError(_field("eagle_config.use_aux_hidden_state"), "false (no fc over aux hidden states): "
                          "not modelled")
    try:
        spec = parse_config(cfg, name=draft.name)
    except ConfigError as exc:
        raise ConfigError(_field(exc.field), exc.message) from None
    if spec.model_type != "llama" or any(layer.cache.kind != "full_attention" for layer in spec.layers):
        raise ConfigError(_field("model_type"), "a draft head of full-attention Llama layers is modelled only")
    return spec


def aux_hidden_states(cfg: Mapping) -> int:
    """How many target hidden states the EAGLE-3 fc fuses: num_aux_hidden_states, else the length of
    eagle_config.eagle_aux_hidden_state_layer_ids, else 3 (llama_eagle3.py LlamaModel, 0.33.0)."""
    n = cfg.get("num_aux_hidden_states")
    if n is not None:
        return Reader(cfg, _field("")).int("num_aux_hidden_states")
    ids = (cfg.get("eagle_config") or {}).get("eagle_aux_hidden_state_layer_ids")
    if ids is not None and (not isinstance(ids, list) or not ids):
        raise ConfigError(_field("eagle_config.eagle_aux_hidden_state_layer_ids"), "must be a non-empty list")
    return len(ids) if ids else 3


def draft_head(draft: DraftSpec, vllm_version: str, target, dtype: str | None = None) -> DraftHead:
    """The head vLLM ``vllm_version`` (a kvplan profile key) allocates for ``draft`` beside ``target`` (a ModelSpec),
    at PP 1, in ``dtype`` (the served dtype: the draft's ModelConfig takes the target's; default the target's
    checkpoint dtype). Refuses (PlanInputError naming --speculative-config) what that release would build otherwise
    than kvplan models, or what kvplan did not read for it."""
    return _draft_head(draft, vllm_version, target.vocab_size, target.hidden_size, dtype or target.dtype)


@functools.lru_cache(maxsize=256)
def _draft_head(draft: DraftSpec, vllm_version: str, target_vocab: int, target_hidden: int, dtype: str) -> DraftHead:
    from kvplan.engines import vllm_release

    archs = draft.config.get("architectures") or []
    if draft.method == "eagle" and archs == [SGLANG_HEAD_ARCH["eagle"]]:
        raise PlanInputError(FIELD, f"{draft.name}: architectures {archs[0]} is SGLang's EAGLE head class; vLLM "
                             "renames an eagle draft's architecture to Eagle<arch> (transformers_utils/configs/"
                             "eagle.py) and has no EagleLlamaForCausalLMEagle: give the head's LlamaForCausalLM / "
                             "EagleLlamaForCausalLM config for vLLM")
    return _build_head(draft, vllm_release(vllm_version), target_vocab, target_hidden, dtype)


# SGLang's EAGLE-3 head (models/llama_eagle3.py LlamaForCausalLMEagle3, the sglang 0.5.14 - 0.5.23 wheels, 2026-12)
# builds what vLLM 0.30+ builds for it (every layer, layer 0's q/k/v over 2h, three RMSNorms a layer, fc over
# num_aux_hidden_states x target hidden, norm, lm_head over draft_vocab_size): built here by the same rules. What
# differs is kept out of the spec: its own embed_tokens (always built, swapped for the target's by set_embed after the
# pools are sized: kvplan.sglang.eagle3_resident_copy_bytes), a full-vocab lm_head without draft_vocab_size (swapped too:
# set_embed_and_head), the d2t map (hot_token_id: built on the CPU in load_weights, moved to the GPU after the pools), the
# input_norm of norm_before_fc (0.5.17+; 0.5.14 - 0.5.16 build none: refused there).
# SGLang's EAGLE (1) head (models/llama_eagle.py LlamaForCausalLMEagle, the same in the 0.5.14, 0.5.15, 0.5.17, 0.5.18,
# 0.5.20 and 0.5.21 wheels, read 2026-12-03): LlamaModel builds embed_tokens [vocab, h], num_hidden_layers Llama decoder
# layers over h inputs (layer 0's input_layernorm deleted), fc = torch.nn.Linear(2h, h) (with its bias: nn.Linear's
# default), no final norm; LlamaForCausalLMEagle adds lm_head ParallelLMHead(hot_vocab_size, else vocab_size, h). The
# draft worker's init_lm_head (speculative/eagle_worker_v2.py) then calls set_embed_and_head: both tables are swapped for
# the target's after the pools are sized (resident while they are: kvplan.sglang.eagle3_resident_copy_bytes with no
# draft_vocab_size); with --speculative-token-map it first clones the target's head's hot rows (a kept copy kvplan
# does not plan: the flag is not read). The layers and fc are built here by the vLLM EAGLE rules, fc given its bias.
SGLANG_RULES = (0, 30, 0)
SGLANG_NORM_BEFORE_FC = "0.5.17"


def sglang_draft_head(draft: DraftSpec, sglang_version: str, target, dtype: str | None = None) -> DraftHead:
    """The EAGLE-3 or EAGLE (1) head SGLang ``sglang_version`` (a kvplan SGLANG_PROFILES key) keeps for good beside
    ``target``: the parameters above (no embed_tokens, no d2t; an EAGLE-3 lm_head only with draft_vocab_size, an EAGLE
    (1) head none). Refuses (PlanInputError naming --speculative-algorithm) what kvplan did not read for SGLang, and a
    config whose architectures is not the class SGLang builds for the method (SGLANG_HEAD_ARCH). Worked numbers:
    Llama-3.1-8B's SpecForge EAGLE-3 head (h 4,096): q/k/v 8,192 x 6,144 + o 4,096^2 + MLP 3 x 4,096 x 14,336 + 3 norms +
    fc 12,288 x 4,096 + norm + lm_head 32,000 x 4,096 = 424,689,664 parameters, 849,379,328 B in 16 bits at TP 1
    (draft_rank_weight_bytes); an EAGLE (1) head of the same dims (one layer): q/k/v 4,096 x 6,144 + o 4,096^2 + MLP
    3 x 4,096 x 14,336 + post_attention_layernorm 4,096 + fc 8,192 x 4,096 + bias 4,096 = 251,666,432 parameters,
    503,332,864 B."""
    from kvplan.sglang import SGLANG_PROFILES, SPECULATIVE_FLAG
    from kvplan.spec import Linear

    cfg = draft.config
    if draft.method not in SGLANG_HEAD_ARCH:
        raise PlanInputError(SPECULATIVE_FLAG, f"{draft.method.upper()} with its own draft head: kvplan plans SGLang's "
                             "EAGLE3 (LlamaForCausalLMEagle3) and EAGLE (LlamaForCausalLMEagle) heads only")
    want = SGLANG_HEAD_ARCH[draft.method]
    archs = cfg.get("architectures") or []
    if archs != [want]:
        raise PlanInputError(SPECULATIVE_FLAG, f"{draft.name}: architectures {archs!r}: SGLang builds the class the "
                             f"draft config names (no renaming), and {draft.method.upper()} drafts with {want} "
                             f"(models/llama_eagle{'3' if draft.method == 'eagle3' else ''}.py); another class is not "
                             "an EAGLE head kvplan models for SGLang")
    if cfg.get("tie_word_embeddings"):
        raise PlanInputError(SPECULATIVE_FLAG, f"{draft.name}: tie_word_embeddings: SGLang's head then uses its "
                             "embed_tokens as lm_head and swaps only the embedding: not modelled")
    if draft.method == "eagle" and "hot_vocab_size" in cfg:
        raise PlanInputError(SPECULATIVE_FLAG, f"{draft.name}: hot_vocab_size: SGLang's EAGLE head then builds a "
                             "reduced lm_head (models/llama_eagle.py): not modelled")
    norm_before_fc = bool((cfg.get("eagle_config") or {}).get("norm_before_fc", cfg.get("norm_before_fc", False)))
    order = list(SGLANG_PROFILES)
    if norm_before_fc and order.index(sglang_version) < order.index(SGLANG_NORM_BEFORE_FC):
        raise PlanInputError(SPECULATIVE_FLAG, f"{draft.name}: norm_before_fc: SGLang builds its input_norm from 0.5.17 "
                             "(models/llama_eagle3.py); pick SGLang 0.5.17 or newer")
    head = _build_head(draft, SGLANG_RULES, target.vocab_size, target.hidden_size, dtype or target.dtype)
    if head.spec.hidden_size != target.hidden_size:
        raise PlanInputError(SPECULATIVE_FLAG, f"{draft.name}: hidden_size {head.spec.hidden_size:,} is not the "
                             f"target's {target.hidden_size:,}: SGLang's set_embed swaps in the target's embedding")
    update: dict[str, Any] = {"embeddings": ()}
    if "draft_vocab_size" not in cfg or draft.method == "eagle":
        update["lm_head"] = ()  # load_lm_head_from_target / set_embed_and_head: the full-vocab copy is the target's
    if draft.method == "eagle":  # torch.nn.Linear(2h, h): bias=True
        h = head.spec.hidden_size
        update["other"] = (Linear(name="fc", in_features=2 * h, out_features=h, bias=True, shard="replicated"),)
    from kvplan.params import count_params

    spec = head.spec.model_copy(update=update)
    return DraftHead(spec=spec, d2t_bytes=0, embed_shared=True, lm_head_shared="lm_head" in update,
                     params=count_params(spec).total_params, notes=head.notes)


def _build_head(draft: DraftSpec, release: tuple, target_vocab: int, target_hidden: int, dtype: str) -> DraftHead:
    from kvplan.families.blocks import embed, gated_mlp, rms
    from kvplan.spec import DecoderLayer, Linear

    base = _base_spec(draft)
    cfg = draft.config
    r = Reader(cfg, _field(""))  # the draft config's integers, refused by the Reader's rules as draft_config.<name>
    h, inter = base.hidden_size, r.int("intermediate_size", 1)
    nq, nkv, hd = base.num_attention_heads, base.num_key_value_heads, base.head_dim
    layers_n, vocab = base.num_hidden_layers, base.vocab_size
    notes: list[str] = []
    three = draft.method == "eagle3"
    if three and layers_n > 1 and release < MULTI_LAYER_EAGLE3:
        raise PlanInputError(FIELD, f"{draft.name}: {layers_n} EAGLE-3 layers: vLLM 0.10.2 / 0.11.0 build one "
                             "whatever num_hidden_layers says (a head its checkpoint does not match); plan it with a "
                             "0.11.1+ profile")
    dv = r.int("draft_vocab_size", vocab) if three else vocab
    if dv > vocab:
        raise ConfigError(_field("draft_vocab_size"), f"{dv} exceeds vocab_size {vocab}")
    if vocab != target_vocab:
        raise PlanInputError(FIELD, f"{draft.name}: vocab_size {vocab:,} is not the target's {target_vocab:,} (an "
                             "EAGLE head drafts in the target's vocabulary)")
    if three:
        aux = aux_hidden_states(cfg)
        if aux != 3 and release < AUX_FROM_CONFIG:
            raise PlanInputError(FIELD, f"{draft.name}: {aux} aux hidden states: vLLM through 0.21.0 builds fc over "
                                 "3; plan it with a 0.22+ profile")
        target_h = r.int("target_hidden_size", h)
        if target_h != target_hidden:
            raise PlanInputError(FIELD, f"{draft.name}: target_hidden_size {target_h:,} is not the target's "
                                 f"hidden_size {target_hidden:,}")
        fc_in = aux * target_h
    else:
        fc_in = 2 * h
    norm_before_fc = bool((cfg.get("eagle_config") or {}).get("norm_before_fc", cfg.get("norm_before_fc", False)))
    if norm_before_fc and not three:
        raise ConfigError(_field("norm_before_fc"), "an EAGLE-3 option; an EAGLE head has no such norm")
    if norm_before_fc and release < NORM_BEFORE_FC:
        raise PlanInputError(FIELD, f"{draft.name}: norm_before_fc needs vLLM 0.18+ (llama_eagle3.py input_norm); "
                             "this profile's release does not build it")

    def layer(i: int) -> DecoderLayer:
        width = 2 * h if three and i == 0 else h  # EAGLE-3 layer 0 reads embedding ++ hidden state
        attention = (Linear(name="q_proj", in_features=width, out_features=nq * hd),
                     Linear(name="k_proj", in_features=width, out_features=nkv * hd),
                     Linear(name="v_proj", in_features=width, out_features=nkv * hd),
                     Linear(name="o_proj", in_features=nq * hd, out_features=h, shard="row"))
        if three:  # every Eagle3 LlamaDecoderLayer builds hidden_norm
            norms = (rms("input_layernorm", h), rms("hidden_norm", h), rms("post_attention_layernorm", h))
        else:  # EAGLE layer 0: input_layernorm is nn.Identity
            norms = (rms("post_attention_layernorm", h),) if i == 0 else (
                rms("input_layernorm", h), rms("post_attention_layernorm", h))
        return DecoderLayer(cache=base.layers[0].cache, attention=attention, mlp=gated_mlp(h, inter), norms=norms)

    built = layers_n if (not three or release >= MULTI_LAYER_EAGLE3) else 1
    layers = tuple(layer(i) for i in range(built))
    # the draft's own table at PP 1: shared with the target's by shape (0.10.2 / 0.11.0) or when the checkpoint ships
    # none or an identical copy (0.11.1+); a head narrower or wider than the target (Llama-3.3-70B's EAGLE-3 head, vLLM
    # PR #19033) keeps its own in every release
    embed_shared = h == target_hidden and (release < SHARE_BY_CONTENT or not draft.own_embed_tokens)
    if three:
        # 0.11.1+: the checkpoint's own head (trained on the reduced vocabulary) is kept unless identical to the target's
        lm_head_shared = (0, 11, 0) <= release < SHARE_BY_CONTENT and dv == target_vocab and h == target_hidden
    else:
        lm_head_shared = True  # EagleLlamaForCausalLM builds no lm_head: the target's
    other = (Linear(name="fc", in_features=fc_in, out_features=h, shard="replicated"),)
    if norm_before_fc:
        other += (rms("input_norm", fc_in),)
    d2t = three and (dv != target_vocab or release < D2T_ONLY_REDUCED)
    head = (Linear(name="lm_head", in_features=h, out_features=dv, shard="vocab", quantizable=False),) if (
        three and not lm_head_shared) else ()
    spec = base.model_copy(update={
        "name": f"{draft.name} ({draft.method} head)", "dtype": dtype, "quantization": None,
        "embeddings": () if embed_shared else (embed(vocab, h),), "layers": layers,
        "final_norm": (rms("norm", h),) if three else (), "lm_head": head, "other": other, "towers": (),
        "mtp_layers": (), "mtp_other": (), "tie_word_embeddings": False, "num_hidden_layers": built})
    from kvplan.params import count_params

    return DraftHead(spec=spec, d2t_bytes=dv * D2T_BYTES if d2t else 0, embed_shared=embed_shared,
                     lm_head_shared=lm_head_shared, params=count_params(spec).total_params, notes=tuple(notes))


# What an SGLang EAGLE3 plan counts (shown as a warning in every one).
# (what it allocates after the pools: kvplan.sglang.draft_after_pool_note, a second warning in the same plans)
SGLANG_UNCOUNTED = ("EAGLE3 draft head (SGLang): its weights, its own embed_tokens (resident while the pool is sized), "
                    "its KV pool and the cell's draft layer are planned (--speculative-num-steps / "
                    "--speculative-eagle-topk / --speculative-num-draft-tokens size no pool SGLang profiles)")
SGLANG_EAGLE_UNCOUNTED = ("EAGLE draft head (SGLang, LlamaForCausalLMEagle): its weights (its layers and fc with its "
                          "bias), its own embed_tokens / lm_head (resident while the pool is sized), its KV pool and "
                          "the cell's draft layer are planned (--speculative-num-steps / --speculative-eagle-topk / "
                          "--speculative-num-draft-tokens size no pool SGLang profiles; --speculative-token-map is "
                          "not read)")
# What kvplan leaves out of an EAGLE plan (shown as a warning in every one).
UNCOUNTED = ("EAGLE draft head: its weights, rotary table and KV layers are planned; its proposer buffers, its "
             "forward in the profiling run and its CUDA graphs are not (small beside the target's; measure them)")


def weights_source(head: DraftHead, draft: DraftSpec, tp: int, engine: str = "vllm") -> str:
    """The plan term's source line: what the head holds and where the numbers come from (``engine``: whose files)."""
    spec = head.spec
    parts = [f"{draft.name}: {head.params:,} parameters in {counted(spec.num_hidden_layers, 'layer')} + fc"
             + (" (with its bias)" if any(o.name == "fc" and o.bias for o in spec.other) else "")
             + (" + its lm_head" if spec.lm_head else " (lm_head: the target's)")
             + (" + its embed_tokens" if spec.embeddings else " (embed_tokens: the target's)")]
    if head.d2t_bytes:
        parts.append(f"d2t {head.d2t_bytes:,} B int64")
    three = "3" if draft.method == "eagle3" else ""
    if engine == "sglang":
        parts.append(f"{spec.dtype}, draft TP {tp}; sglang/srt/models/llama_eagle{three}.py {SGLANG_HEAD_ARCH[draft.method]}"
                     ", loaded by the draft worker's TpModelWorker (speculative/eagle_worker_v2.py EagleDraftWorker) "
                     "before the target's pool is profiled")
    else:
        parts.append(f"{spec.dtype}, draft TP {tp}; vllm/model_executor/models/llama_eagle{three}.py, loaded by "
                     "v1/spec_decode/eagle.py EagleProposer.load_model (llm_base_proposer.py "
                     "SpecDecodeBaseProposer.load_model from 0.20)")
    if draft.source:
        parts.append(f"config: {draft.source}")
    return "; ".join(parts)


def draft_rank_weight_bytes(head: DraftHead, tp: int, weight_format: str | None = None) -> int:
    """Bytes of the head on one rank (draft TP = the target's): its components laid out as vLLM's layers shard them
    (kvplan.parallel.rank_weight_bytes: q/k/v and MLP split, KV heads replicated when TP > kv heads, lm_head rows padded
    to 64 then split, norms and fc whole) in the target's dtype, + the int64 d2t map on every rank.
    Worked number: Llama-3.1-8B's EAGLE-3 head at TP 1, bf16: 424,689,664 x 2 + 256,000 = 849,635,328 B."""
    from kvplan.parallel import Layout, rank_weight_bytes

    return rank_weight_bytes(head.spec, Layout(tp=tp), 0, weight_format) + head.d2t_bytes


def draft_rope_bytes(head: DraftHead, target, vllm_version: str, dtype_bytes: int, max_model_len: int | None = None
                     ) -> int:
    """The head's rotary cos/sin table (vLLM get_rope: one per distinct parameter set, so none when the target's has
    the same parameters): rows x rotary_dim x dtype bytes. From 0.27.0 vLLM lengthens a shorter draft table to the
    target's max_model_len (``_maybe_override_draft_max_position_embeddings``, "e.g. 2048 for
    yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", vLLM #48894): ``max_model_len`` (the plan's; None: the target's
    max_position_embeddings). Before 0.27: the draft's own max_position_embeddings. Llama-3.1-8B's EAGLE-3 head (2,048
    positions, rope 10,000): 2,048 x 128 x 2 = 524,288 B through 0.26; from 0.27 131,072 x 128 x 2 = 33,554,432 B at
    the full 131,072 tokens, 8,192 x 128 x 2 = 2,097,152 B at --max-model-len 8192."""
    from kvplan.engines import vllm_release
    from kvplan.parallel import Layout
    from kvplan.vllm_layouts import vllm_rope_cache_bytes

    spec = head.spec
    caches = spec.rope_caches
    release = vllm_release(vllm_version)
    length = max_model_len or target.max_position_embeddings
    if release >= ROPE_TARGET_LENGTH and length:
        caches = tuple(c.model_copy(update={"max_position": max(c.max_position, length)})
                       if c.rope_type in CACHE_ONLY_ROPE_TYPES or release < (0, 32, 0) else c for c in caches)
    own = tuple(c for c in caches if all(c.model_copy(update={"name": t.name, "layer_types": t.layer_types}) != t
                                         for t in target.rope_caches))
    if not own:
        return 0
    return vllm_rope_cache_bytes(spec.model_copy(update={"rope_caches": own}), Layout(), 0, vllm_version, dtype_bytes)


def check_plan(draft: DraftSpec | None, engine_name: str, layout, target, method: str = "eagle3") -> None:
    """Refuse an EAGLE plan kvplan does not model: no draft given, another engine, pipeline parallelism, a target
    with MLA / recurrent-state / other layer kinds (their KV groups beside a Llama head were not read), a TP the
    head's heads do not divide."""
    from kvplan.parallel import check_layout

    if draft is None and engine_name == "sglang" and method == "eagle":
        raise PlanInputError("--speculative-draft-model-path", "EAGLE with a draft head of its own needs that head's "
                             "config.json (a LlamaForCausalLMEagle head: the CLI's --draft-config PATH); kvplan ships "
                             "no EAGLE (1) head, so this draft path is not planned")
    if draft is None and engine_name == "sglang":
        raise PlanInputError("--speculative-draft-model-path", "EAGLE3 needs its draft head: a head kvplan ships for "
                             "this model (kvplan/presets/DRAFTERS.json) or its config.json (--draft-config PATH)")
    if draft is None:
        raise PlanInputError(FIELD, "an eagle / eagle3 method needs its draft head: name a known drafter as "
                             "\"model\" or give its config.json (--draft-config PATH)")
    if engine_name not in ("vllm", "sglang"):
        raise PlanInputError(FIELD, f"EAGLE draft heads are planned for vLLM and SGLang only, not {engine_name}")
    field = "--speculative-algorithm" if engine_name == "sglang" else FIELD  # the engine's own flag
    if draft.method != method:  # each engine builds the head by its method (vLLM's Eagle<arch> / Eagle3<arch>
        # renaming, SGLang's is_eagle3() aux states and init_lm_head): a head of the other kind is not that head
        raise PlanInputError(field, f"{draft.name} is an {draft.method} head, not {method}: plan it with the method "
                             "it was trained for")
    if layout.pp > 1:
        raise PlanInputError(field, "an EAGLE head with pipeline parallelism is not modelled (vLLM then loads its "
                             "embedding separately on the last stage): plan it with --pipeline-parallel-size 1")
    kinds = set(target.layer_kinds)
    if kinds - {"full_attention", "sliding_attention"}:
        raise PlanInputError(field, f"an EAGLE head beside {target.name}'s {', '.join(sorted(kinds))} layers is not "
                             "modelled (kvplan plans it beside full / sliding-window attention targets)")
    try:
        check_layout(_base_spec(draft), type(layout)(tp=layout.tp))
    except PlanInputError as exc:
        raise PlanInputError(exc.field, f"the draft head {draft.name}: {exc.message}") from None


def read_draft_config(path: str) -> dict[str, Any]:
    """The draft's config.json from a file or its checkpoint folder (read as data, capped like every config)."""
    from kvplan.hf_config import MAX_CONFIG_BYTES, load_config_text

    p = Path(path).expanduser()
    try:
        if p.is_dir():
            p = p / "config.json"
        with p.open("rb") as f:
            data = f.read(MAX_CONFIG_BYTES + 1)
    except (OSError, ValueError) as exc:
        raise PlanInputError("--draft-config", f"cannot read {str(path)[:200]}: "
                             f"{getattr(exc, 'strerror', None) or exc}") from None
    try:
        cfg = load_config_text(data)
    except ConfigError as exc:
        raise PlanInputError("--draft-config", f"{str(path)[:200]}: {exc.message}") from None
    return cfg
