"""SGLang EAGLE3 with a draft head kvplan ships (--speculative-algorithm EAGLE3 --speculative-draft-model-path ...),
planned from the rules read in the sglang 0.5.14 - 0.5.23 wheels (2026-12; kvplan.sglang, kvplan.drafter
sglang_draft_head): the head loads before the pool is profiled (its weights in "Load weight end", type=
LlamaForCausalLMEagle3), its own embed_tokens [vocab, h] stays resident until init_lm_head swaps in the target's
(after the pools), the pool's cell gains the head's layer (DefaultPoolConfigurator: int(cell x (1 + d / L));
HybridSWAPoolConfigurator 0.5.15+: F x (n_full + d) + r x S x n_swa), the draft worker then allocates its own pool at
the same #tokens over its own layer, and max_running_requests is 48 without --max-running-requests.

Numbers by hand. The plain plan (no speculative decoding) on the same GPU and release is the reference: 0.5.20 adds no
speculative reserve (SglangProfile.speculative_reserve_mib 0), so the KV budget drops by exactly the head's weights
and its resident embedding.
- Llama-3.1-8B + lmsys/sglang-EAGLE3-LLaMA3.1-Instruct-8B (SpecForge llama3-8B-eagle3.json: h 4,096, 32 / 8 heads x
  128, intermediate 14,336, vocab 128,256, draft vocab 32,000) on one H100-SXM: head q/k/v 8,192 x 6,144 = 50,331,648
  + o 16,777,216 + MLP 3 x 4,096 x 14,336 = 176,160,768 + 3 norms 12,288 + fc 12,288 x 4,096 = 50,331,648 + norm
  4,096 + lm_head 32,000 x 4,096 = 131,072,000 -> 424,689,664 parameters, 849,379,328 B; embed_tokens 128,256 (2,004 x
  64) x 4,096 x 2 = 1,050,673,152 B. Cell 32 x 8 x 128 x 2 x 2 = 131,072 -> int(131,072 x 33 / 32) = 135,168.
  Plain pool 53,661,292,234 B - 849,379,328 - 1,050,673,152 = 51,761,239,754 B // 135,168 = 382,940 tokens.
- gpt-oss-120b + lmsys/EAGLE3-gpt-oss-120b-bf16 (SpecForge gpt-oss-120B-eagle3.json: h 2,880, 64 / 8 heads x 64,
  intermediate 17,280, vocab 201,088, draft vocab 32,000) on one H200: head q/k/v 5,760 x 5,120 = 29,491,200 + o
  4,096 x 2,880 = 11,796,480 + MLP 3 x 2,880 x 17,280 = 149,299,200 + 3 norms 8,640 + fc 8,640 x 2,880 = 24,883,200 +
  norm 2,880 + lm_head 32,000 x 2,880 = 92,160,000 -> 307,641,600 parameters, 615,283,200 B; embed_tokens 201,088
  (3,142 x 64) x 2,880 x 2 = 1,158,266,880 B. Cell: 18 full layers + the head's, 2,048 B each (8 x 64 x 2 x 2) =
  38,912, + 0.8 x 18 x 2,048 (kvplan: floor 29,491) = 68,403. Plain pool 69,398,634,472 - 615,283,200 - 1,158,266,880
  = int(67,625,084,392 B // 68,403.2) = 988,624 tokens (SGLang's float cell).
No public SGLang EAGLE3 start-up log on a GPU was found (the search tools' "issues" corpus and find_string on
"type=LlamaForCausalLMEagle3, avail mem=": one Ascend NPU Kimi-K2.6 line under DP attention, not a plan kvplan makes).
"""

import pytest

from kvplan.cli import main
from kvplan.drafter import load_drafter, parse_draft
from kvplan.errors import PlanInputError
from kvplan.presets import preset_config
from tests.app_util import kvplan_plan

LLAMA_HEAD, OSS_HEAD = 849_379_328, 615_283_200
LLAMA_EMBED, OSS_EMBED = 128_256 * 4_096 * 2, 201_088 * 2_880 * 2


