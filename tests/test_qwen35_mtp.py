"""Qwen3.5 / Qwen3.6 / Qwen3.8 MTP speculative decoding on vLLM (kvplan issue 11): the checkpoint's mtp.* layer is
built (kvplan.families.qwen3_next.mtp_fields), loaded on vLLM's last stage, its full-attention layer joins the KV
groups, and the gated-DeltaNet states hold a conv column per draft token (kvplan.plan.spec_conv_layers).

Engine source read (wheels 0.17.0, 0.20.0, 0.29.0): vllm/model_executor/models/qwen3_5_mtp.py
(Qwen3_5MultiTokenPredictor: fc ColumnParallelLinear 2h -> h, three RMSNorms, mtp_num_hidden_layers full-attention
Qwen3_5DecoderLayer), v1/spec_decode/llm_base_proposer.py (an MTP draft shares the target's embed_tokens / lm_head),
layers/mamba/mamba_utils.py (gated_delta_net_state_shape: conv columns kernel - 1 + num_spec).

Log (public): nvidia/Qwen3.6-35B-A3B-NVFP4 on an NVIDIA GB10 (DGX Spark), vLLM 0.22.1rc1.dev26+g4721bb3aa, MTP with
2 draft tokens (search index file 56970046574, the log tests/test_vllm_layouts_quant.py quotes for its weights):
``--gpu-memory-utilization 0.85 --max-model-len 262144 --max-num-seqs 5 --max-num-batched-tokens 8192
--kv-cache-dtype fp8 --quantization modelopt --attention-backend flashinfer --moe-backend marlin
--enable-prefix-caching --enable-chunked-prefill --async-scheduling --speculative-config
'{"method":"mtp","num_speculative_tokens":2,"moe_backend":"triton"}'``: "Resolved architecture: Qwen3_5MoeMTP",
"Mamba cache mode is set to 'align'", "Using TRITON Unquantized MoE backend" (the drafter's), "Detected MTP model.
Sharing target model embedding weights", "Model loading took 21.93 GiB memory", "Setting attention block size to 2128
tokens", "Add 3 padding layers, may waste at most 10.00% KV cache memory", "Available KV cache memory: 74.76 GiB",
"GPU KV cache size: 6,455,296 tokens", "Maximum concurrency for 262,144 tokens per request: 24.62x". The GB10's
unified memory pool is not planned by kvplan (tests/test_engine_logs_2026e.py), so the pool is read from the logged
figure with --kv-cache-memory-bytes; the weights and the layout are kvplan's own.

Recipe (public): vllm-project/recipes models/Qwen/Qwen3.8-27B.yaml (commit 015a26cb06e8cd628a4b56433e05c34a1782b920),
"1x RTX 5090 - NVFP4 needs --enforce-eager", vLLM 0.26.1rc1.dev608: "152,917 [tokens] also capping --max-num-seqs 8
... The MTP head still fits (90,112 tokens, 0.754 acceptance)" (MTP with the recipe's 3 draft tokens). The four runs
without MTP are pinned in tests/test_engine_logs_2026d.py (nvidia's Qwen3.6-27B NVFP4 config standing in for
Inferact's build, so only the layout and the pool's changes between runs are compared). The MTP run's flags are not
spelled out; only the --language-model-only --max-num-seqs 8 run leaves room for it (the 75- and 112-block pools are
smaller than its 99 blocks less the draft's weights), so it is read as that run plus MTP.
"""

import json
from pathlib import Path

import pytest

from kvplan import load_preset, parse_config
from kvplan.engines import EngineConfig
from kvplan.errors import PlanInputError
from kvplan.gpus import get_gpu
from kvplan.params import count_params
from kvplan.parallel import Layout, mtp_rank_bytes
from kvplan.plan import MTP_UNCOUNTED, plan
from kvplan.units import GiB

from tests.test_engine_logs import close_gib
from tests.test_engine_logs_2026f import GB10
from tests.test_engine_logs_2026d import _rtx5090_eager
from tests.test_engine_logs_dec import _plan

FIXTURES = Path(__file__).parent / "fixtures" / "configs"

