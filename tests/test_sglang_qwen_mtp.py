"""SGLang MTP (--speculative-algorithm EAGLE / NEXTN) for Qwen3.5-family hybrids (kvplan issue 11): what is read,
what kvplan can already derive, and what stays refused.

Engine source read (wheels 0.5.14, 0.5.20, 0.5.23; 2026-12-02):
- models/qwen3_5_mtp.py (0.5.23) Qwen3_5ForCausalLMMTP: fc Linear 2h -> h, pre_fc_norm_embedding / _hidden, one
  Qwen3_5ForCausalLM decoder layer with full_attention_interval 1 (a full-attention layer), its own embed_tokens and
  lm_head (tied only when the config ties them); set_embed_and_head swaps the target's in after loading.
- model_executor/model_runner_kv_cache_mixin.py handle_max_mamba_cache (0.5.14) and mem_cache/kv_cache_configurator.py
  _handle_max_mamba_cache (0.5.20, 0.5.23): with a speculative algorithm the MambaPool's slot count K is solved
  jointly with an intermediate reserve of D = --speculative-num-draft-tokens states a request (0.5.20+:
  K = int((budget - slot x (1 + D)) // (slot x (1 + D / s)))), and slot x (min(--max-running-requests, K // s) + 1)
  x D more leaves rest; --max-running-requests is asserted set.
- mem_cache/memory_pool.py MambaPool (0.5.23): intermediate_ssm_state_cache is (state layers, requests + 1, D, heads,
  head_dim, state) in the SSM dtype, beside intermediate_conv_window_cache; printed in "Mamba Cache is allocated.".

Log (public, code-corpus file 68576807532, a deployment note dated 2026-08-15): Qwen/Qwen3.6-27B (bf16; the 3.8
config is byte-identical but for transformers_version) on one A100 80GB PCIe, TP 1, SGLang v0.5.17 (cu130 image),
--attention-backend flashinfer, EAGLE with --speculative-num-steps 5 --speculative-num-draft-tokens 6, decode graphs
[1, 2, 3, 4]: "Load weight end. type=Qwen3_5ForConditionalGeneration mem usage=51.05 GB", "Load weight end.
type=Qwen3_5ForCausalLMMTP mem usage=5.53 GB", max_total_num_tokens 171008, 43 mamba cache slots, intermediate SSM
verify cache 2.11 GB. Its --mem-fraction-static, --context-length, --max-running-requests and --mamba-ssm-dtype are
not given. kvplan's qwen3.5-27b preset has the same shapes (hidden 5120, vocab 248,320, 48 GDN + 16 full-attention
layers, one mtp.* layer) and stands in for it. The target's 51.05 GB is pinned in tests/test_engine_sglang_2026f.py
(QW36A); this file pins the draft runner's 5.53 GB and the intermediate SSM cache.

Corroboration of the intermediate cache's shape (not pinned: no kvplan preset): sgl-project/sglang issue text quoted in
code-corpus file 71329258881, RadixArk/Qwen3.8-Flash-Next-NVFP4 (qwen4_exp, 36 GDN layers) on one RTX PRO 6000, main
2929a399 (0.5.20.dev728), --max-running-requests 4 --max-mamba-cache-size 48 --mamba-ssm-dtype bfloat16 NEXTN with 4
draft tokens: "ssm_state size: 2.58GB intermediate_ssm_state_cache size: 1.05GB" -> 2.58 / (48 + 1) = 0.0527 GiB a
slot, 1.05 / ((4 + 1) x 4) = 0.0525 GiB: the same (requests + 1) x D slots' SSM states.
"""

import pytest

from kvplan import load_preset, sglang
from kvplan.engines import EngineConfig
from kvplan.errors import PlanInputError
from kvplan.gpus import get_gpu
from kvplan.parallel import Layout, mtp_rank_bytes
from kvplan.plan import plan
from kvplan.units import GiB