def eagle(preset: str, head: str, gpu: str, version: str = "0.5.20", **kw):
    return kvplan_plan(preset, gpu, engine="sglang", sglang_version=version, speculative_method="eagle3",
                       num_speculative_tokens=3, draft=load_drafter(head, "eagle3"), **kw)


def terms(plan) -> dict[str, int]:
    return {t.name: t.bytes for t in plan.ranks[0].terms}


def test_llama_3_1_8b_eagle3_on_an_h100():
    plain = kvplan_plan("llama-3.1-8b", "H100-SXM", engine="sglang", sglang_version="0.5.20")
    p = eagle("llama-3.1-8b", "lmsys/sglang-EAGLE3-LLaMA3.1-Instruct-8B", "H100-SXM")
    r, t = p.ranks[0], terms(p)
    assert t["eagle3 draft head (in weights)"] == LLAMA_HEAD == 424_689_664 * 2
    assert t["EAGLE3 head's own embed_tokens (freed after the pool is sized)"] == LLAMA_EMBED == 1_050_673_152
    assert r.weights_bytes - plain.ranks[0].weights_bytes == LLAMA_HEAD
    assert plain.ranks[0].kv_pool_bytes - r.kv_pool_bytes == LLAMA_HEAD + LLAMA_EMBED
    assert (plain.ranks[0].kv_bytes_per_token, r.kv_bytes_per_token) == (131_072, 135_168)
    assert r.kv_pool_bytes == 51_761_239_754 and p.kv_cache_tokens == 51_761_239_754 // 135_168 == 382_940
    log = p.engine_log
    # the draft's load: its mem usage = head + embedding = 1,900,052,480 B = 1.77 GB (2^30 B, SGLang's GB)
    assert log[3].startswith("Load weight end. type=LlamaForCausalLMEagle3,") and log[3].endswith("mem usage=1.77 GB.")
    # the target's pool over its own 131,072 B (K 65,536): (382,940 + 1) x 65,536 = 25,096,159,232 B = 23.37 GB;
    # the head's pool: (382,940 + 1) x 2,048 B = 784,263,168 B = 0.73 GB each of K and V
    assert "#tokens: 382940, K size: 23.37 GB, V size: 23.37 GB" in log[4]
    # the head's config says float16 and --dtype auto takes each ModelConfig's own (model_config.py
    # _get_and_verify_dtype): its pool is float16, the target's bfloat16 (2 B either way)
    assert log[6] == "KV Cache is allocated. dtype: torch.float16, #tokens: 382940, K size: 0.73 GB, V size: 0.73 GB"
    assert "dtype: torch.bfloat16, #tokens: 382940" in log[4]
    assert "max_running_requests=48," in log[-1]