GB10_MTP = ("vllm serve nvidia/Qwen3.6-35B-A3B-NVFP4 --trust-remote-code --gpu-memory-utilization 0.85 "
            "--max-model-len 262144 --max-num-seqs 5 --max-num-batched-tokens 8192 --kv-cache-dtype fp8 --dtype auto "
            "--quantization modelopt --attention-backend flashinfer --moe-backend marlin --enable-prefix-caching "
            "--enable-chunked-prefill --async-scheduling")
MTP2 = " --speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":2,\"moe_backend\":\"triton\"}'"


def _nvfp4_35b():
    return parse_config(json.loads((FIXTURES / "qwen3.6-35b-a3b-nvfp4.json").read_text()), "qwen3.6-35b-a3b-nvfp4")


def _engine(**fields):
    return EngineConfig(vllm_version="0.29", max_model_len=32768, **fields)


# --------------------------------------------------------------------------------------- the MTP layer's parameters


def test_qwen3_5_35b_a3b_mtp_layer_parameters_by_hand():
    # h 2,048; 16 q heads x 256 with the output gate, 2 KV heads; 256 experts of I 512 + one shared expert of 512.
    # fc 4,096 x 2,048 = 8,388,608; pre_fc_norm_embedding / pre_fc_norm_hidden / norm 3 x 2,048 = 6,144; the layer:
    # norms 4,096, q 2,048 x 8,192 = 16,777,216, k + v 2 x 2,048 x 512 = 2,097,152, o 4,096 x 2,048 = 8,388,608,
    # q/k norms 512, router 256 x 2,048 = 524,288, experts 256 x 3 x 2,048 x 512 = 805,306,368, shared expert
    # 3 x 2,048 x 512 = 3,145,728 + its gate 2,048: 844,640,768 parameters, 1,689,281,536 B in bf16
    spec = load_preset("qwen3.5-35b-a3b")
    assert len(spec.mtp_layers) == 1 and spec.mtp_layers[0].cache.kind == "full_attention"
    assert count_params(spec).mtp_params == 844_640_768
    assert mtp_rank_bytes(spec, Layout()) == 1_689_281_536
    # not in the LM's totals (transformers builds no MTP layer): noted as shipped, loaded only for speculation
    assert "1 multi-token-prediction layer (loaded only for speculative decoding)" in spec.skipped


def test_qwen3_5_27b_dense_mtp_layer_parameters_by_hand():
    # h 5,120, 24 q heads x 256 (gated: 12,288 outputs), 4 KV heads, SwiGLU 17,408: fc 2 x 5,120 x 5,120 = 52,428,800,
    # 3 norms 15,360; layer norms 10,240, q 62,914,560, k + v 2 x 5,120 x 1,024 = 10,485,760, o 6,144 x 5,120 =
    # 31,457,280, q/k norms 512, MLP 3 x 5,120 x 17,408 = 267,386,880: 424,699,392 parameters
    spec = load_preset("qwen3.5-27b")
    assert count_params(spec).mtp_params == 424_699_392
    # TP 2: fc splits its output (ColumnParallelLinear), the layer splits as the decoder's full-attention layers
    # (4 KV heads: 2 a rank), the norms stay whole: 424,699,392 / 2 = 212,349,696 + half of the 26,112 norm
    # parameters again (13,056) = 212,362,752 parameters x 2 B on each rank
    half = mtp_rank_bytes(spec, Layout(tp=2))
    assert half < mtp_rank_bytes(spec, Layout()) and half == (
        2 * (26_214_400 + 15_360 + 10_240 + 31_457_280 + 5_242_880 + 15_728_640 + 512 + 133_693_440))


def test_nvfp4_checkpoint_keeps_its_mtp_layer_in_bf16():
    # nvidia's hf_quant_config ignores "mtp.layers.0*" and "mtp*": vLLM builds the draft unquantized ("Using TRITON
    # Unquantized MoE backend"), so the layer is the bf16 1,689,281,536 B of the hand count above, not NVFP4's
    spec = _nvfp4_35b()
    assert spec.quantization == "nvfp4-wo"
    assert mtp_rank_bytes(spec, Layout()) == 1_689_281_536
    # the mtp.* entries name no decoder layer: the target's layer 3 (full attention) keeps its FP8 q_proj
    q = next(o for o in spec.quantization_overrides if o.name == "q_proj" and o.format == "fp8-static")
    assert 3 in q.layers and 40 not in q.layers