def _engine(**kw):
    base = dict(engine="sglang", sglang_version="0.5.20", speculative_method="mtp", num_speculative_tokens=6,
                max_model_len=32768)
    return EngineConfig(**(base | kw))


def test_draft_runner_weights_are_the_mtp_layer_and_its_own_vocab_copies():
    # the mtp.* layer at bf16, TP 1: fc 10,240 x 5,120 x 2 = 104,857,600; q_proj with the output gate 5,120 x (24 x
    # 256 x 2) x 2 = 125,829,120; k / v 2 x 5,120 x 1,024 x 2 = 20,971,520; o_proj 6,144 x 5,120 x 2 = 62,914,560;
    # MLP 3 x 5,120 x 17,408 x 2 = 534,773,760; norms 52,224 -> 849,398,784 B
    spec = load_preset("qwen3.5-27b")
    layer = mtp_rank_bytes(spec, Layout())
    assert layer == 849_398_784
    # + its own embed_tokens and lm_head, 2 x 248,320 x 5,120 x 2 = 5,085,593,600 (mtp_draft_vocab_copy_bytes)
    copies = sglang.mtp_draft_vocab_copy_bytes(248_320, 5_120, 1)
    assert copies == 5_085_593_600
    # = 5,934,992,384 B = 5.527 GiB: the logged "type=Qwen3_5ForCausalLMMTP mem usage=5.53 GB"
    assert round((layer + copies) / GiB, 2) == 5.53


def test_intermediate_ssm_cache_is_requests_plus_one_by_draft_tokens_ssm_states():
    # one request's SSM states at bf16: 48 GDN layers x 48 heads x 128 x 128 x 2 B = 75,497,472 B; x (4 running + 1
    # padding) x D 6 = 2,264,924,160 B = 2.109 GiB: the logged "2.11 GB" (at float32 it would be 4.22 GB, so the run
    # is read as --mamba-ssm-dtype bfloat16 with --max-running-requests 4, its decode graphs' largest size)
    spec = load_preset("qwen3.5-27b")
    prof = sglang.sglang_profile("0.5.20")
    _, ssm, n = sglang.state_bytes_per_request(prof, [(layer, 1) for layer in spec.layers], 1, "bfloat16")
    assert (ssm, n) == (75_497_472, 48)
    assert round(ssm * (4 + 1) * 6 / GiB, 2) == 2.11