def test_gpt_oss_120b_eagle3_on_one_h200():
    plain = kvplan_plan("gpt-oss-120b", "H200", engine="sglang", sglang_version="0.5.20")
    p = eagle("gpt-oss-120b", "lmsys/EAGLE3-gpt-oss-120b-bf16", "H200")
    r, t = p.ranks[0], terms(p)
    assert t["eagle3 draft head (in weights)"] == OSS_HEAD == 307_641_600 * 2
    assert t["EAGLE3 head's own embed_tokens (freed after the pool is sized)"] == OSS_EMBED == 1_158_266_880
    assert plain.ranks[0].kv_pool_bytes - r.kv_pool_bytes == OSS_HEAD + OSS_EMBED
    assert (plain.ranks[0].kv_bytes_per_token, r.kv_bytes_per_token) == (36_864 + 29_491, 38_912 + 29_491)
    assert r.kv_pool_bytes == 67_625_084_392 and p.kv_cache_tokens == int(67_625_084_392 // 68_403.2) == 988_624  # the float cell (hybrid_swa_max_tokens)
    log = p.engine_log
    assert log[3].startswith("Load weight end. type=LlamaForCausalLMEagle3,")
    # the draft's mem usage: 615,283,200 + 1,158,266,880 = 1,773,550,080 B = 1.65 GB
    assert log[3].endswith("mem usage=1.65 GB.")
    assert log[4] == "Use sliding window memory pool. full_layer_tokens=988624, swa_layer_tokens=790899"
    # the head's own pool after the target's: (988,624 + 1) x 1,024 B = 1,012,352,000 B = 0.94 GB each of K and V
    assert log[-3] == "KV Cache is allocated. dtype: torch.bfloat16, #tokens: 988624, K size: 0.94 GB, V size: 0.94 GB"
    assert "max_running_requests=48," in log[-1]


def test_gpt_oss_eagle3_tokens_as_the_engine_divides():
    # SGLang's hybrid SWA cell is a float (0.5.20 pool_configurator.py: F x 19 + 0.8 x S x 18 = 38,912 + 29,491.2 =
    # 68,403.2 B): int(67,625,084,392 // 68,403.2) = 988,624 (the whole-byte 68,403 would give 988,627)
    assert eagle("gpt-oss-120b", "lmsys/EAGLE3-gpt-oss-120b-bf16", "H200").kv_cache_tokens == 988_624


def test_releases_and_pools():
    # 0.5.14's HybridSWAPoolConfigurator leaves the draft out of the cell: refused, naming the flag and what to pick
    with pytest.raises(PlanInputError) as exc:
        eagle("gpt-oss-120b", "lmsys/EAGLE3-gpt-oss-120b-bf16", "H200", "0.5.14")
    assert exc.value.field == "--speculative-algorithm" and "Pick SGLang 0.5.15 or newer" in exc.value.message
    # one pool (--disable-hybrid-swa-memory): DefaultPoolConfigurator, 36 x 2,048 = 73,728 x (1 + 1/36) = 75,776
    p = eagle("gpt-oss-120b", "lmsys/EAGLE3-gpt-oss-120b-bf16", "H200", "0.5.14", disable_hybrid_swa_memory=True)
    assert p.ranks[0].kv_bytes_per_token == 75_776 and p.kv_cache_tokens == 67_625_084_392 // 75_776 == 892_434
    # 0.5.15+ price the head's layer in the hybrid cell (_draft_full_layers_num)
    assert eagle("gpt-oss-120b", "lmsys/EAGLE3-gpt-oss-120b-bf16", "H200", "0.5.15").ranks[0].kv_bytes_per_token \
        == 68_403
    with pytest.raises(PlanInputError) as exc:  # before 0.5.14 the draft is sized after the target's pool
        eagle("llama-3.1-8b", "lmsys/sglang-EAGLE3-LLaMA3.1-Instruct-8B", "H100-SXM", "0.5.10")
    assert exc.value.field == "--speculative-algorithm" and "pick SGLang 0.5.14 or newer" in exc.value.message


def test_what_stays_refused_names_the_flag():
    head = load_drafter("eagle3-llama3.1-8b", "eagle3")
    with pytest.raises(PlanInputError) as exc:  # DP attention + EAGLE3: not read
        kvplan_plan("llama-3.1-8b", "H100-SXM", 2, engine="sglang", speculative_method="eagle3",
                    num_speculative_tokens=3, draft=head, dp_attention_size=2)
    assert exc.value.field == "--speculative-algorithm" and "EAGLE3 with DP attention" in exc.value.message
    with pytest.raises(PlanInputError) as exc:  # EAGLE (1) with a head of its own
        kvplan_plan("llama-3.1-8b", "H100-SXM", engine="sglang", speculative_method="eagle", num_speculative_tokens=3,
                    draft=parse_draft("eagle", {**head.config, "architectures": ["LlamaForCausalLM"]}, "e1"))
    assert exc.value.field == "--speculative-algorithm" and "LlamaForCausalLMEagle" in exc.value.message
    # a head whose layer is not a target layer's size: SGLang sizes one thing and allocates another
    narrow = parse_draft("eagle3", {**head.config, "num_key_value_heads": 4}, "narrow")
    with pytest.raises(PlanInputError) as exc:
        kvplan_plan("llama-3.1-8b", "H100-SXM", engine="sglang", speculative_method="eagle3",
                    num_speculative_tokens=3, draft=narrow)
    assert exc.value.field == "--speculative-algorithm" and "2,048 B of KV a token" in exc.value.message
    with pytest.raises(PlanInputError) as exc:  # no head at all
        kvplan_plan("llama-3.1-8b", "H100-SXM", engine="sglang", speculative_method="eagle3", num_speculative_tokens=3)
    assert exc.value.field == "--speculative-draft-model-path" and "EAGLE3 needs its draft head" in exc.value.message


def test_cli_sglang_flags_plan_what_the_core_plans(capsys, tmp_path):
    core = eagle("llama-3.1-8b", "lmsys/sglang-EAGLE3-LLaMA3.1-Instruct-8B", "H100-SXM")
    base = ["plan", "llama-3.1-8b", "--gpu", "H100-SXM", "--engine", "sglang"]
    assert main([*base, "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path",
                 "lmsys/sglang-EAGLE3-LLaMA3.1-Instruct-8B", "--speculative-num-steps", "3"]) == 0
    out = capsys.readouterr().out
    assert f"#tokens: {core.kv_cache_tokens}," in out and "type=LlamaForCausalLMEagle3" in out
    # vLLM's spelling of the same choice plans the same
    assert main([*base, "--speculative-config", '{"method": "eagle3", "model": '
                 '"lmsys/sglang-EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 3}']) == 0
    assert f"GPU KV cache size: {core.kv_cache_tokens:,} tokens" in capsys.readouterr().out
    # a head kvplan does not ship: its config.json (here the shipped one, copied) plans the same
    cfg = tmp_path / "head" / "config.json"
    cfg.parent.mkdir()
    cfg.write_text(__import__("json").dumps(load_drafter("eagle3-llama3.1-8b", "eagle3").config))
    assert main([*base, "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", "me/head",
                 "--draft-config", str(cfg)]) == 0
    assert f"#tokens: {core.kv_cache_tokens}," in capsys.readouterr().out
    for args, err in ((["--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", "me/head"],
                       "--speculative-draft-model-path: 'me/head': kvplan ships no config"),
                      (["--speculative-algorithm", "STANDALONE"], "--speculative-draft-model-path: STANDALONE "
                       "needs its draft model"),
                      (["--speculative-algorithm", "DFLASH"], "--speculative-algorithm: 'DFLASH'"),
                      (["--speculative-algorithm", "NGRAM", "--speculative-num-steps", "0"],
                       "--speculative-num-steps: 0: kvplan plans 1 to 64 draft steps"),
                      (["--speculative-num-steps", "3"], "--speculative-algorithm: needed with")):
        assert main([*base, *args]) == 2
        assert err in capsys.readouterr().err
    assert main(["plan", "llama-3.1-8b", "--speculative-algorithm", "EAGLE3"]) == 2  # vLLM engine
    assert "need --engine sglang" in capsys.readouterr().err


def test_import_reads_the_eagle3_line():
    from kvplan.web.commands import parse_command
    from kvplan.web.views import knob_values

    cmd = parse_command("python3 -m sglang.launch_server --model-path openai/gpt-oss-120b --speculative-algorithm "
                        "EAGLE3 --speculative-draft-model-path lmsys/EAGLE3-gpt-oss-120b-bf16 --speculative-num-steps 3 "
                        "--speculative-eagle-topk 1 --speculative-num-draft-tokens 4")
    assert (cmd.speculative_method, cmd.num_speculative_tokens, cmd.drafter) == ("eagle3", 3, "eagle3-gpt-oss-120b")
    knobs = knob_values(cmd)
    assert (knobs["speculative_method"], knobs["drafter"]) == ("eagle3", "eagle3-gpt-oss-120b")
    assert preset_config("gpt-oss-120b")["vocab_size"] == 201_088  # the head drafts in the target's vocabulary


def test_standalone_llama_3_2_1b_beside_llama_3_1_8b_on_an_h100():
    # STANDALONE (vLLM's draft_model): Llama-3.2-1B (tied embeddings: 1,235,814,400 parameters, 2,471,628,800 B bf16)
    # loads at the target's TP before the pool is sized and keeps its own tables (init_lm_head is a no-op); the cell
    # prices its 16 layers as target layers: int(131,072 x (1 + 16 / 32)) = 196,608 B, while its own pool is 16 x 8 x
    # 64 x 2 x 2 = 32,768 B a token. Pool 53,661,292,234 - 2,471,628,800 = 51,189,663,434 B // 196,608 = 260,364.
    from kvplan.draft_model import load_draft_model

    plain = kvplan_plan("llama-3.1-8b", "H100-SXM", engine="sglang", sglang_version="0.5.20")
    p = kvplan_plan("llama-3.1-8b", "H100-SXM", engine="sglang", sglang_version="0.5.20",
                    speculative_method="draft_model", num_speculative_tokens=3,
                    draft=load_draft_model("meta-llama/Llama-3.2-1B-Instruct"))
    r = p.ranks[0]
    assert terms(p)["draft model (in weights)"] == 1_235_814_400 * 2 == 2_471_628_800
    assert plain.ranks[0].kv_pool_bytes - r.kv_pool_bytes == 2_471_628_800
    assert r.kv_bytes_per_token == 196_608 and p.kv_cache_tokens == 51_189_663_434 // 196_608 == 260_364
    log = p.engine_log
    # draft mem usage 2,471,628,800 B = 2.30 GB; its pool (260,364 + 1) x 16,384 B = 4,265,820,160 B = 3.97 GB a half
    assert log[3].startswith("Load weight end. type=LlamaForCausalLM,") and log[3].endswith("mem usage=2.30 GB.")
    assert log[6] == "KV Cache is allocated. dtype: torch.bfloat16, #tokens: 260364, K size: 3.97 GB, V size: 3.97 GB"
    with pytest.raises(PlanInputError) as exc:  # a sliding-window target: not modelled
        kvplan_plan("gpt-oss-120b", "H200", engine="sglang", speculative_method="draft_model",
                    num_speculative_tokens=3, draft=load_draft_model("meta-llama/Llama-3.2-1B-Instruct"))
    assert exc.value.field == "--speculative-algorithm"
    assert main(["plan", "llama-3.1-8b", "--gpu", "H100-SXM", "--engine", "sglang", "--speculative-algorithm",
                 "STANDALONE", "--speculative-draft-model-path", "meta-llama/Llama-3.2-1B-Instruct"]) == 0


def test_import_reads_a_standalone_line():
    from kvplan.web.commands import parse_command

    cmd = parse_command("python3 -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct "
                        "--speculative-algorithm STANDALONE --speculative-draft-model-path "
                        "meta-llama/Llama-3.2-1B-Instruct --speculative-num-steps 4")
    assert (cmd.speculative_method, cmd.num_speculative_tokens, cmd.drafter) == ("draft_model", 4, "llama-3.2-1b")


def test_steps_default_as_sglang_chooses_them():
    # arg_groups/speculative_hook.py _auto_choose_speculative_params (0.5.14 / 0.5.20 / 0.5.23): a LlamaForCausalLM
    # target gets (5, 4, 8), STANDALONE and gpt-oss (3, 1, 4); no pool depends on them
    from kvplan.sglang import auto_speculative_params
    from kvplan.web.commands import parse_command

    assert auto_speculative_params("eagle3", "LlamaForCausalLM") == (5, 4, 8)
    assert auto_speculative_params("draft_model", "LlamaForCausalLM") == auto_speculative_params(
        "eagle3", "GptOssForCausalLM") == (3, 1, 4)
    llama = parse_command("python3 -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct "
                          "--speculative-algorithm EAGLE3 --speculative-draft-model-path "
                          "lmsys/sglang-EAGLE3-LLaMA3.1-Instruct-8B")
    oss = parse_command("python3 -m sglang.launch_server --model-path openai/gpt-oss-120b --speculative-algorithm "
                        "EAGLE3 --speculative-draft-model-path lmsys/EAGLE3-gpt-oss-120b-bf16")
    assert (llama.num_speculative_tokens, oss.num_speculative_tokens) == (5, 3)
    from kvplan.cli_plan import sglang_speculative_args
    from types import SimpleNamespace

    args = SimpleNamespace(engine="sglang", speculative_config=None, mtp_tokens=0, speculative_algorithm="EAGLE3",
                           speculative_draft_model_path="lmsys/sglang-EAGLE3-LLaMA3.1-Instruct-8B",
                           speculative_num_steps=None, draft_config=None)
    assert sglang_speculative_args(args)["num_speculative_tokens"] == 5
