"""SGLang MTP (--speculative-algorithm EAGLE / NEXTN) and NGRAM for Qwen3.5-family hybrids (kvplan issue 11): the
rule as read, as kvplan plans it (kvplan.sglang.mamba_pool draft_tokens, the Qwen3_5ForCausalLMMTP draft), and what
stays refused.

Planned 2026-12-03 from the 0.5.14 / 0.5.16 / 0.5.17 / 0.5.20 wheels (kvplan.sglang SGLANG_HYBRID_SPEC_TYPES): 0.5.14 -
0.5.16 solve the slots unpadded (K = int(budget // (slot x (1 + D / s))), reserve min(R, K // s) x D slots), 0.5.17+
padded (K = int((budget - slot x (1 + D)) // (slot x (1 + D / s))), reserve (min(R, K // s) + 1) x D); D = steps + 1
for EAGLE / NEXTN at top-k 1, 12 for NGRAM; the path-less draft leaves the target's cell unscaled.

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
    base = dict(engine="sglang", sglang_version="0.5.20", speculative_method="mtp", num_speculative_tokens=5,
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


def test_the_logged_slots_and_tokens_follow_the_padded_joint_rule_from_the_logged_rest():
    # A consistency check of the rule, not a plan: the log gives no fraction, so rest is rebuilt from its 171,008
    # tokens. One slot (bf16 SSM, TP 1): conv 48 x 10,240 x 3 x 2 = 2,949,120 + SSM 75,497,472 = 78,446,592 B; the bf16
    # KV cell over the 16 full-attention layers 16 x 4 heads x 256 x 2 x 2 B = 65,536 B (the draft's layer not in it).
    # rest = 171,008 x 65,536 + (44 pool + 30 reserve) x slot = 11,207,180,288 + 5,805,047,808 = 17,012,228,096 B
    slot, rest = 78_446_592, 171_008 * 65_536 + 74 * 78_446_592
    assert rest == 17_012_228_096
    for version in ("0.5.17", "0.5.20"):
        m = sglang.mamba_pool(sglang.sglang_profile(version), rest, 2_949_120, 75_497_472, "qwen3_5_text",
                              max_running_requests=4, draft_tokens=6)
        # budget 17,012,228,096 x 0.9 / 1.9 = 8,058,423,834.9 -> K = int((8,058,423,834.9 - 7 x slot) //
        # (slot x (1 + 6 / 5))) = int(7,509,297,690.9 // 172,582,502.4) = 43 (logged 43)
        assert m.slots == 43 and m.slots_per_request == 5
        # charged (43 + 1) x slot = 3,451,650,048; reserve (min(4, 43 // 5) + 1) x 6 = 30 slots = 2,353,397,760
        assert (m.charged, m.intermediate) == (3_451_650_048, 2_353_397_760)
        # the KV pool gets rest - 74 slots = 11,207,180,288 B = 171,008 x 65,536: the logged max_total_num_tokens
        assert m.kv_pool // 65_536 == 171_008
    # three slots a request (no_buffer) would give int(7,509,297,690.9 // (slot x 3)) = 31: the run kept
    # extra_buffer's 5; a cell with the draft's layer (x 17 / 16 = 69,632 B) would rebuild a rest giving 45, not 43
    budget = rest * 0.9 / 1.9
    assert int((budget - 7 * slot) // (slot * (1 + 6 / 3))) == 31
    rest17 = 171_008 * 69_632 + 74 * slot
    assert int((rest17 * 0.9 / 1.9 - 7 * slot) // (slot * (1 + 6 / 5))) == 45


def test_0_5_14_to_0_5_16_solve_unpadded():
    # the same rest on the 0.5.14 and 0.5.15 (0.5.15 - 0.5.16) lines: K = int(8,058,423,834.9 // 172,582,502.4) =
    # int(46.69) = 46, charged 46 x slot = 3,608,543,232; reserve min(4, 46 // 5) x 6 = 24 slots = 1,882,718,208;
    # KV pool = rest - 70 slots = 11,520,966,656 B -> 175,796 tokens of 65,536 B
    rest = 17_012_228_096
    for version in ("0.5.14", "0.5.15"):
        m = sglang.mamba_pool(sglang.sglang_profile(version), rest, 2_949_120, 75_497_472, "qwen3_5_text",
                              max_running_requests=4, draft_tokens=6)
        assert (m.slots, m.charged, m.intermediate, m.kv_pool) == (46, 3_608_543_232, 1_882_718_208,
                                                                   11_520_966_656)
        assert m.kv_pool // 65_536 == 175_796


def test_ngram_reserve_and_the_other_branches():
    slot, rest = 78_446_592, 10 * GiB
    prof = sglang.sglang_profile("0.5.20")
    # NGRAM's D 12 (speculative_hook.py _handle_ngram), R 48 (SGLang's speculative default): budget 10,737,418,240 x
    # 0.9 / 1.9 = 5,086,145,482.1 -> K = int((5,086,145,482.1 - 13 x slot) // (slot x (1 + 12 / 5))) =
    # int(4,066,339,786.1 // 266,718,412.8) = 15; reserve (min(48, 3) + 1) x 12 = 48 slots; KV pool rest - (16 + 48)
    # slots = 10,737,418,240 - 5,020,581,888 = 5,716,836,352
    assert sglang.speculative_draft_tokens("ngram", 0) == 12
    m = sglang.mamba_pool(prof, rest, 2_949_120, 75_497_472, "qwen3_5_text", max_running_requests=48, draft_tokens=12)
    assert (m.slots, m.intermediate // slot, m.kv_pool) == (15, 48, 5_716_836_352)
    # --max-mamba-cache-size 20 on 0.5.14: reserve min(48, 20 // 5) x 4 = 16 slots (no padding slot before 0.5.17);
    # KV pool 10 GiB - 36 slots = 10,737,418,240 - 2,824,077,312 = 7,913,340,928
    m = sglang.mamba_pool(sglang.sglang_profile("0.5.14"), rest, 2_949_120, 75_497_472, "qwen3_5_text",
                          max_mamba_cache_size=20, max_running_requests=48, draft_tokens=4)
    assert (m.slots, m.intermediate // slot, m.kv_pool) == (20, 16, 7_913_340_928)
    # --disable-radix-cache: K = R = 48 (always set under speculation), reserve (48 + 1) x 4 = 196 slots on 0.5.20
    m = sglang.mamba_pool(prof, rest, 2_949_120, 75_497_472, "qwen3_5_text", radix=False, max_running_requests=48,
                          draft_tokens=4)
    assert (m.slots, m.intermediate // slot, m.slots_per_request) == (48, 196, 1)
    # D: EAGLE / NEXTN steps + 1 (top-k 1), a given count wins
    assert (sglang.speculative_draft_tokens("mtp", 5), sglang.speculative_draft_tokens("mtp", 3, 8)) == (6, 8)


def test_tied_draft_vocab_is_one_table():
    # Qwen3_5ForCausalLMMTP ties lm_head to its embed_tokens with the config: Qwen3.5-0.8B's 248,320 x 1,024 x 2 =
    # 508,559,360 B, half the untied 1,017,118,720
    assert sglang.mtp_draft_vocab_copy_bytes(248_320, 1_024, 1, tied=True) == 508_559_360
    assert sglang.mtp_draft_vocab_copy_bytes(248_320, 1_024, 1) == 1_017_118_720


def _slots_from(p):
    """(rest, K, reserve requests) of a planned rank: rest rebuilt from its own pool and Mamba terms."""
    r = p.ranks[0]
    pool = next(t for t in r.terms if t.name.startswith("Mamba state pool"))
    reserve = next(t for t in r.terms if t.name.startswith("Mamba draft-token state reserve"))
    return r.kv_pool_bytes + pool.bytes + reserve.bytes, pool.bytes, reserve.bytes


@pytest.mark.parametrize("version", ["0.5.14", "0.5.17", "0.5.20", "0.5.21"])
def test_qwen3_6_27b_eagle_plans_on_sglang_with_the_draft_and_the_reserve(version):
    spec = load_preset("qwen3.5-27b")
    p = plan(spec, get_gpu("H200"), _engine(sglang_version=version, num_speculative_tokens=5,
                                            mamba_ssm_dtype="bfloat16"), Layout())
    slot, padded = 78_446_592, version != "0.5.14"
    terms = {t.name.split(" (")[0]: t.bytes for t in p.ranks[0].terms}
    # the draft's own vocab tables charged to rest (2 x 248,320 x 5,120 x 2), its mtp.* layer in the weights
    assert terms["MTP draft's embed_tokens / lm_head copies"] == 5_085_593_600
    assert terms["MTP layers"] == 849_398_784
    # the target's cell alone: 16 x 4 x 256 x 2 x 2 = 65,536 B (path-less draft: not scaled by 17 / 16)
    assert p.ranks[0].kv_bytes_per_token == 65_536
    rest, pool, reserve = _slots_from(p)
    budget = rest * 0.9 / 1.9  # D = 5 + 1 = 6, s = 5, R = 48
    k = int((budget - slot * 7) // (slot * (1 + 6 / 5))) if padded else int(budget // (slot * (1 + 6 / 5)))
    assert pool == (k + padded) * slot
    assert reserve == (min(48, k // 5) + padded) * 6 * slot
    assert p.kv_cache_tokens == (rest - pool - reserve) // 65_536 or p.kv_cache_tokens == (
        rest - pool - reserve) // 65_536 - 1  # SGLang's GB-float subtraction may lose the last byte
    log = "\n".join(p.engine_log)
    # "Load weight end. type=Qwen3_5ForCausalLMMTP ... mem usage=5.53 GB": 849,398,784 + 5,085,593,600 B = 5.527 GiB
    assert "type=Qwen3_5ForCausalLMMTP" in log and "mem usage=5.53 GB" in log
    # the draft's pool over its one full-attention layer: (tokens + 1) x 4 x 256 x 2 B a side
    assert f"#tokens: {p.kv_cache_tokens}, K size: {(p.kv_cache_tokens + 1) * 2_048 / GiB:.2f} GB" in log
    assert f"max_mamba_cache_size: {k}," in log and "intermediate_ssm_state_cache size:" in log


def test_ngram_with_zero_steps_plans_a_twelve_token_reserve():
    p = plan(load_preset("qwen3.5-27b"), get_gpu("H200"), _engine(speculative_method="ngram", num_speculative_tokens=0,
                                                                  sglang_version="0.5.20"), Layout())
    reserve = next(t for t in p.ranks[0].terms if t.name.startswith("Mamba draft-token state reserve"))
    assert "x 12 draft tokens" in reserve.name
    # one f32-SSM slot: 2,949,120 + 48 x 48 x 128 x 128 x 4 = 150,994,944 -> 153,944,064 B; 12 a reserved request
    assert reserve.bytes % (153_944_064 * 12) == 0
    assert not any("Qwen3_5ForCausalLMMTP" in line for line in p.engine_log)  # NGRAM loads no draft


@pytest.mark.parametrize("preset,method,kw,words", [
    ("qwen3-next-80b-a3b", "ngram", {}, "Qwen3NextForCausalLM"),
    ("qwen3.5-27b", "eagle3", {}, "--speculative-algorithm EAGLE3"),
    ("qwen3.5-27b", "mtp", {"pp": 2}, "pipeline parallelism"),
    ("qwen3.5-27b", "mtp", {"dp_attention": 2}, "DP attention"),
])
def test_what_stays_refused_names_the_flag_and_release(preset, method, kw, words):
    field, msg = sglang.hybrid_refusal(load_preset(preset), "0.5.20", tp=4 if "next" in preset else 1,
                                       speculative=method, **kw)
    assert field == "speculative_config"
    assert words in msg and "SGLang 0.5.20" in msg and "--speculative-num-draft-tokens" in msg


def test_before_0_5_14_a_hybrid_with_mtp_is_refused():
    with pytest.raises(PlanInputError) as err:
        plan(load_preset("qwen3.5-27b"), get_gpu("H200"), _engine(sglang_version="0.5.10"), Layout())
    assert err.value.field == "--speculative-algorithm" and "SGLang 0.5.10 - 0.5.13" in str(err.value)


def test_a_hybrid_without_mtp_layers_names_only_the_state_reserve():
    # the qwen3-next-80b-a3b preset carries no mtp_num_hidden_layers: refused by the reserve alone (the MTP-draft
    # sentence needs mtp.* layers)
    msg = sglang.recurrent_state_refusal(load_preset("qwen3-next-80b-a3b"), "0.5.20", tp=4, speculative=True)
    assert sglang.SGLANG_HYBRID_SPEC_UNMODELLED in msg
    assert sglang.SGLANG_HYBRID_MTP_UNMODELLED not in msg


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "planned since 2026-12-03 (the padded 0.5.17 joint solve, the path-less Qwen3_5ForCausalLMMTP draft: 5.53 GB as "
    "logged, the target's cell unscaled), but the log gives no --mem-fraction-static, --context-length, "
    "--max-running-requests (4 read from its decode graphs) or --mamba-ssm-dtype (bfloat16 read from 2.11 GB): at the "
    "line's default fraction (0.7676 with the VLM cut) kvplan's rest is 3.51 GiB -> 7 slots, 33,618 tokens, where "
    "the logged 43 slots / 171,008 tokens need a rest of 15.84 GiB (the rule reproduces both exactly from that rest: "
    "test_the_logged_slots_and_tokens_follow_the_padded_joint_rule_from_the_logged_rest); not fitted"))
def test_a100_v0_5_17_qwen3_6_27b_eagle_6_draft_tokens_pool():
    engine = _engine(sglang_version="0.5.17", max_model_len=262144, max_num_seqs=4,
                     mamba_ssm_dtype="bfloat16", num_speculative_tokens=5)
    p = plan(load_preset("qwen3.5-27b"), get_gpu("A100-80GB-PCIe"), engine, Layout())
    assert p.kv_cache_tokens == 171_008