def _joint_slots(rest: int, slot: int, draft_tokens: int, per_request: int) -> int:
    """The 0.5.20 joint solve as read (kv_cache_configurator._handle_max_mamba_cache): budget = rest x 0.9 / 1.9,
    K = int((budget - slot x (1 + D)) // (slot x (1 + D / s))), in SGLang's float arithmetic."""
    budget = rest * 0.9 / 1.9
    return int((budget - slot * (1 + draft_tokens)) // (slot * (1 + draft_tokens / per_request)))


def test_the_logged_slots_fit_the_joint_rule_with_extra_buffer_and_an_unscaled_cell():
    # A consistency check of the rule as read, not a plan: the log gives no fraction, so rest is rebuilt from its
    # 171,008 tokens. One slot (bf16 SSM, TP 1): conv 48 x 10,240 x 3 x 2 = 2,949,120 + SSM 75,497,472 = 78,446,592 B.
    # The reserve: (min(4, K // 5) + 1) x 6 = 30 slots, the pool (43 + 1) = 44 slots: 74 x 78,446,592 = 5,805,047,808 B.
    spec = load_preset("qwen3.5-27b")
    prof = sglang.sglang_profile("0.5.20")
    conv, ssm, _ = sglang.state_bytes_per_request(prof, [(layer, 1) for layer in spec.layers], 1, "bfloat16")
    slot = conv + ssm
    assert slot == 78_446_592
    # bf16 KV over the 16 full-attention layers: 16 x 4 heads x 256 x 2 x 2 B = 65,536 B a token
    # rest = 171,008 x 65,536 + 74 x slot = 17,012,228,096 B (15.84 GiB) -> budget 8,058,423,834.9 B
    # -> K = int((8,058,423,834.9 - 7 x slot) // (slot x (1 + 6 / 5))) = int(7,509,297,690.9 // 172,582,502.4) = 43
    assert _joint_slots(171_008 * 65_536 + 74 * slot, slot, 6, 5) == 43
    # three slots a request (no_buffer) would give 31: the run kept extra_buffer's 5 under speculative decoding
    assert _joint_slots(171_008 * 65_536 + 74 * slot, slot, 6, 3) == 31
    # a cell with the draft's layer over the 16 attention layers (x 17 / 16 = 69,632 B) would give 45, not 43. As read
    # in the 0.5.23 wheel the target's cell is not scaled at all: pool_configurator.py scales it by
    # (1 + eagle_draft_num_layers / attention layers), and spec_aux_hidden_state.py sets eagle_draft_num_layers from
    # the target config's num_nextn_predict_layers for a path-less MTP draft, a key only the draft's rewritten
    # Qwen3.5 config carries (configs/model_config.py); the 0.5.17 line is not read
    assert _joint_slots(171_008 * 69_632 + 74 * slot, slot, 6, 5) == 45


@pytest.mark.parametrize("version", ["0.5.14", "0.5.17", "0.5.20", "0.5.21"])
def test_sglang_qwen_mtp_refusal_names_what_is_not_modelled(version):
    spec = load_preset("qwen3.5-27b")
    with pytest.raises(PlanInputError) as err:
        plan(spec, get_gpu("A100-80GB-PCIe"), _engine(sglang_version=version), Layout())
    text = str(err.value)
    assert err.value.field == "--speculative-algorithm"
    for words in ("--speculative-num-draft-tokens", "intermediate_ssm_state_cache", "--max-running-requests",
                  "own bf16 embed_tokens / lm_head", "KV pool over its full-attention layer", "method mtp"):
        assert words in text, words


def test_a_hybrid_without_mtp_layers_names_only_the_state_reserve():
    # the qwen3-next-80b-a3b preset carries no mtp_num_hidden_layers: an EAGLE3 / MTP plan is refused by the reserve
    # alone (the MTP-draft sentence needs mtp.* layers)
    msg = sglang.recurrent_state_refusal(load_preset("qwen3-next-80b-a3b"), "0.5.20", tp=4, speculative=True)
    assert sglang.SGLANG_HYBRID_SPEC_UNMODELLED in msg
    assert sglang.SGLANG_HYBRID_MTP_UNMODELLED not in msg


@pytest.mark.xfail(strict=True, raises=PlanInputError, reason=(
    "kvplan refuses it (SGLANG_HYBRID_SPEC_UNMODELLED): the joint slot solve with the D = 6 draft-token reserve is "
    "not in the planner (0.5.17's wheel has the 0.5.20 rule, read 2026-12-03; it fits the logged 43 slots only by "
    "rebuilding rest from the "
    "logged tokens), nor the Qwen3_5ForCausalLMMTP runner's resident 5.53 GB and its KV pool (the target's cell "
    "unscaled, as 0.5.23 reads: x 17 / 16 does not fit); the log gives no --mem-fraction-static, --context-length, "
    "--max-running-requests (4 read from its decode graphs) or --mamba-ssm-dtype (bfloat16 read from 2.11 GB)"))
def test_a100_v0_5_17_qwen3_6_27b_eagle_6_draft_tokens_pool():
    engine = _engine(sglang_version="0.5.17", max_model_len=262144, max_num_seqs=4,
                     mamba_ssm_dtype="bfloat16")
    p = plan(load_preset("qwen3.5-27b"), get_gpu("A100-80GB-PCIe"), engine, Layout())
    assert p.kv_cache_tokens == 171_008
