"""vLLM's speculative method ``draft_model``: a separate, smaller LM of the target's vocabulary drafts the tokens
(``--speculative-config '{"method": "draft_model", "model": "Qwen/Qwen3-0.6B", "num_speculative_tokens": 4}'``; with
"method" omitted vLLM names a model path that is no EAGLE / MTP / ngram one a draft model too).

Read in the vllm 0.10.0 - 0.33.0 wheels (2026-12; the rules' first releases below):
- 0.10 - 0.14.1 V1 refuse it: engine/arg_utils.py ``"Draft model speculative decoding is not supported yet. Please
  consider using other speculative decoding methods such as ngram, medusa, eagle, or mtp."`` (0.11.0 - 0.14.1; 0.10.x
  in other words); 0.15.0 brings
  v1/spec_decode/draft_model.py ``DraftModelProposer`` (gpu_model_runner: ``uses_draft_model()``).
- The draft is its own ModelConfig (config/speculative.py __post_init__): ``dtype=target_model_config.dtype`` (the
  target's served dtype), ``quantization`` the speculative config's (None: the draft checkpoint's own
  quantization_config; the target's --quantization is not applied), ``max_model_len`` = min(the draft's, the
  target's) (``_maybe_override_draft_max_model_len``). Its rotary table is *not* stretched to the target's length (0.27+
  ``_maybe_override_draft_max_position_embeddings`` is for eagle / eagle3 only, ``method != "draft_model"`` from
  0.32): get_rope builds the draft's own table of its max_position_embeddings rows unless the target built one with
  the same parameters (get_rope caches instances by parameter set).
- Loaded by ``get_model(vllm_config=draft_vllm_config, prefix="draft_model")`` with ``quant_config=None`` (recomputed
  from the draft's config) and the draft's parallel config (``create_draft_parallel_config``: pipeline 1, TP =
  draft_tensor_parallel_size), inside gpu_model_runner.load_model, so it is in "Model loading took". No table is
  shared with the target (DraftModelProposer ``_maybe_share_embeddings`` / ``_maybe_share_lm_head``: "Draft models
  don't share embeddings / lm_head with the target model"; 0.15.0: load_model shares nothing either).
- TP: config/speculative.py allows 1 or the target's TP (``_verify_and_get_draft_tp``: "... cannot be other value
  than 1 or target model tensor_parallel_size", default the target's), and the V1 runner's DraftModelProposer refuses
  any but the target's (0.15.0 - 0.33.0, ``_raise_if_draft_tp_mismatch``); the V2 runner's speculator (0.31.0+,
  v1/worker/gpu/spec_decode) has no such check, but kvplan plans the draft at the target's TP only: its weights sharded
  over the target's TP ranks as the target's are (kvplan.parallel.rank_weight_bytes).
- Vocabulary: ``verify_equal_vocab_size_if_draft_model`` (SpeculativeConfig._verify_args, 0.15.0 - 0.33.0) refuses a draft whose vocab_size differs ("Target and draft
  model should have the same vocabulary size. ..."); 0.25.0+ ``use_heterogeneous_vocab`` lifts that with a
  VocabMapping (device tensors kvplan does not size: refused).
- KV cache: the draft's attention layers (``draft_model.model.layers.N.self_attn.attn``) are Attention layers of the
  same forward context, so get_kv_cache_spec gives each a spec beside the target's (the draft's KV heads / head_dim,
  the target's KV-cache dtype and block size) and kv_cache_utils groups them with the target's: one group when the
  specs are equal, ``UniformTypeKVCacheSpecs`` (one group, page = sum of the layers' pages) when all are full attention
  of one block size. KV bytes per token = target's + draft's.
- Runner: the V2 model runner lists "draft_model" unsupported through 0.30.0 (config/vllm.py
  ``_get_v2_model_runner_unsupported_features``: V1 then), runs it from 0.31.0; 0.33.0's V2 lowers max_model_len to a
  shorter draft's (``_limit_max_model_len_to_draft``; 0.32.0 does not).
- Profile run: the drafter's dummy_run follows the target's forward (sequential, so beside the sampler peak), and the
  dummy rejection-sampler run uses one draft token per request (gpu_model_runner._dummy_sampler_run:
  ``draft_token_ids = [[0] for _ in range(num_reqs)]``): num_speculative_tokens sizes no profile-run buffer; it sizes
  the proposer's small per-request buffers and, with draft_sample_method "probabilistic" (0.33 V2), a
  [max_num_reqs, k, vocab] logits cache (refused). The V2 sampler state's grammar bitmask counts k
  (kvplan.engines.vllm_v2_sampler_state_bytes).

Worked number (tests/test_draft_model.py): Llama-3.1-70B + Llama-3.2-1B at TP 4, bf16: the draft's rank holds
309,004,288 of its 1,235,814,400 parameters (tied embedding 128,256 / 4 x 2,048; 16 layers of 15,208,448) = 618,008,576 B,
+ its own llama3 rotary table 131,072 x 64 x 2 = 16,777,216 B (the target's is 128 wide), + the allocator's rounding of
the 125.25 MiB embedding shard to 126 MiB (786,432 B) = 635,572,224 B; KV per token and rank 80 x 2 x 2 x 128 x 2 +
16 x 2 x 2 x 64 x 2 = 81,920 + 8,192 = 90,112 B.
"""

