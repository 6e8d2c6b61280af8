"""vLLM EAGLE / EAGLE-3 speculative decoding with a separate draft head (kvplan.drafter): the head's weights per rank,
its attention layer in the KV groups, the --speculative-config parsing, and the refusals.

Numbers are derived by hand from the draft configs (kvplan/presets/DRAFTERS.json: SpecForge's configs, copied) and
vLLM's llama_eagle3.py / llama_eagle.py (0.10.2 - 0.33.0 wheels), in comments.
"""

import json

import pytest

from kvplan.drafter import DRAFTERS_FILE, draft_head, draft_rank_weight_bytes, draft_rope_bytes, load_drafter, \
    parse_draft
from kvplan.engines import EngineConfig
from kvplan.errors import ConfigError, PlanInputError
from kvplan.gpus import GPU_CATALOG
from kvplan.parallel import Layout
from kvplan.plan import plan
from kvplan.presets import load_preset, preset_config
from kvplan.vllm_args import parse_vllm_command

H100 = GPU_CATALOG["H100-SXM"]
LLAMA_HEAD = "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"
LLAMA_LINE = ("vllm serve meta-llama/Llama-3.1-8B-Instruct --speculative-config "
              f"'{{\"method\": \"eagle3\", \"model\": \"{LLAMA_HEAD}\", \"num_speculative_tokens\": 3}}'")


def llama_cfg() -> dict:
    return json.loads((DRAFTERS_FILE.parent / "eagle3-llama3.1-8b.json").read_text())


def eagle_engine(draft, **kw) -> EngineConfig:
    return EngineConfig(speculative_method=draft.method, num_speculative_tokens=3, draft=draft, **kw)


def test_drafter_presets_are_listed_and_verbatim():
    entries = json.loads(DRAFTERS_FILE.read_text())
    for e in entries:
        assert {"name", "file", "hf_repos", "family", "source", "provenance", "notes", "released", "method",
                "target"} <= set(e)
        assert e["provenance"] == "copied" and e["source"].startswith("github:sgl-project/SpecForge:configs/")
        text = (DRAFTERS_FILE.parent / e["file"]).read_text()
        assert json.loads(text)["architectures"] == ["LlamaForCausalLMEagle3"]
    # the SpecForge file, as committed (the first bytes and the last field)
    assert (DRAFTERS_FILE.parent / "eagle3-llama3.1-8b.json").read_text().startswith('{\n  "architectures": [\n')
    assert llama_cfg()["draft_vocab_size"] == 32000


def test_eagle3_llama_head_params_and_bytes():
    head = draft_head(load_drafter(LLAMA_HEAD, "eagle3"), "0.33", load_preset("llama-3.1-8b"))
    # h 4096, inter 14336, 32 q / 8 kv heads of 128, draft vocab 32000, 3 aux hidden states of 4096:
    # q 8192 x 4096 = 33,554,432 (2h inputs); k, v 8192 x 1024 = 8,388,608 each; o 4096 x 4096 = 16,777,216;
    # MLP 3 x 4096 x 14336 = 176,160,768; input_layernorm + hidden_norm + post_attention_layernorm + norm 4 x 4096;
    # fc 12288 x 4096 = 50,331,648; lm_head 32000 x 4096 = 131,072,000; embed_tokens: the target's (shared)
    assert head.params == 33_554_432 + 2 * 8_388_608 + 16_777_216 + 176_160_768 + 4 * 4096 + 50_331_648 \
        + 131_072_000 == 424_689_664
    assert head.embed_shared and not head.lm_head_shared and head.d2t_bytes == 32000 * 8
    # bf16, TP 1: 2 B a parameter (32000 is a multiple of 64: no vocab padding) + d2t int64
    assert draft_rank_weight_bytes(head, 1) == 424_689_664 * 2 + 256_000 == 849_635_328
    # TP 8: q 8192 x 512 = 4,194,304; k, v one head of 128 each: 8192 x 128 x 2 = 2,097,152; o 512 x 4096 =
    # 2,097,152; MLP 3 x 4096 x 1792 = 22,020,096; norms 16,384 and fc 50,331,648 whole; lm_head 4000 x 4096
    assert draft_rank_weight_bytes(head, 8) == 2 * (4_194_304 + 2_097_152 + 2_097_152 + 22_020_096 + 16_384
                                                    + 50_331_648 + 16_384_000) + 256_000 == 194_537_472


