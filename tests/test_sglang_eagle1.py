"""SGLang EAGLE (1) heads (--speculative-algorithm EAGLE --speculative-draft-model-path a LlamaForCausalLMEagle head),
planned from the rules read in the sglang 0.5.14, 0.5.15, 0.5.17, 0.5.18, 0.5.20 and 0.5.21 wheels (2026-12-03):
models/llama_eagle.py LlamaForCausalLMEagle (the same parameters in every one) builds embed_tokens [vocab, h], its
decoder layers (layer 0's input_layernorm deleted), fc = torch.nn.Linear(2h, h) with its bias, no final norm, and
lm_head [vocab, h]; the draft loads before the target's pool is profiled; pool_configurator.py scales the cell by the
draft's num_hidden_layers for EAGLE as for EAGLE3 (spec_algorithm.is_eagle() is true for both); init_lm_head's
set_embed_and_head swaps both tables for the target's only after the pools are sized (speculative/eagle_worker_v2.py).
SGLang builds the class the draft config names (no renaming), so a LlamaForCausalLM config is refused.

Numbers by hand, against the plain plan of the same GPU and release (0.5.20 adds no speculative reserve):
Llama-3.1-8B + a one-layer LlamaForCausalLMEagle head of its dims (h 4,096, 32 / 8 heads x 128, intermediate 14,336,
vocab 128,256; kvplan ships no EAGLE (1) head, so its config is given) on one H100-SXM at bf16:
  q/k/v 4,096 x 6,144 = 25,165,824 + o 4,096 x 4,096 = 16,777,216 + MLP 3 x 4,096 x 14,336 = 176,160,768
  + post_attention_layernorm 4,096 + fc 8,192 x 4,096 = 33,554,432 + its bias 4,096 = 251,666,432 parameters
  -> 503,332,864 B kept; embed_tokens + lm_head 2 x 128,256 (2,004 x 64) x 4,096 x 2 = 2,101,346,304 B resident
  until the pools are sized. Cell 131,072 B over 32 layers -> int(131,072 x 33 / 32) = 135,168 B.
  Plain pool 53,661,292,234 B - 503,332,864 - 2,101,346,304 = 51,056,613,066 B // 135,168 = 377,727 tokens.
No public SGLang start-up log of an EAGLE (1) head with its #tokens was found (issues corpus: "max_total_num_tokens"
with "speculative" / "LlamaForCausalLMEagle"; sgl-project/sglang issue #10088's EAGLE launch logs graph memory only).
"""

import json

import pytest

from kvplan.cli import main
from kvplan.drafter import parse_draft
from kvplan.errors import PlanInputError
from tests.app_util import kvplan_plan

HEAD_CFG = {"architectures": ["LlamaForCausalLMEagle"], "model_type": "llama", "hidden_size": 4096,
            "intermediate_size": 14336, "num_attention_heads": 32, "num_key_value_heads": 8, "num_hidden_layers": 1,
            "vocab_size": 128256, "max_position_embeddings": 8192, "rope_theta": 500000.0, "rms_norm_eps": 1e-5,
            "torch_dtype": "bfloat16", "hidden_act": "silu", "tie_word_embeddings": False}
HEAD_BYTES = 251_666_432 * 2
TABLES = 2 * 128_256 * 4_096 * 2


def eagle(version: str = "0.5.20", cfg: dict | None = None, **kw):
    return kvplan_plan("llama-3.1-8b", "H100-SXM", engine="sglang", sglang_version=version, speculative_method="eagle",
                       num_speculative_tokens=3, draft=parse_draft("eagle", cfg or HEAD_CFG, "e1"), **kw)