import functools
import json
from collections.abc import Mapping
from typing import Any

from kvplan.drafter import DraftSpec
from kvplan.errors import ConfigError, PlanInputError

FIELD = "--speculative-config"
METHOD = "draft_model"
FIRST_RELEASE = (0, 15, 0)  # v1/spec_decode/draft_model.py appears in 0.15.0; 0.14.1's arg_utils refuses the method
V2_RUNNER = (0, 31, 0)  # "draft_model" leaves the V2 runner's unsupported list in 0.31.0 (listed in 0.30.0)
LENGTH_LIMIT = (0, 33, 0)  # VllmConfig._limit_max_model_len_to_draft: in 0.33.0, not in 0.32.0
HETERO_VOCAB = (0, 25, 0)  # use_heterogeneous_vocab / VocabMapping: in 0.25.0, not in 0.24.0
# vLLM's refusal texts (quoted where kvplan refuses the same plan): 0.11.0 - 0.14.1 arg_utils.py (0.10.x: "Speculative
# decoding with draft model is not supported yet. ... or deepseek_mtp.")
OLD_RELEASE_TEXT = ("Draft model speculative decoding is not supported yet. Please consider using other speculative "
                    "decoding methods such as ngram, medusa, eagle, or mtp.")
# --speculative-config keys that change what vLLM allocates for a draft model in ways kvplan does not size
UNMODELLED_KEYS = {
    "quantization": "a draft quantization method given here (kvplan reads the draft config's quantization_config)",
    "use_heterogeneous_vocab": "heterogeneous vocabularies (VocabMapping device tensors, vLLM 0.25+)",
    "parallel_drafting": "parallel drafting (PARD: K extra query slots per request)",
    "kv_cache_dtype": "a draft KV-cache dtype of its own (vLLM 0.33)",
    "max_model_len": "a draft max_model_len of its own",
    "draft_sample_method": "draft_sample_method 'probabilistic' (a cached [max_num_reqs, k, vocab] logits tensor)",
    # config/speculative.py SpeculativeConfig.moe_backend (0.19.0+): the V1 proposer's _create_draft_vllm_config
    # puts it in the draft's kernel_config, the V2 speculator (0.31.0+) ignores it; kvplan lays the draft's experts
    # out in the target's --moe-backend (read 2026-12-03 in the 0.19.0 - 0.33.0 wheels)
    "moe_backend": "a draft MoE backend of its own (the V1 runner applies it, the V2 runner ignores it)",
}


def draft_preset_name(model: str) -> str | None:
    """The name of the kvplan preset a draft "model" names, read as --model is (kvplan.vllm_args.preset_for_model: a
    preset name, its HF repo or an instruct / chat variant of it, "meta-llama/Llama-3.2-1B-Instruct" ->
    "llama-3.2-1b"; a trailing "/" and spaces dropped); None where no preset matches."""
    from kvplan.vllm_args import preset_for_model

    return preset_for_model(model.strip().rstrip("/"))


def load_draft_model(model: str) -> DraftSpec:
    """The draft model of --speculative-config "model": a kvplan preset by name or HF repo id (kvplan/presets)."""
    from kvplan.presets import manifest, preset_config

    name = draft_preset_name(model)
    if name is None:
        raise PlanInputError(FIELD, f"method draft_model: kvplan ships no config for the draft model "
                             f"{model[:120]!r} (a preset name or its HF repo, e.g. Qwen/Qwen3-0.6B, "
                             "meta-llama/Llama-3.2-1B); give its config.json (kvplan plan --draft-config PATH)")
    entry = next(e for e in manifest() if e["name"] == name)
    return parse_draft_model(preset_config(name), name, f"{entry['hf_repo']} ({entry['source']})")


def parse_draft_model(cfg: Any, name: str, source: str = "") -> DraftSpec:
    """A draft-model DraftSpec from its config.json dict, checked now (refused here, naming the field)."""
    if not isinstance(cfg, Mapping):
        raise ConfigError("draft_config", "must be a JSON object (the draft model's config.json)")
    draft = DraftSpec(name=name[:200], method=METHOD, config_json=json.dumps(cfg, sort_keys=True), source=source[:300])
    draft_spec(draft)
    return draft