def test_eagle3_head_param_count_against_transformers():
    # transformers has no EAGLE-3 model: LlamaForCausalLM with the draft's config (1 layer) is a different model;
    # compare what both hold and add the differences by hand: the head drops embed_tokens (shared) and the full
    # lm_head [128256, 4096], and adds the reduced lm_head [32000, 4096], q/k/v's second 4096 inputs
    # (4096 x (4096 + 2 x 1024)), hidden_norm [4096] and fc [4096, 12288]
    from tests.test_oracle_transformers import transformers_param_count

    cfg = llama_cfg()
    hf = transformers_param_count({k: v for k, v in cfg.items() if k != "draft_vocab_size"})
    head = draft_head(load_drafter(LLAMA_HEAD, "eagle3"), "0.33", load_preset("llama-3.1-8b"))
    assert head.params == hf - 2 * 128256 * 4096 + 32000 * 4096 + 4096 * (4096 + 2 * 1024) + 4096 + 12288 * 4096


def test_eagle_one_head_against_transformers():
    # EAGLE (1) head of the same shape (LlamaForCausalLM, 1 layer): layer 0 without input_layernorm, fc [4096, 8192],
    # no final norm, no lm_head of its own; transformers' model has embed_tokens, input_layernorm, norm and lm_head
    from tests.test_oracle_transformers import transformers_param_count

    cfg = {**llama_cfg(), "architectures": ["LlamaForCausalLM"]}
    cfg.pop("draft_vocab_size")
    head = draft_head(parse_draft("eagle", cfg, "eagle-llama3-8b"), "0.33", load_preset("llama-3.1-8b"))
    hf = transformers_param_count(cfg)
    assert head.params == hf - 2 * 128256 * 4096 - 2 * 4096 + 8192 * 4096 == 251_662_336
    assert head.lm_head_shared and head.d2t_bytes == 0 and not head.spec.final_norm


def test_gpt_oss_120b_head():
    head = draft_head(load_drafter("lmsys/EAGLE3-gpt-oss-120b-bf16", "eagle3"), "0.33", load_preset("gpt-oss-120b"))
    # h 2880, inter 17280, 64 q / 8 kv heads of 64: q 5760 x 4096 = 23,592,960; k, v 5760 x 512 = 2,949,120 each;
    # o 4096 x 2880 = 11,796,480; MLP 3 x 2880 x 17280 = 149,299,200; 4 norms x 2880; fc 8640 x 2880 = 24,883,200;
    # lm_head 32000 x 2880 = 92,160,000
    assert head.params == 23_592_960 + 2 * 2_949_120 + 11_796_480 + 149_299_200 + 4 * 2880 + 24_883_200 \
        + 92_160_000 == 307_641_600
    assert draft_rank_weight_bytes(head, 1) == 307_641_600 * 2 + 256_000 == 615_539_200
    # TP 2: q 5760 x 2048; k, v 4 heads of 64 each: 5760 x 256 x 2; o 2048 x 2880; MLP 3 x 2880 x 8640; norms 4 x
    # 2880 and fc whole; lm_head 16000 x 2880
    assert draft_rank_weight_bytes(head, 2) == 2 * (5760 * 2048 + 5760 * 256 * 2 + 2048 * 2880 + 3 * 2880 * 8640
                                                    + 4 * 2880 + 24_883_200 + 16000 * 2880) + 256_000 == 332_792_320