def test_fp8_checkpoint_reads_modules_to_not_convert_at_the_mtp_layer():
    # Qwen3.8-2.4T-A95B-FP8 lists mtp.fc, mtp.layers.0.self_attn.{q,k,v,o}_proj, mtp.layers.0.mlp.shared_expert.* and
    # the router; its routed experts are not listed, so they stay fp8-block. The overrides sit at index 92 (= 92
    # decoder layers + MTP layer 0), which only mtp_rank_bytes reads
    spec = load_preset("qwen3.8-2.4t-a95b-fp8")
    n = len(spec.layers)
    at_mtp = {(o.category, o.name, o.format) for o in spec.quantization_overrides if n in o.layers}
    assert ("attention", "q_proj", "unquantized") in at_mtp and ("mlp", "shared_expert.down_proj", "unquantized") in at_mtp
    assert not any(c == "experts" for c, _, _ in at_mtp)
    assert mtp_rank_bytes(spec, Layout()) < mtp_rank_bytes(load_preset("qwen3.8-2.4t-a95b"), Layout())


# ---------------------------------------------------------------------------------------------- the plan on vLLM


def test_mtp_layer_joins_the_full_attention_group_and_its_kv():
    # Qwen3.5-35B-A3B: 10 full-attention + 30 GDN layers. With MTP the draft's full-attention layer makes 11:
    # group size min(11, 30) = 11 (30 >= 1.5 x 11), GDN groups 11 / 11 / 8 + 3 padding; bf16 KV per token
    # 11 x 2 KV heads x 256 x 2 (K, V) x 2 B = 22,528 B (20,480 without); bytes per block = 11 pages (10 without)
    spec = load_preset("qwen3.5-35b-a3b")
    off = plan(spec, get_gpu("H100-SXM"), _engine(), Layout())
    on = plan(spec, get_gpu("H100-SXM"), _engine(speculative_method="mtp", num_speculative_tokens=1), Layout())
    assert (off.ranks[0].kv_bytes_per_token, on.ranks[0].kv_bytes_per_token) == (20_480, 22_528)
    full = [g for g in on.kv_groups if g.kind == "full_attention"]
    assert [(g.layers, g.padding_layers) for g in full] == [(11, 0)]
    assert sorted(g.padding_layers for g in on.kv_groups if g.kind == "linear_attention") == [0, 0, 3]
    # bf16 pages: the GDN state 2,146,304 B (2,162,688 with the draft's conv column) aligns the block to
    # 16 x cdiv(state, 16 x 2,048 B) = 1,056 tokens either way: a 2,162,688 B page; a block is 11 pages (10 without)
    assert off.block_size == on.block_size == 1056
    assert (off.ranks[0].bytes_per_block, on.ranks[0].bytes_per_block) == (10 * 2_162_688, 11 * 2_162_688)
    # the weights grow by the draft layer (bf16) and say so, in vLLM's words
    assert on.ranks[0].weights_bytes - off.ranks[0].weights_bytes == 1_689_281_536
    term = next(t for t in on.ranks[0].terms if t.name == "MTP layers (in weights)")
    assert "qwen3_5_mtp.py" in term.source and term.bytes == 1_689_281_536
    # what is not counted is said (the drafter's buffers, sampler warm-up and graphs; the xfail below sizes them)
    said = [w for w in on.warnings if w.startswith(MTP_UNCOUNTED)]
    assert len(said) == 1 and f"{spec.name}'s 1 multi-token-prediction layer:" in said[0]
    assert not any(w.startswith(MTP_UNCOUNTED) for w in off.warnings)


def test_gb10_v0_22_qwen3_6_35b_a3b_nvfp4_mtp2_weights():
    # "Model loading took 21.93 GiB": the target (NVFP4 / FP8 mix on Marlin) + ViT + the bf16 MTP layer, shared
    # embeddings and head. kvplan 21.92 GiB; without the MTP layer 20.35 (-1.57 GiB, the layer's 1,689,281,536 B)
    p = _plan(_nvfp4_35b(), GB10, GB10_MTP + MTP2, "0.22")
    assert close_gib(p.ranks[0].weights_bytes, 21.93), p.ranks[0].weights_bytes / GiB
    assert round(p.ranks[0].weights_bytes / GiB, 2) == 21.92
    assert not close_gib(_plan(_nvfp4_35b(), GB10, GB10_MTP, "0.22").ranks[0].weights_bytes, 21.93 - 1.57 + 0.5)


