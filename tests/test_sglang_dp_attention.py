"""SGLang DP attention (--enable-dp-attention --dp N) for MLA / MoE models, hand-derived from sglang's source.

sglang python/sglang/srt/layers/dp_attention.py compute_dp_attention_world_info: attn_tp_size = tp_size // dp_size,
attn_dp_rank = tp_rank // attn_tp_size; each attention-DP group runs its own scheduler with its own KV pool
("[DP0 TP0] ... KV Cache is allocated" per group). server_args.py: tp_size % dp_size == 0; the default
mem_fraction_static reserves cuda_graph_max_bs x dp x 3 MiB more (x 1.5 more above 300).
"""

import pytest

from kvplan import load_preset
from kvplan.engines import EngineConfig, sglang_mem_fraction_static
from kvplan.errors import PlanInputError
from kvplan.gpus import get_gpu
from kvplan.parallel import Layout, rank_weight_bytes
from kvplan.plan import plan
from kvplan.units import GiB
from kvplan.web.commands import parse_command


def test_attention_weights_split_over_the_attention_tp_group_only():
    # DeepSeek-V2-Lite, TP2: q_proj [3072, 2048], kv_b_proj [4096, 512], o_proj [2048, 2048] are split over TP;
    # with --dp 2 each GPU keeps them whole: + (3072 x 2048 + 4096 x 512 + 2048 x 2048) x 2 B / 2 = 12,582,912 B a
    # layer, x 27 layers = 339,738,624 B. kv_a_proj_with_mqa and the norms were replicated already; experts unchanged.
    spec = load_preset("deepseek-v2-lite")
    extra = rank_weight_bytes(spec, Layout(tp=2, attn_dp=2)) - rank_weight_bytes(spec, Layout(tp=2))
    assert extra == 27 * (3072 * 2048 + 4096 * 512 + 2048 * 2048) == 339_738_624


def test_moe_dense_tp_size_one_replicates_the_dense_layers():
    # DeepSeek-V3 first_k_dense_replace 3: three dense MLPs of [18432, 7168] x 2 + [7168, 18432] in fp8-block
    # (weight + fp32 scale per 128 x 128). TP8 splits them; --moe-dense-tp-size 1 keeps 7/8 more on each GPU.
    spec = load_preset("deepseek-v3")
    base = rank_weight_bytes(spec, Layout(tp=8, attn_dp=8))
    dense1 = rank_weight_bytes(spec, Layout(tp=8, attn_dp=8, dense_tp=1))
    full = 2 * (18432 * 7168 + 4 * 144 * 56) + (7168 * 18432 + 4 * 56 * 144)  # one dense MLP, whole
    eighth = 2 * (2304 * 7168 + 4 * 18 * 56) + (7168 * 2304 + 4 * 56 * 18)  # its TP8 shard
    assert dense1 - base == 3 * (full - eighth)


def test_kv_cache_per_rank_mla_whole_gqa_over_attention_tp():
    h200 = get_gpu("H200")
    # MLA: 61 layers x (512 + 64) x 2 B = 70,272 B a token on every GPU, with or without DP attention
    v3 = load_preset("deepseek-v3")
    for dp in (1, 8):
        p = plan(v3, h200, EngineConfig(engine="sglang", dp_attention_size=dp, max_model_len=8192), Layout(tp=8))
        assert p.ranks[0].kv_bytes_per_token == 61 * 576 * 2 == 70_272
    # GQA: Llama-3.1-70B at TP8 keeps 1 of 8 KV heads a GPU (80 x 1 x 128 x 2 x 2 B = 40,960); --dp 2 makes the
    # attention TP group 4 GPUs: 2 heads a GPU, 81,920 B a token
    llama = load_preset("llama-3.1-70b")
    p1 = plan(llama, h200, EngineConfig(engine="sglang", max_model_len=8192), Layout(tp=8))
    p2 = plan(llama, h200, EngineConfig(engine="sglang", dp_attention_size=2, max_model_len=8192), Layout(tp=8))
    assert p1.ranks[0].kv_bytes_per_token == 40_960 and p2.ranks[0].kv_bytes_per_token == 81_920