def test_llama_plan_adds_the_head_and_one_kv_layer():
    spec = load_preset("llama-3.1-8b")
    draft = load_drafter(LLAMA_HEAD, "eagle3")
    base = plan(spec, H100, EngineConfig(), suggest=False).ranks[0]
    with_head = plan(spec, H100, eagle_engine(draft), suggest=False).ranks[0]
    # one more layer of 8 KV heads x 128 x (K + V) x 2 B = 4,096 B per token: 131,072 -> 135,168; 33 layers a block
    assert (base.kv_bytes_per_token, with_head.kv_bytes_per_token) == (131_072, 135_168)
    assert with_head.bytes_per_block == 33 * 16 * 4096 == 2_162_688
    terms = {t.name: t for t in with_head.terms}
    assert terms["eagle3 draft head (in weights)"].bytes == 849_635_328
    assert terms["eagle3 draft head (in weights)"].basis == "exact"
    # 0.27+ sizes the draft's own rope table (rope 10,000 unlike the target's llama3) to the target's length:
    # 131,072 x 128 x 2 B
    assert terms["draft head rotary table (in weights)"].bytes == 131_072 * 128 * 2
    assert with_head.weights_bytes == base.weights_bytes + 849_635_328 + 33_554_432
    assert with_head.num_blocks < base.num_blocks
    old = plan(spec, H100, eagle_engine(draft, vllm_version="0.26"), suggest=False).ranks[0]
    # before 0.27.0 the table has the draft's own 2,048 positions: 2,048 x 128 x 2 = 524,288 B
    assert {t.name: t.bytes for t in old.terms}["draft head rotary table (in weights)"] == 524_288


def test_gpt_oss_plan_draft_layer_joins_the_full_attention_group():
    spec = load_preset("gpt-oss-120b")
    draft = load_drafter("lmsys/EAGLE3-gpt-oss-120b-bf16", "eagle3")
    base = plan(spec, H100, EngineConfig(), suggest=False).ranks[0]
    with_head = plan(spec, H100, eagle_engine(draft), suggest=False).ranks[0]
    # 18 sliding + 18 full layers of 8 x 64 x 2 x 2 B = 2,048 B per token; the head adds a 19th full layer: the
    # groups are 19 layers (19 < 1.5 x 18), each page 16 x 2,048 B
    assert with_head.kv_bytes_per_token == base.kv_bytes_per_token + 2048
    assert (base.bytes_per_block, with_head.bytes_per_block) == (18 * 16 * 2048, 19 * 16 * 2048)


def test_measured_weights_hold_the_head_already():
    spec = load_preset("llama-3.1-8b")
    eng = eagle_engine(load_drafter(LLAMA_HEAD, "eagle3"), weights_bytes=17 * 2**30)
    rank = plan(spec, H100, eng, suggest=False).ranks[0]
    assert rank.weights_bytes == 17 * 2**30 and rank.kv_bytes_per_token == 135_168
    assert not any("draft head" in t.name for t in rank.terms)


def test_release_rules_for_a_full_vocabulary_head():
    cfg = {**llama_cfg(), "draft_vocab_size": None}
    draft = parse_draft("eagle3", cfg, "full-vocab")
    spec = load_preset("llama-3.1-8b")
    # d2t int64 [128256] always allocated through 0.29.0, only for a reduced vocabulary from 0.30.0
    assert draft_head(draft, "0.29", spec).d2t_bytes == 128256 * 8 and draft_head(draft, "0.30", spec).d2t_bytes == 0
    # 0.11.0 shares the target's lm_head when the shapes match; 0.11.1+ keeps the checkpoint's own; 0.10.2 never
    assert draft_head(draft, "0.11", spec).lm_head_shared
    assert not draft_head(draft, "0.11.1", spec).lm_head_shared and not draft_head(draft, "0.10", spec).lm_head_shared