@functools.lru_cache(maxsize=64)
def draft_spec(draft: DraftSpec):
    """The draft's ModelSpec, built natively by the family builders (kvplan.families), after refusing what kvplan does
    not plan as a vLLM draft model: another basis than native, towers, M-RoPE, layers that are not full attention."""
    from kvplan.hf_config import parse_config

    try:
        spec = parse_config(draft.config, name=draft.name, transformers=False)
    except ConfigError as exc:
        raise ConfigError(f"draft_config.{exc.field}", exc.message) from None
    if spec.basis != "native":
        raise ConfigError("draft_config.model_type", f"{spec.model_type!r}: kvplan plans draft models of the families "
                          "it builds natively only")
    if spec.towers:
        raise ConfigError("draft_config.vision_config", "a multimodal draft model is not modelled")
    if any(c.rope_type == "mrope" for c in spec.rope_caches):
        raise PlanInputError(FIELD, f"{draft.name}: vLLM's V1 proposer refuses an M-RoPE draft model (\"Speculative "
                             "Decoding with draft models does not support M-RoPE yet\"); not modelled")
    kinds = set(spec.layer_kinds)
    if kinds != {"full_attention"}:
        raise ConfigError("draft_config.layer_types", f"a draft model with {', '.join(sorted(kinds))} layers is not "
                          "modelled (kvplan plans full-attention draft models, whose KV groups it read)")
    return spec.model_copy(update={"mtp_layers": (), "mtp_other": ()})  # vLLM builds the draft's LM only


def served_spec(draft: DraftSpec, dtype: str):
    """The draft as vLLM builds it: in the target's served dtype (its ModelConfig takes ``target_model_config.dtype``),
    its own quantization_config kept."""
    spec = draft_spec(draft)
    return spec if spec.dtype == dtype else spec.model_copy(update={"dtype": dtype})


def check_plan(draft: DraftSpec | None, engine, layout, target, max_len: int) -> list[str]:
    """Refuse a draft_model plan vLLM refuses or kvplan does not model; the notes to show with one it plans."""
    from kvplan.engines import vllm_release
    from kvplan.parallel import Layout, check_layout

    if draft is None or draft.method != METHOD:
        raise PlanInputError(FIELD, "method draft_model needs its draft model: name a preset as \"model\" (e.g. "
                             "Qwen/Qwen3-0.6B) or give its config.json (--draft-config PATH)")
    if engine.engine != "vllm":
        raise PlanInputError(FIELD, f"a draft model is planned for vLLM only, not {engine.engine}")
    release = vllm_release(engine.vllm_version)
    if release < FIRST_RELEASE:
        raise PlanInputError(FIELD, f"vLLM {engine.vllm_version} refuses method draft_model (\"{OLD_RELEASE_TEXT}\"; "
                             "V1 runs it from 0.15.0; V0's draft workers are not modelled)")
    if layout.pp > 1:
        raise PlanInputError(FIELD, "a draft model with pipeline parallelism is not modelled: plan it with "
                             "--pipeline-parallel-size 1")
    if engine.decode_context_parallel_size > 1:
        raise PlanInputError(FIELD, "a draft model with --decode-context-parallel-size is not modelled")
    from kvplan.vllm_mm import loads_tower

    if loads_tower(target, engine):
        raise PlanInputError(FIELD, f"{target.name} is multimodal: vLLM 0.15 - 0.2x refuse a draft model beside it "
                             "(\"Speculative Decoding with draft models does not support multimodal models yet\"), "
                             "later releases warn; not modelled (--language-model-only plans its text model)")
    spec = draft_spec(draft)
    if spec.vocab_size != target.vocab_size:
        raise PlanInputError(FIELD, "vLLM refuses it: \"Target and draft model should have the same vocabulary "
                             f"size. Target model vocab_size={target.vocab_size}. Draft model vocab_size="
                             f"{spec.vocab_size}. Using models with different tokenizers can cause out-of-bounds "
                             "errors during speculative decoding.\"")
    kinds = set(target.layer_kinds)
    target_caches = {layer.cache for layer in target.layers}
    if kinds - {"full_attention", "sliding_attention"}:
        raise PlanInputError(FIELD, f"a draft model beside {target.name}'s {', '.join(sorted(kinds))} layers is not "
                             "modelled (kvplan plans it beside full / sliding-window attention targets)")
    if kinds != {"full_attention"} and any(layer.cache not in target_caches for layer in spec.layers):
        raise PlanInputError(FIELD, f"{draft.name}'s attention layers differ from {target.name}'s full-attention "
                             "layers: their KV groups beside a sliding-window target were not verified")
    try:
        check_layout(spec, Layout(tp=layout.tp))
    except PlanInputError as exc:
        raise PlanInputError(exc.field, f"the draft model {draft.name}: {exc.message}") from None
    notes = []
    draft_len = spec.max_position_embeddings
    if draft_len and draft_len < max_len:
        if release >= (0, 32, 0):  # the "0.33" profile holds 0.32.0 (keeps the length) and 0.33.0 (lowers it)
            notes.append(f"{draft.name} holds {draft_len:,} positions, fewer than max_model_len {max_len:,}: planned "
                         "as vLLM 0.32.0 runs it; 0.33.0's V2 runner lowers max_model_len to the draft's "
                         f"(_limit_max_model_len_to_draft): plan --max-model-len {draft_len} for it")
        notes.append(f"{draft.name} holds {draft_len:,} positions: vLLM drafts no tokens for a request past them "
                     "(the draft's max_model_len is min(its own, the target's)); its KV layers still hold every token")
    if release < V2_RUNNER and release >= (0, 30, 0):
        notes.append("vLLM 0.30.0 runs draft_model on the V1 model runner (planned), 0.31.0 on the V2 runner")
    notes.append(UNCOUNTED)
    return notes