def test_gb10_v0_22_qwen3_6_35b_a3b_nvfp4_mtp2_layout_and_tokens():
    # fp8 KV: a GDN page is conv 8,192 x (3 + 2 draft columns) x 2 B = 81,920 + fp32 recurrent 32 x 128 x 128 x 4 B
    # = 2,097,152: 2,179,072 B; the attention block aligns to it: 2,179,072 / (2 x 256 x 2 x 1 B) = 2,128 tokens
    # ("Setting attention block size to 2128 tokens"; 2,096 without the draft columns). 11 full layers (10 + the
    # MTP layer) -> 30 GDN in groups 11 / 11 / 8: "Add 3 padding layers, may waste at most 10.00%" (3 / 30).
    # A request: cdiv(262,144, 2,128) = 124 attention blocks + 3 GDN groups x (2 align + 2 draft pages) = 136.
    # Bytes per block 11 x 2,179,072 = 23,969,792: 74.76 GiB (a figure in [74.755, 74.765)) holds 3,348 - 3,349
    # blocks, and int(3,349 / 136 x 262,144) = 6,455,296 tokens, 3,349 / 136 = 24.62x as logged
    at = int(74.764 * GiB)  # the logged figure, inside its rounding interval (3,349 blocks need >= 74.7618 GiB)
    p = _plan(_nvfp4_35b(), GB10, GB10_MTP + MTP2 + f" --kv-cache-memory-bytes {at}", "0.22")
    assert (p.block_size, p.blocks_per_request, p.ranks[0].bytes_per_block) == (2128, 136, 23_969_792)
    assert sorted(g.padding_layers for g in p.kv_groups) == [0, 0, 0, 3]
    assert p.ranks[0].num_blocks == 3349
    assert p.kv_cache_tokens == 6_455_296 and round(p.max_concurrency, 2) == 24.62
    lo, hi = (int(g * GiB) // 23_969_792 for g in (74.755, 74.765))
    assert (lo, hi) == (3348, 3349)


RTX5090_SEQS8 = " --kv-cache-dtype fp8 --language-model-only --max-num-seqs 8"
RTX5090_MTP3 = RTX5090_SEQS8 + " --speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":3}'"


def test_rtx5090_eager_qwen38_mtp3_layout_reads_the_token_line_as_whole_blocks():
    # fp8 KV, 3 draft tokens: a GDN page is conv 10,240 x (3 + 3) x 2 B = 122,880 + fp32 recurrent 48 x 128 x 128 x 4 B
    # = 3,145,728: 3,268,608 B, so the block is 16 x cdiv(3,268,608, 16 x 4 x 256 x 2 x 1 B) = 1,600 tokens (1,568
    # without MTP). 16 + 1 full layers -> group 17, 48 GDN in 3 groups: bytes per block 17 x 1,600 x 2,048 =
    # 55,705,600. A 32,768-token request: cdiv(32,768, 1,600) = 21 + 3 x (2 align + 3 draft pages) = 36 blocks;
    # "90,112 tokens" = int(99 / 36 x 32,768): a whole block count, 99
    p = _rtx5090_eager(RTX5090_MTP3)
    assert (p.block_size, p.blocks_per_request, p.ranks[0].bytes_per_block) == (1600, 36, 55_705_600)
    assert int(99 / 36 * 32_768) == 90_112


@pytest.mark.xfail(strict=True, reason=(
    "MTP on the --language-model-only --max-num-seqs 8 run moves the pool from logged 126 blocks of 51,380,224 B "
    "(6.03 GiB) to 99 of 55,705,600 (5.14 GiB): -0.89 GiB (-0.84 to -0.94 with each count floored); kvplan -0.79 "
    "GiB, the draft layer's bf16 weights alone (849,398,784 B as nvidia's stand-in config keeps mtp* unquantized; "
    "Inferact's W4A4 build was not read; the activation peak and graphs unchanged, eager). "
    "The ~0.05 - 0.15 GiB left would be the drafter's own profile-run buffers, not modelled; one recipe line, flags "
    "inferred, does not size them"))