def test_each_attention_dp_group_holds_its_own_pool():
    # sgl-project/sglang#7055 (sglang 0.4.6.post5, 8 x MI300X, DeepSeek-R1, --tp 8 --dp-size 8 --enable-dp-attention
    # --moe-dense-tp-size 1): "[DP7 TP7] KV Cache is allocated. #tokens: 1230416, KV size: 80.53 GB" on every DP rank.
    # 1,230,416 x 70,272 B = 86,463,793,152 B = 80.53 GiB: the whole MLA latent per token on each rank, each rank with
    # its own 1.23 M tokens (8 x in all). Its mem_fraction_static is not in the issue, so the pool is not predicted.
    assert round(1_230_416 * 70_272 / GiB, 2) == 80.53
    spec = load_preset("deepseek-v3")  # DeepSeek-R1's architecture
    # planned on the log's own release line (0.4.6.post5: the 0.4.6 profile); from 0.5.6 the aiter backend's 0.85
    # haircut of mem_fraction_static (kvplan.sglang.aiter_haircut) leaves no room for 1.23 M tokens at 0.95
    engine = EngineConfig(engine="sglang", sglang_version="0.4.6", dp_attention_size=8, moe_dense_tp_size=1,
                          max_total_tokens=1_230_416, mem_fraction_static=0.95)
    p = plan(spec, get_gpu("MI300X"), engine, Layout(tp=8, ep=True))
    assert p.kv_cache_tokens == 1_230_416 and p.ranks[0].kv_bytes_per_token == 70_272
    assert any("8 x 1,230,416 = 9,843,328 tokens" in w for w in p.warnings)
    assert p.layout["dp_attention_size"] == 8


def test_default_mem_fraction_reserves_more_with_dp_attention():
    # H200 (143,771 MiB, > 90 GiB tier: chunk 8192, cuda_graph_max_bs 512 at TP >= 4), TP8, MLA:
    # 512 + 8192 x 1.5 + 8 / 8 x 1024 + 512 x 2 + prefill graphs + 1536 = 16,848 MiB; with --dp 8:
    # + 512 x 8 x 3 + 512 x 8 x 1.5 = + 18,432 -> 35,280 MiB
    h200 = get_gpu("H200").memory_bytes
    frac1, reserved1 = sglang_mem_fraction_static(h200, 8, 1, True)
    frac8, reserved8 = sglang_mem_fraction_static(h200, 8, 1, True, 8)
    assert reserved8 - reserved1 == 512 * 8 * 3 + 512 * 8 * 1.5 == 18_432 and frac8 < frac1


def test_refusals_name_the_flag():
    spec = load_preset("deepseek-v3")
    with pytest.raises(PlanInputError) as info:
        plan(spec, get_gpu("H200"), EngineConfig(engine="sglang", dp_attention_size=3), Layout(tp=8))
    assert info.value.field == "dp_attention_size"
    with pytest.raises(PlanInputError) as info:
        plan(spec, get_gpu("H200"), EngineConfig(dp_attention_size=8), Layout(tp=8))  # vLLM
    assert info.value.field == "dp_attention_size"


def test_sglang_command_reader_maps_dp_attention():
    c = parse_command("python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-R1 --tp 8 --dp-size 8 "
                      "--enable-dp-attention --moe-dense-tp-size 1 --mem-fraction-static 0.8")
    assert c.engine == "sglang" and c.args.tensor_parallel_size == 8
    assert c.args.data_parallel_size == 1  # not 8 replicas of TP8
    assert c.engine_fields() == {"dp_attention_size": 8, "moe_dense_tp_size": 1}
    plain = parse_command("python -m sglang.launch_server --model-path m --tp 2 --dp 2")
    assert plain.args.data_parallel_size == 2 and plain.engine_fields() == {}
    with pytest.raises(PlanInputError) as info:
        parse_command("sglang serve --model-path m --tp 8 --enable-dp-attention --dp x")
    assert info.value.field == "--dp"
