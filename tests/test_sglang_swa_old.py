"""SGLang's hybrid sliding-window pool before 0.5.10 (kvplan.sglang.hybrid_swa_cell / swa_cell_refusal).

Read in the sglang 0.5.2 / 0.5.4 / 0.5.6 / 0.5.7 / 0.5.8 / 0.5.9 wheels: server_args.py forces
disable_hybrid_swa_memory for GptOssForCausalLM through 0.5.7 (one pool over all 36 layers); 0.5.8 - 0.5.9 keep the
pool apart (configs/model_config.py is_hybrid_swa_model) except with trtllm_mha, the gpt-oss default on SM 10.x.
For gpt-oss (every layer 8 KV heads x 64, K + V) 0.5.8's token-count split (full = T x 36 / (18 + 0.8 x 18)) and
0.5.9's memory split (sglang PR #18039) give the same cell; MiMo-V2-Flash (sliding layers of another width) differs
between them and is refused on the 0.5.7 / 0.5.8 lines. swa_full_tokens_ratio is 0.8 in every wheel read.
No public pre-0.5.10 gpt-oss start-up log with "swa_layer_tokens" was found; the numbers are hand-derived.
"""

import pytest

from kvplan import load_preset
from kvplan.engines import EngineConfig
from kvplan.errors import PlanInputError
from kvplan.gpus import get_gpu
from kvplan.parallel import Layout
from kvplan.plan import plan, stage_distinct
from kvplan.sglang import hybrid_swa_cell, swa_cell_refusal


def _cell(preset: str, version: str, gpu: str = "H100-SXM", kv_b: int = 2):
    spec = load_preset(preset)
    return hybrid_swa_cell(version, spec.model_type, stage_distinct(spec, 1, 0), 1, kv_b, gpu_name=gpu)


def test_gpt_oss_cell_per_line():
    # gpt-oss-120b TP1 bf16: a layer is 8 x 64 x 2 (K, V) x 2 B = 2,048 B; 18 full + 18 sliding layers.
    # 0.5.8 - 0.5.9 on H100: 18 x 2,048 + 0.8 x 18 x 2,048 = 36,864 + 29,491 = 66,355 B a full-pool token
    assert _cell("gpt-oss-120b", "0.5.8") == (66_355, 36_864, 36_864)
    # 0.5.8 on B200: trtllm_mha (SM 10.x default) sets disable_hybrid_swa_memory: one pool, 36 x 2,048 = 73,728 B
    assert _cell("gpt-oss-120b", "0.5.8", "B200") is None
    # 0.5.2 - 0.5.7: disable_hybrid_swa_memory forced for GptOssForCausalLM
    for line in ("0.4.8", "0.5.3", "0.5.4.post1", "0.5.6", "0.5.7"):
        assert _cell("gpt-oss-120b", line) is None, line
    # the 0.5.8 line pools no other model apart (MiMo-V2-Flash refused, Gemma 4 not served)
    assert _cell("mimo-v2-flash", "0.5.8") is None


def test_gpt_oss_plan_per_line():
    def kv(version, gpu="H100-SXM"):
        return plan(load_preset("gpt-oss-120b"), get_gpu(gpu), EngineConfig(engine="sglang", sglang_version=version),
                    Layout(tp=1)).ranks[0].kv_bytes_per_token
    assert kv("0.5.8") == 66_355 and kv("0.5.6") == 73_728 and kv("0.5.8", "B200") == 73_728


def test_mimo_refused_before_0510():
    assert swa_cell_refusal("0.5.10", "mimo_v2_flash") is None and swa_cell_refusal("0.5.8", "gpt_oss") is None
    field, msg = swa_cell_refusal("0.5.8", "mimo_v2_flash")
    assert field == "sglang_version" and "#18039" in msg and "0.5.10" in msg
    with pytest.raises(PlanInputError, match="18039"):
        plan(load_preset("mimo-v2-flash"), get_gpu("H200"), EngineConfig(engine="sglang", sglang_version="0.5.7"),
             Layout(tp=8))


def test_gpt_oss_0_5_8_splits_tokens_not_bytes():
    # 0.5.8 - 0.5.9 (model_runner_kv_cache_mixin.py): the pool's tokens at the uniform cell first, 4,894,174,216 //
    # (36 x 2,048) = 66,381, then x 36 layers / (0.8 x 18 + 18) = 2,389,716 / 32.4 = 73,756.67 -> int 73,756 full-pool
    # tokens; the byte cell (rest // 66,355.2, the 0.5.10+ rule) would give 73,757
    p = plan(load_preset("gpt-oss-120b"), get_gpu("H100-SXM"), EngineConfig(engine="sglang", sglang_version="0.5.8"),
             Layout(tp=1))
    assert p.ranks[0].kv_pool_bytes == 4_894_174_216 and p.ranks[0].num_blocks == 73_756
    assert "full_layer_tokens=73756, swa_layer_tokens=59004" in "\n".join(p.engine_log)  # int(73,756 x 0.8)