def test_llama_3_1_8b_eagle_head_on_an_h100():
    plain = kvplan_plan("llama-3.1-8b", "H100-SXM", engine="sglang", sglang_version="0.5.20")
    p = eagle()
    r, t = p.ranks[0], {t.name: t for t in p.ranks[0].terms}
    assert t["eagle draft head (in weights)"].bytes == HEAD_BYTES == 503_332_864
    assert "fc (with its bias)" in t["eagle draft head (in weights)"].source
    assert "sglang/srt/models/llama_eagle.py LlamaForCausalLMEagle" in t["eagle draft head (in weights)"].source
    assert t["EAGLE head's own embed_tokens / lm_head (freed after the pool is sized)"].bytes == TABLES == 2_101_346_304
    assert r.weights_bytes - plain.ranks[0].weights_bytes == HEAD_BYTES
    assert plain.ranks[0].kv_pool_bytes == 53_661_292_234
    assert r.kv_pool_bytes == 53_661_292_234 - HEAD_BYTES - TABLES == 51_056_613_066
    assert (plain.ranks[0].kv_bytes_per_token, r.kv_bytes_per_token) == (131_072, 135_168)
    assert p.kv_cache_tokens == 51_056_613_066 // 135_168 == 377_727
    log = p.engine_log
    # the draft's load: 503,332,864 + 2,101,346,304 = 2,604,679,168 B = 2.43 GB (SGLang's GB: 2^30 B)
    assert log[3].startswith("Load weight end. type=LlamaForCausalLMEagle,") and log[3].endswith("mem usage=2.43 GB.")
    # target pool over its own cell; the head's pool: (377,727 + 1) x 2,048 B = 773,586,944 B = 0.72 GB of K and of V
    assert "#tokens: 377727, K size: 23.05 GB, V size: 23.05 GB" in log[4]
    assert log[6] == "KV Cache is allocated. dtype: torch.bfloat16, #tokens: 377727, K size: 0.72 GB, V size: 0.72 GB"
    assert "max_running_requests=48," in log[-1]
    assert any(w.startswith("EAGLE draft head (SGLang, LlamaForCausalLMEagle)") for w in p.warnings)
    # after the pools init_lm_head frees both tables (no d2t map: an EAGLE (1) head has none)
    after = next(w for w in p.warnings if w.startswith("EAGLE draft head (SGLang), after the pools"))
    assert "2,101,346,304 B" in after and "d2t" not in after


@pytest.mark.parametrize("version", ["0.5.14", "0.5.15", "0.5.17", "0.5.18", "0.5.21"])
def test_every_0_5_14_plus_line_plans_the_same_deduction(version):
    # each line's pool loses exactly the head's weights and its two tables, over the same 135,168 B cell
    plain = kvplan_plan("llama-3.1-8b", "H100-SXM", engine="sglang", sglang_version=version)
    p = eagle(version)
    assert plain.ranks[0].kv_pool_bytes - p.ranks[0].kv_pool_bytes == HEAD_BYTES + TABLES == 2_604_679_168
    assert p.kv_cache_tokens == p.ranks[0].kv_pool_bytes // 135_168
    assert p.engine_log[3].startswith("Load weight end. type=LlamaForCausalLMEagle,")


@pytest.mark.parametrize(("version", "cfg", "kw", "field", "words"), [
    # before 0.5.14 the draft is sized after the target's pool
    ("0.5.10", None, {}, "--speculative-algorithm", "pick SGLang 0.5.14 or newer"),
    # SGLang builds what the config names: a LlamaForCausalLM config is a one-layer Llama, not this head
    ("0.5.20", {**HEAD_CFG, "architectures": ["LlamaForCausalLM"]}, {}, "--speculative-algorithm",
     "EAGLE drafts with LlamaForCausalLMEagle"),
    ("0.5.20", {**HEAD_CFG, "hot_vocab_size": 32_000}, {}, "--speculative-algorithm", "reduced lm_head"),
    ("0.5.20", {**HEAD_CFG, "tie_word_embeddings": True}, {}, "--speculative-algorithm", "tie_word_embeddings"),
    ("0.5.20", None, {"dp_attention_size": 2}, "--speculative-algorithm", "EAGLE with a draft head with DP attention"),
])
def test_refusals(version, cfg, kw, field, words):
    with pytest.raises(PlanInputError) as exc:
        if kw.get("dp_attention_size"):
            kvplan_plan("llama-3.1-8b", "H100-SXM", 2, engine="sglang", sglang_version=version,
                        speculative_method="eagle", num_speculative_tokens=3,
                        draft=parse_draft("eagle", HEAD_CFG, "e1"), **kw)
        else:
            eagle(version, cfg)
    assert exc.value.field == field and words in exc.value.message


def test_vllm_refuses_sglangs_class_name():
    # vLLM renames an eagle draft's architecture to Eagle<arch> (transformers_utils/configs/eagle.py, 0.33.0): it has
    # no EagleLlamaForCausalLMEagle
    with pytest.raises(PlanInputError) as exc:
        kvplan_plan("llama-3.1-8b", "H100-SXM", speculative_method="eagle", num_speculative_tokens=3,
                    draft=parse_draft("eagle", HEAD_CFG, "e1"))
    assert exc.value.field == "--speculative-config" and "no EagleLlamaForCausalLMEagle" in exc.value.message


def test_no_head_config_names_the_draft_path_flag():
    # the Import page's EAGLE line with a head kvplan ships no config for: carried as "eagle" without a draft
    from kvplan.web.commands import parse_command

    cmd = parse_command("python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct "
                        "--speculative-algorithm EAGLE --speculative-draft-model-path lmsys/sglang-EAGLE-LLaMA3-Instruct-8B")
    assert (cmd.speculative_method, cmd.drafter) == ("eagle", None)
    with pytest.raises(PlanInputError) as exc:
        kvplan_plan("llama-3.1-8b", "H100-SXM", engine="sglang", speculative_method="eagle", num_speculative_tokens=3)
    assert exc.value.field == "--speculative-draft-model-path" and "kvplan ships no EAGLE (1) head, so this draft path is not planned" in \
        exc.value.message