def test_rtx5090_eager_qwen38_mtp3_costs_the_pool_the_draft_layer_and_its_buffers():
    off, on = _rtx5090_eager(RTX5090_SEQS8), _rtx5090_eager(RTX5090_MTP3)
    drop = (off.ranks[0].kv_pool_bytes - on.ranks[0].kv_pool_bytes) / GiB
    assert 0.84 <= drop <= 0.94, drop


# --------------------------------------------------------------------------------------- what stays refused


def test_sglang_qwen3_5_mtp_plans_its_draft_and_eagle3_is_refused_naming_the_flag():
    # SGLang NEXTN / EAGLE on Qwen3.5's own MTP layer is planned from 0.5.14 (the MambaPool's draft-token reserve,
    # kvplan.sglang.mamba_pool; numbers in tests/test_sglang_qwen_mtp.py): on one H100 the 35B-A3B's bf16 weights leave
    # no MambaPool and SGLang refuses to start, which the plan says; EAGLE3 heads on the hybrid stay refused
    spec = load_preset("qwen3.5-35b-a3b")
    engine = EngineConfig(engine="sglang", speculative_method="mtp", num_speculative_tokens=3, max_model_len=32768)
    p = plan(spec, get_gpu("H100-SXM"), engine, Layout())
    assert p.kv_cache_tokens == 0
    assert any("SGLang sizes no MambaPool" in w and "4 draft-token states a running request" in w for w in p.warnings)
    with pytest.raises(PlanInputError) as err:
        plan(spec, get_gpu("H100-SXM"), engine.model_copy(update={"speculative_method": "eagle3"}), Layout())
    assert err.value.field == "--speculative-algorithm"
    assert "not modelled" in str(err.value).lower()


def test_config_without_mtp_num_hidden_layers_builds_none_and_says_so():
    # the qwen3-next-80b-a3b preset (an aiconfigurator copy) carries no mtp_num_hidden_layers: no layer to load
    spec = load_preset("qwen3-next-80b-a3b")
    assert spec.mtp_layers == ()
    with pytest.raises(PlanInputError, match="no multi-token-prediction layers to load.*mtp_num_hidden_layers"):
        plan(spec, get_gpu("H100-SXM"), _engine(speculative_method="mtp", num_speculative_tokens=1), Layout(tp=4))


def test_qwen_recipe_method_names_read_as_mtp():
    # Qwen's launch lines name the method "qwen3_next_mtp" (or "mtp"): both load the checkpoint's MTP layer
    from kvplan.vllm_args import parse_vllm_command

    for method in ("qwen3_next_mtp", "mtp", "qwen3_5_mtp"):
        args = parse_vllm_command("vllm serve Qwen/Qwen3.5-35B-A3B --speculative-config "
                                  f"'{{\"method\": \"{method}\", \"num_speculative_tokens\": 2}}'")
        assert (args.speculative_method, args.num_speculative_tokens) == ("mtp", 2)


def test_under_pp_the_vllm_draft_keeps_its_own_embeddings():
    # llm_base_proposer._maybe_share_embeddings shares the target's embed_tokens only when the PP group has one rank;
    # under PP 2 the last stage's draft also holds its own table: 248,320 (a multiple of 64) x 2,048 x 2 B =
    # 1,017,118,720 B beside the layer's 1,689,281,536 at TP 1; lm_head is shared at any PP
    spec = load_preset("qwen3.5-35b-a3b")
    assert mtp_rank_bytes(spec, Layout(pp=2), own_embeddings=True) == 1_689_281_536 + 1_017_118_720
    engine = _engine(speculative_method="mtp", num_speculative_tokens=1)
    p = plan(spec, get_gpu("H200"), engine, Layout(pp=2))
    term = next(t for t in p.ranks[-1].terms if t.name == "MTP layers (in weights)")
    assert term.bytes == 2_706_400_256 and "its own embed_tokens under PP" in term.source
    assert not any(t.name == "MTP layers (in weights)" for t in p.ranks[0].terms)
