"""Goldens for tests/test_parse_equivalence.py: what parse_config, weight_bytes and two plans give for
every preset, every config fixture and a few synthetic quantization configs.

The JSON fixture tests/fixtures/parse_golden.json was written by this module run with the code of
commit 651cebe (main before the parse speed-ups, branch parsefast):

    git worktree add /tmp/pfbase 651cebe && cp tests/parse_golden.py /tmp/pfbase/tests/
    PYTHONPATH=/tmp/pfbase python /tmp/pfbase/tests/parse_golden.py > tests/fixtures/parse_golden.json

(PYTHONPATH picks the tree whose kvplan is measured; this file only uses the public API, so it runs
unchanged against the old tree). Each entry holds sha256 of the spec's ``model_dump_json()``, the
exact weight bytes as the checkpoint ships, and sha256 of ``Plan.model_dump_json()`` for two layouts
(H200 TP1 and H100-SXM TP8 at 8,192 tokens), or the exception (``Type: message``) where one is
refused. A speed change must leave every entry identical. Recorded as found at 651cebe: the vLLM plan
of a MoE whose ignore list keeps the routed experts of some layer unquantized stops on
``AssertionError: unquantized`` (vllm_layouts.vllm_moe_expert_bytes prices the "unquantized" format);
fixing that changes those ``plan`` entries on purpose. When a preset or fixture is added, or a
family's numbers change on purpose, rerun the command above with the current tree and review the diff.
Rewritten 2026-12-01 with the current tree when ModelSpec gained ``mm_prefix_lm``: every weight-byte and
refusal entry stayed identical to 651cebe's; only ``spec_sha256`` (the new field) and the uncompared plan
hashes moved. 2026-12-01 again when Tower gained ``profile`` (vLLM's dummy item, kvplan.vllm_mm): only the 20
towered specs' ``spec_sha256`` were rewritten, every other field as it was. 2026-12-01 a third time when Tower gained
``modalities`` / ``vllm_skip_from`` and TowerProfile ``others`` (--limit-mm-per-prompt): the same 20 hashes only. And when DeepSeek-V4's spec warning
was reworded (vLLM's KV layout now modelled, kvplan.vllm_dsv4): the three DeepSeek-V4 fixtures' ``spec_sha256`` only.
And when DeepSeek-V4's ``expert_dtype`` "fp4" was read (MXFP4 routed experts, kvplan.quantization.with_expert_dtype):
the three DeepSeek-V4 fixtures' entries only (digest() of each), ``weight_bytes`` of -flash 285,546,774,702 ->
155,623,489,710 and -pro 1,575,503,022,022 -> 849,783,277,510 (-nvfp4-fp8's unchanged: compressed-tensors).
Merging Qwen2.5-VL (branch qwen25vl) into that structure: the Qwen2.5-VL-7B preset's and Qwen2.5-VL-3B fixture's
``spec_sha256`` only (their tower gained ``modalities`` / ``vllm_skip_from`` and the video in ``others``).
When DeepSeek-V4's components were matched by their vLLM / checkpoint module names (``attn.fused_wqa_wkv``, ``attn.wq_b``,
families/deepseek_v4.VLLM_MODULE_NAMES): the -nvfp4-fp8 fixture's entry only (digest() of it), its "re:" FP8 block
targets now hit the attention: ``weight_bytes`` 168,885,164,214 -> 164,111,114,934.
When DeepSeek-V4's spec warning dropped "SGLang plans price every layer as a full cache of 584 B" (SGLang's own
DSV4 pools, kvplan.sglang_dsv4): the three DeepSeek-V4 fixtures' entries only (digest() of each), ``spec_sha256``
and the plan hashes; ``weight_bytes`` unchanged.
When DeepSeek-V4-Flash and -Pro became presets (the fixture files, verbatim): two new entries, ``preset:deepseek-v4-flash`` /
``-pro``, digest() of each; their spec and weight bytes equal the fixtures' entries (same config, same parse).
When DeepSeek-V4's vLLM note said 0.31 - 0.33 exact (kvplan.vllm_dsv4, the 0.31 / 0.32 / 0.33 wheels read): the five
DeepSeek-V4 entries (two presets, three fixtures) only, ``spec_sha256`` (the reworded warning) and plan hashes; weight bytes unchanged.
Merging dsv4s and dsv4v (both reworded that warning; one sentence each): the same five entries, ``spec_sha256`` and the
plan hashes regenerated with digest(); weight bytes unchanged.
When eight 2026 models became presets (branch presets26): eight new entries only, ``preset:glm-5.1`` / ``glm-5.2`` /
``kimi-k2.6-nvfp4`` / ``nemotron-3-ultra-550b-a55b`` / ``qwen3.5-35b-a3b`` / ``qwen3.5-122b-a10b`` / ``qwen3.6-27b-nvfp4`` /
``qwen3.6-35b-a3b-nvfp4``, digest() of each; the four that are fixture files too have their fixture's spec and weight bytes.
And one new fixture, ``fixture:kimi-k3.json`` (digest(): the refusal naming text_config.routed_expert_hidden_size).
Then two more new presets, ``preset:glm-5.2-fp8`` and ``preset:minimax-m2.5`` (digest() of each).
When the SGLang 0.5.21 line (0.5.21 - 0.5.23, kvplan.sglang_dsv4 rule "page_padded") made that warning say 0.5.14 - 0.5.23
exact: the same five DeepSeek-V4 entries, ``spec_sha256`` and the plan hashes (the reworded warning); weight bytes
unchanged.
When DeepSeek-V4.1 was refused by name (families/deepseek_v4.deepseek_v41_refusal): one new entry,
``fixture:deepseek-v4.1-flash.json`` (digest() of it, the refusal); no other entry changed.
When six second-half-2026 models became presets (branch presets27): six new entries only, ``preset:qwen3.8-2.4t-a95b`` /
``-fp8``, ``glm-5.3`` / ``glm-5.3-fp8``, ``glm-5.2-nvfp4``, ``kimi-k2.7-code-nvfp4``, digest() of each; no other entry moved.
Then, when a GLM-5.2-style MTP layer gained its own indexer (vLLM builds one on every MTP layer; the last decoder layer
is a "shared" one): the entries of the six configs with that layout, ``fixture:glm-5.2.json`` and ``preset:glm-5.2`` /
``glm-5.2-fp8`` / ``glm-5.2-nvfp4`` / ``glm-5.3`` / ``glm-5.3-fp8``, digest() of each: ``spec_sha256`` and the plan hashes;
weight bytes unchanged (the MTP layer is outside them).
And when the ignore lists were read on the MTP layers too (checkpoint layer num_hidden_layers + j): ``preset:glm-5.2-nvfp4``
only (its "model.layers.78*" keeps the MTP layer bf16), digest(); weight bytes unchanged; no other entry moved.
When the Qwen3.5 / 3.6 / 3.8 MTP layer was built (mtp_num_hidden_layers, families/qwen3_next.mtp_fields; the spec's
mtp_layers / mtp_other and a "1 multi-token-prediction layer(s)" skipped line): the eight Qwen3.5-family presets and
the two Qwen3.6 NVFP4 fixtures, digest() of each: ``spec_sha256`` and plan hashes; weight bytes unchanged (the MTP layer
is outside them). qwen3-next-80b-a3b (no mtp_num_hidden_layers in the preset) unchanged.
When MLAIndexerAttention gained ``index_topk`` (the width of vLLM's DSA top-k index buffer, kvplan.vllm_layouts): the
nine DSA entries, ``fixture:glm-5.2.json``, ``preset:deepseek-v3.2`` / ``glm-5`` / ``glm-5.1`` / ``glm-5.2`` / ``glm-5.2-fp8`` /
``glm-5.2-nvfp4`` / ``glm-5.3`` / ``glm-5.3-fp8``, digest() of each: ``spec_sha256`` and the plan hashes; weight bytes unchanged.
When the DeepSeek-V4 model note was split by engine (families/deepseek_v4.VLLM_V4_NOTE / v4_plan_note: a plan carries
only its engine's part): the five DeepSeek-V4 entries, ``fixture:deepseek-v4-flash.json`` / ``-flash-nvfp4-fp8.json`` /
``-pro.json`` and ``preset:deepseek-v4-flash`` / ``-pro``, digest() of each: ``spec_sha256`` and the plan hashes; weight
bytes unchanged.
When the skipped-layer notes said "1 multi-token-prediction layer" instead of "1 ... layer(s)" (kvplan.units.counted,
2026-12-03): the 25 entries with MTP layers (DeepSeek-V3 / V3.2 / V4, GLM-5.x, Qwen3.5 / 3.6 / 3.8), ``spec_sha256``
only (the ``skipped`` text is the one field that differs); weight bytes and refusals unchanged.
And when the DeepSeek-V4.1 refusal was reworded (no README pointer): ``fixture:deepseek-v4.1-flash.json``, digest().
When DeepSeek-V4's MTP layer was built (families/deepseek_v4.mtp_fields: vLLM's DeepSeekV4MTP draft), its cos/sin
tables read (float32, one per rope theta), its e_proj / h_proj formats recorded (category "other" overrides at
layer 43) and the CSA caches gained ``indexer_topk``: the five DeepSeek-V4 entries
(two presets, three fixtures), digest() of each: ``spec_sha256`` and the plan hashes; weight bytes unchanged (the MTP
layer is outside them).
When DeepSeek-V4.1 was built natively (families/deepseek_v41.py): ``fixture:deepseek-v4.1-flash.json`` only, digest():
the file now stops on its EXL3 quantization_config (a requantization vLLM does not load), not on the V4.1 refusal.
2026-12-03, when TowerProfile gained ``kept_buffer_bytes`` (MoonViT's kept RoPE table, kvplan.vllm_mm) and ModelSpec
``quantization_method``: the 28 towered / ModelOpt-mixed entries' ``spec_sha256`` only (rewritten by comparing each
entry's digest(); every ``parse`` and ``weight_bytes`` asserted identical before the hash was replaced).
"""

