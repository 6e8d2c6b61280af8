"""vLLM speculative method draft_model (kvplan.draft_model): a draft LM's weights per rank, its KV layers beside the
target's, the --speculative-config parsing (CLI, Import), the sidebar's default draft, and vLLM's refusals.

Numbers derived by hand from the preset configs (kvplan/presets: meta-llama/Llama-3.1-70B, Llama-3.2-1B, Qwen/Qwen3-32B,
Qwen3-0.6B) and the vllm 0.15.0 - 0.33.0 wheels (v1/spec_decode/draft_model.py, config/speculative.py), in comments.
"""

import json

import pytest

from kvplan.draft_model import draft_model_candidates, load_draft_model, parse_draft_model
from kvplan.engines import EngineConfig, vllm_model_runner
from kvplan.errors import ConfigError, PlanInputError
from kvplan.gpus import GPU_CATALOG
from kvplan.hf_config import parse_config
from kvplan.parallel import Layout
from kvplan.plan import plan
from kvplan.presets import load_preset, preset_config
from kvplan.vllm_args import parse_vllm_command

H100 = GPU_CATALOG["H100-SXM"]
SPEC_1B = '{"method": "draft_model", "model": "meta-llama/Llama-3.2-1B", "num_speculative_tokens": 4}'


def engine(draft, version="0.33", **kw) -> EngineConfig:
    return EngineConfig(vllm_version=version, speculative_method="draft_model", num_speculative_tokens=4, draft=draft,
                        max_model_len=32768, **kw)


def term(rank, name):
    return next(t for t in rank.terms if t.name == name)


@pytest.fixture(scope="module")
def llama_plans():
    target, draft = load_preset("llama-3.1-70b"), load_draft_model("meta-llama/Llama-3.2-1B")
    with_draft = plan(target, H100, engine(draft), Layout(tp=4), suggest=False)
    without = plan(target, H100, EngineConfig(vllm_version="0.33", max_model_len=32768), Layout(tp=4), suggest=False)
    return with_draft, without


def test_llama_70b_with_a_1b_draft_at_tp4(llama_plans):
    with_draft, without = llama_plans
    r, r0 = with_draft.ranks[0], without.ranks[0]
    # Llama-3.1-70B on one of 4 ranks (h 8192, 80 layers, 8 KV heads x 128, I 28672, vocab 128,256 untied):
    #   embed = lm_head = 128,256 / 4 x 8,192 = 262,668,288; a layer: q, o 8,192^2 / 4 = 16,777,216 each, k, v
    #   8,192 x 1,024 / 4 = 2,097,152 each, MLP 3 x 8,192 x 28,672 / 4 = 176,160,768, 2 norms 16,384 -> 213,925,888
    #   params = 2 x 262,668,288 + 80 x 213,925,888 + 8,192 = 17,639,415,808 -> 35,278,831,616 B bf16
    #   + rotary 131,072 x 128 x 2 = 33,554,432 + allocator: the 501 MiB embed / lm_head shards round to 502 MiB (2 MiB)
    assert r0.weights_bytes == 35_278_831_616 + 33_554_432 + 2 * 2**20 == 35_314_483_200
    # Llama-3.2-1B on the same rank (h 2048, 16 layers, 8 KV heads x 64, I 8192, tied embedding):
    #   embed 128,256 / 4 x 2,048 = 65,667,072; a layer: q, o 2,048^2 / 4 = 1,048,576 each, k, v 2,048 x 512 / 4 =
    #   262,144 each, MLP 3 x 2,048 x 8,192 / 4 = 12,582,912, norms 4,096 -> 15,208,448
    #   params = 65,667,072 + 16 x 15,208,448 + 2,048 = 309,004,288 -> 618,008,576 B (the target's bf16)
    #   + its own llama3 rotary table (64 wide, the target's 128: no shared get_rope instance) 131,072 x 64 x 2 =
    #   16,777,216 + the 125.25 MiB embedding shard rounded to 126 MiB: 786,432 -> 635,572,224 B
    assert term(r, "draft model (in weights)").bytes == 618_008_576 + 16_777_216 + 786_432 == 635_572_224
    assert r.weights_bytes == r0.weights_bytes + 635_572_224
    # KV per token and rank: target 80 x 2 (K, V) x 2 heads x 128 x 2 B = 81,920; draft 16 x 2 x 2 x 64 x 2 = 8,192
    assert (r0.kv_bytes_per_token, r.kv_bytes_per_token) == (81_920, 81_920 + 8_192)
    # two FullAttentionSpecs of one block size: one UniformTypeKVCacheSpecs group, page = sum of the layers' pages
    assert len(with_draft.kv_groups) == 1 and r.bytes_per_block == 90_112 * 16
    assert with_draft.ranks[0].num_blocks == r.kv_pool_bytes // (90_112 * 16)
    assert any("draft model: its weights" in w for w in with_draft.warnings)