def test_cli_plans_the_head_from_its_config(tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(HEAD_CFG))
    assert main(["plan", "llama-3.1-8b", "--gpu", "H100-SXM", "--engine", "sglang", "--sglang-version", "0.5.20",
                 "--speculative-algorithm", "EAGLE", "--draft-config", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["kv_cache_tokens"] == 377_727
    # a draft path alone (no config kvplan has): refused naming that flag
    assert main(["plan", "llama-3.1-8b", "--gpu", "H100-SXM", "--engine", "sglang", "--speculative-algorithm", "EAGLE",
                 "--speculative-draft-model-path", "lmsys/sglang-EAGLE-LLaMA3-Instruct-8B"]) == 2
    assert "--speculative-draft-model-path" in capsys.readouterr().err


def test_a_hybrid_with_zero_steps_is_not_planned_as_speculation_off():
    # SGLang's MambaPool reserve follows the algorithm (kv_cache_configurator.py _handle_max_mamba_cache:
    # has_spec_dec = not spec_algorithm.is_none(), 0.5.20), not the steps: 0 steps must not plan as speculation off.
    # EAGLE3 on a Qwen3.5 hybrid is refused; NGRAM is planned with its 12-token reserve (D 12, not the steps)
    with pytest.raises(PlanInputError) as exc:
        kvplan_plan("qwen3.5-27b", "H200", engine="sglang", sglang_version="0.5.20", speculative_method="eagle3",
                    num_speculative_tokens=0)
    assert exc.value.field == "--speculative-algorithm" and "MambaPool" in exc.value.message
    p = kvplan_plan("qwen3.5-27b", "H200", engine="sglang", sglang_version="0.5.20", speculative_method="ngram",
                    num_speculative_tokens=0)
    assert any(t.name.endswith("x 12 draft tokens)") for t in p.ranks[0].terms)


def test_quantization_fp8_quantizes_the_separate_draft_too():
    # SGLang's speculative_draft_model_quantization defaults to --quantization (0.5.14 server_args.py, 0.5.20
    # arg_groups/serving_hook.py); kvplan's weight_format "fp8" is --quantization fp8 (online FP8). The heads' decoder
    # layers take the quant_config; fc (torch.nn.Linear), norms and the EAGLE3 lm_head stay 16-bit.
    from kvplan.draft_model import load_draft_model
    from kvplan.drafter import load_drafter

    def head(p):
        return next(t.bytes for t in p.ranks[0].terms if t.name.endswith("draft head (in weights)") or
                    t.name == "draft model (in weights)")

    # EAGLE (1): q/k/v/o/MLP 218,103,808 params at 1 B + 7 per-tensor fp32 scales 28 B + (norm 4,096 + fc 33,558,528)
    # x 2 B = 285,229,084 B (503,332,864 B unquantized)
    e1 = eagle(weight_format="fp8")
    assert head(e1) == 218_103_808 + 7 * 4 + (4_096 + 33_558_528) * 2 == 285_229_084
    assert "--quantization fp8: its decoder layers' linears in FP8" in next(
        t.source for t in e1.ranks[0].terms if t.name == "eagle draft head (in weights)")
    # EAGLE3 (SpecForge Llama-3.1-8B head): q/k/v 8,192 x 6,144 + o + MLP = 243,269,632 at 1 B + 28 B, the rest
    # (lm_head 131,072,000 + fc 50,331,648 + norms 16,384) x 2 B = 606,109,724 B (849,379,328 unquantized)
    e3 = kvplan_plan("llama-3.1-8b", "H100-SXM", engine="sglang", sglang_version="0.5.20", speculative_method="eagle3",
                     num_speculative_tokens=3, draft=load_drafter("eagle3-llama3.1-8b", "eagle3"), weight_format="fp8")
    assert head(e3) == 243_269_632 + 28 + (131_072_000 + 50_331_648 + 16_384) * 2 == 606_109_724
    # STANDALONE Llama-3.2-1B (tied): 16 layers' linears 973,078,528 at 1 B + 16 x 7 x 4 B scales, embedding
    # 262,668,288 and 33 norms (67,584) x 2 B = 1,498,550,720 B (2,471,628,800 unquantized)
    sa = kvplan_plan("llama-3.1-8b", "H100-SXM", engine="sglang", sglang_version="0.5.20",
                     speculative_method="draft_model", num_speculative_tokens=3,
                     draft=load_draft_model("meta-llama/Llama-3.2-1B-Instruct"), weight_format="fp8")
    assert head(sa) == 973_078_528 + 16 * 7 * 4 + (262_668_288 + 67_584) * 2 == 1_498_550_720
    # another quantized format stands for a checkpoint shipped in it (no --quantization): the draft stays 16-bit,
    # said so
    q = eagle(weight_format="int8")
    assert head(q) == HEAD_BYTES
    assert any("planned in 16 bits: SGLang quantizes it only with --quantization" in w and "int8" in w
               for w in q.warnings)


def test_speculation_s_48_requests_trigger_the_swa_cap_warning():
    # SWAChunkCapPoolConfigurator.is_applicable (pool_configurator.py, 0.5.14 - 0.5.21) needs max_running_requests set
    # and --disable-radix-cache; speculative decoding sets 48 when the flag is not given (speculative_hook.py), so
    # NGRAM on gpt-oss-120b without --max-running-requests gets the cap's not-modelled warning too
    def noted(**kw):
        p = kvplan_plan("gpt-oss-120b", "H200", engine="sglang", sglang_version="0.5.20", enable_prefix_caching=False,
                        **kw)
        return any("SWAChunkCapPoolConfigurator" in w for w in p.warnings)

    assert not noted()
    assert noted(speculative_method="ngram", num_speculative_tokens=3)
    assert noted(max_num_seqs=64)


def test_an_mla_target_is_refused_naming_sglangs_flag():
    # an EAGLE head beside DeepSeek-V3's MLA layers: not modelled (drafter.check_plan), named by SGLang's own flag,
    # not vLLM's --speculative-config
    with pytest.raises(PlanInputError) as exc:
        kvplan_plan("deepseek-v3", "H200", 8, engine="sglang", sglang_version="0.5.20", speculative_method="eagle",
                    num_speculative_tokens=3, draft=parse_draft("eagle", {**HEAD_CFG, "hidden_size": 7168}, "e1"))
    assert exc.value.field == "--speculative-algorithm" and "mla layers is not modelled" in exc.value.message


def test_a_head_of_the_other_kind_is_refused():
    # an EAGLE3 head under EAGLE (and the reverse): SGLang's is_eagle3() decides the aux hidden states and
    # init_lm_head, vLLM renames the architecture by the method; neither builds the other kind: refused on both
    from kvplan.drafter import load_drafter

    three = load_drafter("eagle3-llama3.1-8b", "eagle3")
    for engine, field in (("sglang", "--speculative-algorithm"), ("vllm", "--speculative-config")):
        with pytest.raises(PlanInputError) as exc:
            kvplan_plan("llama-3.1-8b", "H100-SXM", engine=engine, speculative_method="eagle", num_speculative_tokens=3,
                        draft=three)
        assert exc.value.field == field and "is an eagle3 head, not eagle" in exc.value.message


def test_import_names_multi_layer_eagle_and_the_token_map_as_not_planned():
    # --enable-multi-layer-eagle keeps a draft pool a step (multi_layer_eagle_worker_v2.py draft_runner_list), kvplan
    # plans one; --speculative-token-map (an EAGLE head's hot rows, cloned after the pools) is not read either
    from kvplan.web.commands import parse_command
    from kvplan.web.views import unplanned_flags

    cmd = parse_command("python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct "
                        "--speculative-algorithm EAGLE3 --speculative-draft-model-path "
                        "lmsys/sglang-EAGLE3-LLaMA3.1-Instruct-8B --enable-multi-layer-eagle --speculative-token-map m.pt")
    assert cmd.unplanned == ("--enable-multi-layer-eagle", "--speculative-token-map m.pt") and not cmd.args.unknown
    notes = unplanned_flags(cmd)
    assert notes[0].startswith("--enable-multi-layer-eagle: not planned: SGLang's multi-layer EAGLE keeps a draft "
                               "runner per draft step")
    assert notes[1].startswith("--speculative-token-map m.pt: not planned")


def test_import_reads_the_target_as_its_own_draft_as_its_mtp_layers():
    # configs/model_config.py renames a draft DeepseekV3ForCausalLM to DeepseekV3ForCausalLMNextN (0.5.14 - 0.5.21):
    # the target's own path as the draft path is its MTP layers, not an EAGLE head of its own
    from kvplan.web.commands import parse_command

    cmd = parse_command("python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 --speculative-algorithm "
                        "EAGLE --speculative-draft-model-path deepseek-ai/DeepSeek-V3/ --tp 8")
    assert cmd.speculative_method == "mtp"
    assert any(n.startswith("--speculative-draft-model-path deepseek-ai/DeepSeek-V3/: the target's own checkpoint")
               for n in cmd.args.notes)
    other = parse_command("python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 --speculative-algorithm "
                          "EAGLE --speculative-draft-model-path someone/eagle-head --tp 8")
    assert other.speculative_method == "eagle"