import hashlib
import json
from pathlib import Path

from kvplan import parse_config, preset_config, preset_names
from kvplan.engines import EngineConfig
from kvplan.gpus import get_gpu
from kvplan.parallel import Layout
from kvplan.plan import plan
from kvplan.weights import weight_bytes

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "configs"
QC_ONLY = (".quantization_config.json", ".hf_quant_config.json")  # a quantization_config alone
QC_BASES = ("llama-3.1-8b", "qwen3-30b-a3b")  # dense and MoE bases the quantization-only fixtures ride on

# Synthetic lists exercising every way format_overrides matches a module name (plain names on dot
# boundaries, layer-indexed names, parents, per-expert names, globs with and without a layer index,
# regexes, mixed precision with a first-match order). Kept small; not real checkpoints.
SYNTHETIC = {
    "fp8-plain-and-layer": {"quant_method": "fp8", "weight_block_size": [128, 128], "ignored_layers": [
        "lm_head", "mlp.gate", "self_attn.o_proj", "model.layers.3.mlp", "model.layers.0.self_attn.q_proj",
        "layers.5", "model.layers.7.mlp.experts.3.down_proj", "model.layers.7.mlp.experts.200.up_proj",
        "model.layers.2.mlp.experts.0", "0.self_attn", "embed_tokens", "norm", "layers.9.mlp.gate_proj."]},
    "modelopt-globs": {"quant_method": "modelopt", "quant_algo": "NVFP4", "exclude_modules": [
        "lm_head", "model.layers.1*", "*.self_attn.k_proj", "model.layers.[23].mlp*", "*experts.1?.*",
        "model.language_model.layers.4.*", "*mlp.gate", "transformer.*"]},
    "ct-regex": {"quant_method": "compressed-tensors", "config_groups": {"g": {
        "weights": {"num_bits": 8, "type": "float", "strategy": "channel"},
        "input_activations": {"num_bits": 8, "type": "float", "dynamic": True}, "targets": ["Linear"]}},
        "ignore": ["re:.*lm_head", r"re:model\.layers\.(1|4)\..*", r"re:.*\.v_proj$", "re:.*experts\\.2\\..*"]},
    "ct-mixed-targets": {"quant_method": "compressed-tensors", "config_groups": {
        "a": {"weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128},
              "targets": [r"re:.*layers\.[0-3]\..*", "re:.*o_proj"]},
        "b": {"weights": {"num_bits": 8, "type": "float", "strategy": "tensor"},
              "input_activations": {"num_bits": 8, "type": "float", "dynamic": True},
              "targets": ["re:.*mlp.*", "model.layers.6.self_attn.q_proj"]}},
        "ignore": ["lm_head", "model.layers.5.self_attn"]},
    "modelopt-mixed": {"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION", "quantized_layers": {
        "model.layers.0.self_attn.q_proj": {"quant_algo": "FP8"}, "model.layers.1.mlp": {"quant_algo": "NVFP4"},
        "model.layers.*.mlp.experts.*": {"quant_algo": "NVFP4"}, "model.layers.2.mlp.experts.5.down_proj":
        {"quant_algo": "FP8"}, "*self_attn*": {"quant_algo": "FP8"}}, "exclude_modules": ["model.layers.3.*"]},
    "gptq-dynamic-skip": {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": True,
                          "dynamic": {r"-:.*\.layers\.0\..*": {}, r"+:.*down_proj": {"bits": 8, "group_size": 64}},
                          "modules_to_not_convert": ["lm_head", "layers.2.self_attn"], "lm_head": True},
}
SYNTHETIC_BASES = ("llama-3.1-8b", "qwen3-30b-a3b", "gemma-4-26b-a4b")
LAYOUTS = (("H200", Layout(tp=1)), ("H100-SXM", Layout(tp=8)))
ENGINE = EngineConfig(max_model_len=8192)