def test_parse_known_drafter_lines():
    args = parse_vllm_command(LLAMA_LINE)
    assert (args.speculative_method, args.num_speculative_tokens) == ("eagle3", 3)
    assert args.draft.name == "eagle3-llama3.1-8b"
    EngineConfig(**args.engine_fields())
    # no "method": vLLM names it from the repo ("eagle3" in it)
    args = parse_vllm_command("vllm serve openai/gpt-oss-120b -tp 2 --speculative-config "
                              "'{\"model\": \"lmsys/EAGLE3-gpt-oss-120b-bf16\", \"num_speculative_tokens\": 3, "
                              "\"draft_tensor_parallel_size\": 2}'")
    assert (args.speculative_method, args.draft.name) == ("eagle3", "eagle3-gpt-oss-120b")


def test_unknown_drafter_is_refused_naming_the_flag_and_draft_config(tmp_path):
    line = ("vllm serve openai/gpt-oss-120b --speculative-config '{\"method\":\"eagle3\","
            "\"model\":\"nvidia/gpt-oss-120b-Eagle3\",\"num_speculative_tokens\":3}'")
    with pytest.raises(PlanInputError, match="--draft-config") as exc:
        parse_vllm_command(line)
    assert exc.value.field == "--speculative-config" and "nvidia/gpt-oss-120b-Eagle3" in exc.value.message
    # with the draft's config given, it is planned
    cfg = json.loads((DRAFTERS_FILE.parent / "eagle3-gpt-oss-120b.json").read_text())
    args = parse_vllm_command(line, draft_config=cfg, draft_name="nvidia/gpt-oss-120b-Eagle3")
    assert args.draft.name == "nvidia/gpt-oss-120b-Eagle3"


@pytest.mark.parametrize("config, match", [
    # draft_model is planned (tests/test_draft_model.py); a repo vLLM 0.33 names dflash by its name is refused
    ('{"model": "z-lab/Qwen3-8B-DFlash-b16", "num_speculative_tokens": 3}', "dflash"),
    ('{"method": "medusa", "model": "x/medusa", "num_speculative_tokens": 3}', "medusa"),
    ('{"method": "eagle3", "num_speculative_tokens": 3}', 'needs "model"'),
    (f'{{"method": "eagle3", "model": "{LLAMA_HEAD}"}}', "num_speculative_tokens"),
    (f'{{"method": "eagle", "model": "{LLAMA_HEAD}", "num_speculative_tokens": 2}}', "not eagle"),
    (f'{{"method": "eagle3", "model": "{LLAMA_HEAD}", "num_speculative_tokens": 2, "quantization": "fp8"}}',
     "quantized"),
])
def test_speculative_config_refusals(config, match):
    with pytest.raises(PlanInputError, match=match) as exc:
        parse_vllm_command(f"vllm serve meta-llama/Llama-3.1-8B-Instruct --speculative-config '{config}'")
    assert exc.value.field == "--speculative-config"


def test_draft_tp_other_than_the_target_is_refused():
    line = LLAMA_LINE.replace('"num_speculative_tokens": 3', '"num_speculative_tokens": 3, '
                                                              '"draft_tensor_parallel_size": 1') + " -tp 2"
    with pytest.raises(PlanInputError, match="draft_tensor_parallel_size 1"):
        parse_vllm_command(line)


def test_plan_refusals():
    spec = load_preset("llama-3.1-8b")
    draft = load_drafter(LLAMA_HEAD, "eagle3")
    with pytest.raises(PlanInputError, match="needs its draft head"):
        plan(spec, H100, EngineConfig(speculative_method="eagle3", num_speculative_tokens=3))
    with pytest.raises(PlanInputError, match="pipeline"):
        plan(spec, H100, eagle_engine(draft), Layout(pp=2))
    with pytest.raises(PlanInputError, match="vLLM and SGLang only"):  # SGLang's EAGLE3: tests/test_sglang_eagle3_plan.py
        plan(spec, H100, eagle_engine(draft, engine="custom"))
    with pytest.raises(PlanInputError, match="mla"):  # an MLA target: its KV groups beside the head not read
        plan(load_preset("deepseek-v2-lite"), H100, eagle_engine(draft))
    with pytest.raises(PlanInputError, match="vocab_size"):  # a Llama head on a gpt-oss target
        plan(load_preset("gpt-oss-120b"), H100, eagle_engine(draft))
    two = parse_draft("eagle3", {**llama_cfg(), "num_hidden_layers": 2}, "two-layer")
    with pytest.raises(PlanInputError, match="0.11.1"):
        plan(spec, H100, eagle_engine(two, vllm_version="0.11"))
    # 0.11.1+: both layers, the second over 4096 inputs: + q/k/v/o 4096 x (4096 + 2 x 1024) + 4096 x 4096, MLP, 3 norms
    extra = 4096 * 6144 + 4096 * 4096 + 176_160_768 + 3 * 4096
    assert draft_head(two, "0.11.1", spec).params == 424_689_664 + extra