UNCOUNTED = ("draft model: its weights, rotary table and KV layers are planned; its proposer buffers (a few per-request "
             "and per-token vectors), its forward in the profiling run (after the target's) and its CUDA graphs are "
             "not (small beside the target's; measure them)")


def check_config_keys(value: Mapping) -> None:
    """Refuse --speculative-config keys that change a draft model's memory in ways kvplan does not size, and
    disable_padded_drafter_batch, which vLLM refuses for a draft model (0.15.0+ _raise_if_padded_drafter_batch_disabled,
    quoted)."""
    if value.get("disable_padded_drafter_batch"):
        raise PlanInputError(FIELD, "vLLM refuses it: \"Speculative Decoding with draft models only supports padded "
                             "drafter batch. ...\" (0.15.0; 0.33.0: \"... with draft models or parallel drafting only "
                             "supports padded drafter batch. Please unset disable_padded_drafter_batch in the "
                             "speculative_config.\")")
    for key, why in UNMODELLED_KEYS.items():
        given = value.get(key)
        if given in (None, False) or (key == "draft_sample_method" and given == "greedy"):
            continue
        raise PlanInputError(FIELD, f"{key} {str(given)[:40]!r}: {why} is not modelled for a draft model")


def weights_source(draft: DraftSpec, spec, tp: int, parts: str) -> str:
    from kvplan.params import count_params

    params = count_params(spec).total_params
    return (f"{draft.name}: {params:,} parameters ({spec.num_hidden_layers} layers, its own embed_tokens and lm_head: "
            f"no table shared with the target), {spec.quantization or spec.dtype}, sharded over TP {tp} as the "
            f"target's{parts}; vllm/v1/spec_decode/draft_model.py DraftModelProposer._get_model (load_model in 0.15): "
            "get_model(prefix=\"draft_model\")"
            + (f"; config: {draft.source}" if draft.source else ""))


@functools.lru_cache(maxsize=64)
def _candidates(vocab_size: int, model_type: str, params: int) -> tuple[tuple[str, ...], str | None]:
    from kvplan.params import count_params
    from kvplan.presets import manifest, preset_config

    found = []
    for entry in manifest():
        try:
            spec = draft_spec(DraftSpec(name=entry["name"], method=METHOD,
                                        config_json=json.dumps(preset_config(entry["name"]), sort_keys=True)))
        except (ConfigError, PlanInputError):
            continue  # not a draft model kvplan plans (a hybrid, a multimodal checkpoint, a sliding window)
        n = count_params(spec).total_params
        if spec.vocab_size == vocab_size and n < params:
            found.append((n, entry["name"], spec.model_type))
    found.sort()
    default = next((name for _, name, mt in found if mt == model_type), None)
    return tuple(name for _, name, _ in found), default


def draft_model_candidates(target) -> tuple[tuple[str, ...], str | None]:
    """The presets vLLM would take as ``target``'s draft model (its vocab_size: vLLM's equal-vocabulary rule), smaller
    than it and planned by kvplan, smallest first; and the default: the smallest of the target's own model_type (the
    same family, so the same tokenizer where kvplan can tell), None where there is none (the user chooses).
    Llama-3.1-70B -> ("llama-3.2-1b", "llama-3.2-3b", "llama-3.1-8b"), default "llama-3.2-1b"."""
    from kvplan.params import count_params

    return _candidates(target.vocab_size, target.model_type, count_params(target).total_params)