def test_qwen3_draft_shares_the_kv_spec_and_rotary_table():
    target, draft = load_preset("qwen3-32b"), load_draft_model("Qwen/Qwen3-0.6B")
    p = plan(target, H100, engine(draft), Layout(tp=1), suggest=False)
    r = p.ranks[0]
    # Qwen3-0.6B: 28 layers of 8 KV heads x 128, like Qwen3-32B's 64: one spec, one group of 92 layers
    # KV per token: (64 + 28) x 2 x 8 x 128 x 2 = 262,144 + 114,688
    assert r.kv_bytes_per_token == 262_144 + 114_688
    assert [(g.kind, g.layers) for g in p.kv_groups] == [("full_attention", 92)]
    # rope_theta 1e6, 40,960 positions, 128 wide in both: get_rope hands the draft the target's table
    dm = term(r, "draft model (in weights)")
    assert "rotary table: the target's" in dm.source
    # Qwen3-0.6B at TP 1: 596,049,920 parameters (tied) x 2 B; its 296.75 MiB embedding gets a 298 MiB segment kept
    # whole (kvplan.vllm_alloc: the load's max_split_size_mb 20 from vLLM 0.21.0 never splits a >= 20 MiB request;
    # before it the 1.25 MiB rest, > 1 MiB, was split off): + 1,310,720 B
    assert dm.bytes == 596_049_920 * 2 + 1_310_720


def test_method_resolution_and_import():
    # "method" omitted: vLLM names a model path that is no EAGLE / MTP / ngram one a draft model (config/speculative.py)
    for spec in (SPEC_1B, '{"model": "meta-llama/Llama-3.2-1B", "num_speculative_tokens": 4}'):
        args = parse_vllm_command(f"vllm serve meta-llama/Llama-3.1-70B -tp 4 --speculative-config '{spec}'")
        assert (args.speculative_method, args.num_speculative_tokens, args.draft.name) == \
            ("draft_model", 4, "llama-3.2-1b")
    from kvplan.web.commands import parse_command
    from kvplan.web.state import PlanState
    from kvplan.web.views import imported_state

    line = f"vllm serve Qwen/Qwen3-32B --speculative-config '{SPEC_1B.replace('meta-llama/Llama-3.2-1B', 'Qwen/Qwen3-0.6B')}'"
    imported, _ = imported_state(PlanState(import_gpu="H100-SXM"), parse_command(line))
    assert (imported.speculative_method, imported.num_speculative_tokens, imported.drafter) == \
        ("draft_model", 4, "qwen3-0.6b")