@pytest.mark.parametrize("change, field", [
    ({"architectures": ["Qwen3ForCausalLM"]}, "draft_config.architectures"),
    ({"model_type": "qwen3"}, "draft_config.model_type"),
    ({"quantization_config": {"quant_method": "fp8"}}, "draft_config.quantization_config"),
    ({"layer_types": ["sliding_attention"], "sliding_window": 512}, "draft_config.layer_types"),
    ({"hidden_size": "big"}, "draft_config.hidden_size"),
])
def test_bad_draft_configs_name_the_field(change, field):
    with pytest.raises(ConfigError) as exc:
        parse_draft("eagle3", {**llama_cfg(), **change}, "bad")
    assert exc.value.field == field


def test_cli_speculative_config_and_draft_config(tmp_path, capsys):
    from kvplan.cli import main

    spec = ('{"method": "eagle3", "model": "nvidia/gpt-oss-120b-Eagle3", "num_speculative_tokens": 3}')
    assert main(["plan", "gpt-oss-120b", "--gpu", "H100-SXM", "--speculative-config", spec]) == 2
    assert "--draft-config" in capsys.readouterr().err
    folder = tmp_path / "gpt-oss-120b-Eagle3"
    folder.mkdir()
    (folder / "config.json").write_text((DRAFTERS_FILE.parent / "eagle3-gpt-oss-120b.json").read_text())
    assert main(["plan", "gpt-oss-120b", "--gpu", "H100-SXM", "--speculative-config", spec,
                 "--draft-config", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "eagle3 draft head (in weights)" in out and "0.57 GiB" in out  # 615,539,200 B
    assert main(["plan", "gpt-oss-120b", "--draft-config", str(folder)]) == 2
    assert "needs --speculative-config" in capsys.readouterr().err
    # the same flag plans ngram (no draft weights) and refuses what kvplan does not read
    assert main(["plan", "llama-3.1-8b", "--speculative-config", '{"method": "ngram", "num_speculative_tokens": 3}',
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["kv_groups"][0]["layers"] == 32
    assert main(["plan", "llama-3.1-8b", "--speculative-config", '{"method": "suffix"}']) == 2
    assert "kvplan plans mtp, ngram, eagle, eagle3 and draft_model" in capsys.readouterr().err


def test_import_page_carries_a_shipped_head():
    # the app carries a shipped head by its DRAFTERS.json name (tests/test_app_eagle.py: the pages)
    from kvplan.web.commands import parse_command
    from kvplan.web.state import PlanState
    from kvplan.web.views import imported_state

    imported, _ = imported_state(PlanState(import_gpu="H100-SXM"), parse_command(LLAMA_LINE))
    assert (imported.speculative_method, imported.num_speculative_tokens, imported.drafter) == \
        ("eagle3", 3, "eagle3-llama3.1-8b")


def test_rope_table_shared_when_the_parameters_match():
    spec = load_preset("llama-3.1-8b")
    rope = {k: preset_config("llama-3.1-8b")[k] for k in ("rope_theta", "rope_scaling", "max_position_embeddings")}
    draft = parse_draft("eagle3", {**llama_cfg(), **rope}, "same-rope")
    assert draft_rope_bytes(draft_head(draft, "0.33", spec), spec, "0.33", 2) == 0


def test_a_head_narrower_than_the_target_keeps_its_own_embedding():
    # vLLM PR #19033: Llama-3.3-70B's EAGLE-3 head has another hidden size than the target, so its own embed_tokens
    # stays (every release shares only a table of the target's shape). Here h 6144 beside a 8192 target:
    # embed 128256 x 6144 counted, fc over 3 x 8192 target hidden states
    cfg = {**llama_cfg(), "hidden_size": 6144, "num_attention_heads": 48, "head_dim": 128, "target_hidden_size": 8192}
    spec = load_preset("llama-3.1-70b")
    wide = draft_head(parse_draft("eagle3", cfg, "narrow"), "0.33", spec)
    assert not wide.embed_shared
    # q 12288 x 6144, k/v 12288 x 1024, o 6144 x 6144, MLP 3 x 6144 x 14336, 4 norms, fc 24576 x 6144,
    # lm_head 32000 x 6144, embed 128256 x 6144
    assert wide.params == (12288 * 6144 + 2 * 12288 * 1024 + 6144 * 6144 + 3 * 6144 * 14336 + 4 * 6144
                           + 24576 * 6144 + 32000 * 6144 + 128256 * 6144)


def test_fc_width_and_norm_before_fc_by_release():
    spec = load_preset("gpt-oss-120b")
    cfg = json.loads((DRAFTERS_FILE.parent / "eagle3-gpt-oss-120b.json").read_text())
    four = parse_draft("eagle3", {**cfg, "eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 9, 17, 33]}}, "4aux")
    with pytest.raises(PlanInputError, match="0.22"):  # fc over 3 hidden states through 0.21.0
        draft_head(four, "0.21", spec)
    # from 0.22.0 fc reads 4 x 2880 = 11,520 inputs: 2880 x 2880 more parameters than with 3
    assert draft_head(four, "0.22", spec).params == 307_641_600 + 2880 * 2880
    normed = parse_draft("eagle3", {**cfg, "norm_before_fc": True}, "normed")
    with pytest.raises(PlanInputError, match="0.18"):
        draft_head(normed, "0.17", spec)
    assert draft_head(normed, "0.18", spec).params == 307_641_600 + 3 * 2880  # input_norm [8640]


def test_draft_config_file_errors_name_the_flag(tmp_path):
    from kvplan.drafter import read_draft_config

    bad = tmp_path / "config.json"
    bad.write_text("{not json")
    for path in (str(bad), str(tmp_path / "missing.json"), str(tmp_path)):
        with pytest.raises(PlanInputError) as exc:
            read_draft_config(path)
        assert exc.value.field == "--draft-config"
    bad.write_text('["a list"]')
    with pytest.raises(PlanInputError, match="--draft-config"):
        read_draft_config(str(bad))
    with pytest.raises(ConfigError, match="JSON object"):
        parse_draft("eagle3", ["a list"], "x")


def test_head_rotary_table_follows_the_plan_length_from_0_27():
    # vLLM 0.27+ stretches the head's 2,048-position table to the plan's max_model_len: 8,192 x 128 x 2 B =
    # 2,097,152 B at --max-model-len 8192, 131,072 x 128 x 2 = 33,554,432 B at the full length; 0.26 keeps the head's
    # own 2,048 x 128 x 2 = 524,288 B whatever the length. The budget memo is keyed on it (a plan at 8,192 after one
    # at 131,072 must not reuse the longer table).
    spec = load_preset("llama-3.1-8b")
    rope = {}
    for version, length in (("0.33", 131_072), ("0.33", 8192), ("0.26", 8192)):
        engine = EngineConfig(vllm_version=version, max_model_len=length, speculative_method="eagle3",
                              num_speculative_tokens=3, draft=load_drafter("yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "eagle3"))
        p = plan(spec, GPU_CATALOG["H100-SXM"], engine)
        rope[version, length] = next(t.bytes for t in p.ranks[0].terms if t.name.startswith("draft head rotary"))
    assert rope == {("0.33", 131_072): 33_554_432, ("0.33", 8192): 2_097_152, ("0.26", 8192): 524_288}