def cases() -> dict[str, dict]:
    """{case name: config dict}, fresh dicts each call."""
    out = {f"preset:{n}": preset_config(n) for n in preset_names()}
    for path in sorted(FIXTURES.glob("*.json")):
        if path.name == "SOURCES.json":
            continue
        cfg = json.loads(path.read_text())
        if path.name.endswith(QC_ONLY):
            for base in QC_BASES:
                out[f"fixture:{path.name}@{base}"] = {**preset_config(base), "quantization_config": cfg}
        else:
            out[f"fixture:{path.name}"] = cfg
    for name, qc in SYNTHETIC.items():
        for base in SYNTHETIC_BASES:
            out[f"synthetic:{name}@{base}"] = {**preset_config(base), "quantization_config": json.loads(json.dumps(qc))}
    return out


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _refusal(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}"


def digest(cfg: dict, plans: bool = True) -> dict:
    """What one config gives: spec hash, weight bytes and (``plans``) two plan hashes (or the refusals)."""
    try:
        spec = parse_config(cfg)
    except Exception as exc:  # noqa: BLE001 -- a refusal is part of the result
        return {"parse": _refusal(exc)}
    out = {"spec_sha256": _sha(spec.model_dump_json()), "weight_bytes": weight_bytes(spec).total_bytes}
    for gpu, layout in LAYOUTS if plans else ():
        key = f"plan {gpu} tp{layout.tp}"
        try:
            out[key] = _sha(plan(spec, get_gpu(gpu), ENGINE, layout).model_dump_json())
        except Exception as exc:  # noqa: BLE001
            out[key] = _refusal(exc)
    return out


if __name__ == "__main__":
    print(json.dumps({name: digest(cfg) for name, cfg in cases().items()}, indent=1, sort_keys=True))