def test_cli_plans_the_draft(capsys):
    from kvplan.cli import main

    assert main(["plan", "llama-3.1-70b", "--gpu", "H100-SXM", "-tp", "4", "--max-model-len", "32768",
                 "--speculative-config", SPEC_1B, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["ranks"][0]["kv_bytes_per_token"] == 90_112


@pytest.mark.parametrize("config, match", [
    # vLLM's own texts
    ('{"method": "draft_model", "model": "meta-llama/Llama-3.2-1B"}', "num_speculative_tokens"),
    (SPEC_1B[:-1] + ', "draft_tensor_parallel_size": 1}',
     "Currently, 'draft_tensor_parallel_size' and 'tensor_parallel_size' must be the same. Got 1 and 4"),
    (SPEC_1B[:-1] + ', "disable_padded_drafter_batch": true}', "only supports padded drafter batch"),
    # what kvplan does not size
    (SPEC_1B[:-1] + ', "use_heterogeneous_vocab": true}', "heterogeneous"),
    (SPEC_1B[:-1] + ', "draft_sample_method": "probabilistic"}', "probabilistic"),
    ('{"method": "draft_model", "model": "acme/tiny-llama", "num_speculative_tokens": 4}', "--draft-config PATH"),
])
def test_speculative_config_refusals(config, match):
    with pytest.raises(PlanInputError, match=match) as exc:
        parse_vllm_command(f"vllm serve meta-llama/Llama-3.1-70B -tp 4 --speculative-config '{config}'")
    assert exc.value.field == "--speculative-config"


def test_plan_refusals():
    llama, qwen = load_preset("llama-3.1-70b"), load_preset("qwen3-32b")
    draft = load_draft_model("llama-3.2-1b")
    # vocab 151,936 vs 128,256: vLLM's verify_equal_vocab_size_if_draft_model, quoted
    with pytest.raises(PlanInputError, match="Target model vocab_size=151936. Draft model vocab_size=128256"):
        plan(qwen, H100, engine(draft), Layout(tp=1), suggest=False)
    # 0.14.1's arg_utils refuses the method; 0.15.0 brings DraftModelProposer
    with pytest.raises(PlanInputError, match="Draft model speculative decoding is not supported yet"):
        plan(llama, H100, engine(draft, version="0.14"), Layout(tp=4), suggest=False)
    plan(llama, H100, engine(draft, version="0.15"), Layout(tp=4), suggest=False)
    with pytest.raises(PlanInputError, match="pipeline parallelism"):
        plan(llama, H100, engine(draft), Layout(tp=4, pp=2), suggest=False)
    with pytest.raises(PlanInputError, match="needs its draft model"):
        plan(llama, H100, engine(None), Layout(tp=4), suggest=False)
    # a draft of 2,048 positions: the 0.33 profile plans 0.32.0 (keeps max_model_len; 0.33.0 lowers it: said)
    short = parse_draft_model({**preset_config("llama-3.2-1b"), "max_position_embeddings": 2048}, "short")
    assert any("0.33.0's V2 runner lowers max_model_len to the draft's" in w and "--max-model-len 2048 for it" in w
               for w in plan(llama, H100, engine(short), Layout(tp=4), suggest=False).warnings)
    assert any("drafts no tokens" in w for w in plan(llama, H100, engine(short, "0.29"), Layout(tp=4),
                                                     suggest=False).warnings)


def test_draft_configs_vllm_would_not_build_alike_are_refused():
    gemma = preset_config("gemma-2-9b")  # sliding-window layers
    with pytest.raises(ConfigError, match="sliding_attention") as exc:
        parse_draft_model(gemma, "gemma-2-9b")
    assert exc.value.field == "draft_config.layer_types"
    with pytest.raises(ConfigError) as exc:
        parse_draft_model({"model_type": "llama"}, "broken")
    assert exc.value.field.startswith("draft_config.")


def test_runner_by_release():
    # config/vllm.py _get_v2_model_runner_unsupported_features lists draft_model through 0.30.0, not in 0.31.0
    assert vllm_model_runner("0.29", "llama", False, False, False, "draft_model") == "V1"
    assert vllm_model_runner("0.30", "llama", False, False, False, "draft_model") == "V1"
    assert vllm_model_runner("0.33", "llama", False, False, False, "draft_model") == "V2"


def test_sidebar_candidates_and_default():
    # the target's vocabulary and smaller, smallest first; the default the smallest of its model_type
    assert draft_model_candidates(load_preset("llama-3.1-70b")) == (("llama-3.2-1b", "llama-3.2-3b", "llama-3.1-8b"),
                                                                   "llama-3.2-1b")
    assert draft_model_candidates(load_preset("qwen3-32b"))[1] == "qwen3-0.6b"
    # Gemma-2-27B: only Gemma-1's 2B shares its 256,000 vocabulary (another family: no default, the user chooses)
    assert draft_model_candidates(load_preset("gemma-2-27b-it")) == (("gemma-2b",), None)


def test_sidebar_defaults_to_the_smallest_draft_of_the_family():
    from tests.app_util import html_tables, run_app, state

    at = run_app()
    at.session_state["kv.knobs"] = True
    at.run()
    at.selectbox(key="w.speculative_method").select("draft_model").run()
    assert not at.exception and not at.error
    select = at.selectbox(key="w.drafter")
    assert select.options == ["llama-3.2-1b", "llama-3.2-3b"] and select.value == "llama-3.2-1b"
    assert state(at).drafter == "llama-3.2-1b" and at.query_params["dft"] == "llama-3.2-1b"
    rows = {r["term"]: r for r in next(t for t in html_tables(at) if t and "term" in t[0])}
    # Llama-3.2-1B beside Llama-3.1-8B at TP 1: 1,235,814,400 x 2 B + its own rotary table 131,072 x 64 x 2 B
    # (16,777,216) + the 501 MiB embedding's 502 MiB segment kept whole (1 MiB rest: 1,048,576) = 2,489,454,592 B
    assert int(rows["draft model (in weights)"]["bytes"].replace(",", "")) == \
        1_235_814_400 * 2 + 16_777_216 + 1_048_576 == 2_489_454_592


def test_a_quantized_draft_uses_its_own_quantization_config():
    # vLLM loads the draft with quant_config=None, recomputed from the draft's config (the target's stays its own)
    cfg = {**preset_config("llama-3.2-1b"), "quantization_config": {"quant_method": "fp8",
                                                                    "activation_scheme": "dynamic"}}
    draft = parse_draft_model(cfg, "fp8-1b")
    p = plan(load_preset("llama-3.1-70b"), H100, engine(draft), Layout(tp=4), suggest=False)
    # one of 4 ranks: the tied embedding stays bf16 (65,667,072 x 2 = 131,334,144 B); a layer's 7 linears in fp8,
    # 15,204,352 B, + 7 per-tensor fp32 scales (28 B), norms 4,096 x 2 B -> 15,212,572 B x 16; final norm 4,096 B
    #   = 374,739,392 B, + its rotary table 16,777,216 B (no Marlin on Hopper; kvplan.vllm_alloc rounds no quantized
    #   checkpoint's tensors)
    assert term(p.ranks[0], "draft model (in weights)").bytes == \
        131_334_144 + 16 * (15_204_352 + 28 + 8_192) + 4_096 + 16_777_216 == 391_516_608


def _full_attention_gpt_oss_draft():
    # gpt-oss-20b's config with every layer full attention (kvplan plans full-attention drafts only): 24 layers of 32
    # MXFP4 experts, H 2,880, I 2,880 (1,440 a TP 2 rank), vocab 201,088 as gpt-oss-120b's
    config = dict(preset_config("gpt-oss-20b"))
    config["layer_types"] = ["full_attention"] * config["num_hidden_layers"]
    return parse_draft_model(config, "gpt-oss-20b-full-attention", "test")


def test_a_typed_moe_backend_lays_out_the_drafts_experts_too():
    # vLLM builds the draft from a copy of the target's VllmConfig, kernel_config.moe_backend included (0.33.0 V2
    # standalone_ar/speculator.py load_draft_model; V1 llm_base_proposer.py _create_draft_vllm_config), so
    # --moe-backend marlin puts the draft's MXFP4 experts in Marlin's layout as well. One expert on a TP 2 rank:
    # Triton (auto on Hopper, 0.33's (16, 32) value alignment, I 1,440 -> 1,472): values 1,440 x 2,944 + 736 x 2,880
    # = 6,359,040 + swizzled scales 3,072 x 92 + 3,072 x 48 = 430,080 (K padded to 4, the checkpoint's freed) + fp32
    # biases 23,296 = 6,812,416 B; Marlin (H 3,072, I 1,536) 2 x 1,536 x 3,072 / 2 + 3,072 x 1,536 / 2 + 2 x 1,536 x
    # 96 + 3,072 x 48 + (2 x 1,536 + 3,072) x 2 = 7,532,544 B: 24 layers x 32 experts x 720,128 = 553,058,304 B more
    # in the draft row (the draft was laid out in auto's before)
    draft = _full_attention_gpt_oss_draft()

    def row(moe_backend):
        p = plan(load_preset("gpt-oss-120b"), H100, engine(draft, moe_backend=moe_backend), Layout(tp=2),
                 suggest=False)
        return term(p.ranks[0], "draft model (in weights)").bytes

    auto, marlin = row("auto"), row("marlin")
    assert marlin - auto == 24 * 32 * (7_532_544 - 6_812_416) == 553_058_304
    assert (auto, marlin) == (7_032_182_400, 7_585_240_704)


def test_a_typed_moe_backend_vllm_refuses_for_the_drafts_experts_is_refused():
    # --moe-backend flashinfer_trtllm on Hopper: map_mxfp4_backend gives FLASHINFER_TRTLLM_MXFP4_BF16, which does not
    # support SM 9.0 (fused_moe/oracle/mxfp4.py _return_or_raise): vLLM raises while building the experts, the
    # target's or the draft's: a dense target (a Llama of gpt-oss's vocab) is refused for the draft's experts
    draft = _full_attention_gpt_oss_draft()
    dense = parse_config({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
                          "num_hidden_layers": 8, "num_attention_heads": 32, "num_key_value_heads": 8,
                          "intermediate_size": 14336, "vocab_size": 201_088, "max_position_embeddings": 32768,
                          "torch_dtype": "bfloat16", "tie_word_embeddings": False}, "dense-201k")
    with pytest.raises(PlanInputError, match="refuses --moe-backend flashinfer_trtllm for these MXFP4 experts"):
        plan(dense, H100, engine(draft, moe_backend="flashinfer_trtllm"), Layout(tp=2), suggest=False)
    assert plan(dense, H100, engine(draft, moe_backend="marlin"), Layout(tp=2), suggest=False).starts


def test_a_speculative_config_moe_backend_is_refused():
    # SpeculativeConfig.moe_backend (0.19.0+): the V1 proposer puts it in the draft's kernel_config, the V2 speculator
    # ignores it; kvplan lays the draft out in the target's --moe-backend, so it refuses a draft backend of its own
    spec = json.dumps({"method": "draft_model", "model": "meta-llama/Llama-3.2-1B", "num_speculative_tokens": 4,
                       "moe_backend": "triton"})
    with pytest.raises(PlanInputError, match="moe_backend 'triton': a draft MoE backend of its own"):
        parse_vllm_command(f"vllm serve meta-llama/Llama-3.1-70B --speculative-config '{spec}'")
