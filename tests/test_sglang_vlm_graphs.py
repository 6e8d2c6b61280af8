"""SGLang's default prefill CUDA graphs for multimodal models (kvplan.sglang mm_prefill_backend, sglang_mm_arch).

Read in the sglang wheels (2026-12): configs/model_config.py multimodal_breakable_cuda_graph_supported_model_archs /
multimodal_piecewise_cuda_graph_supported_model_archs, server_args.py _apply_cuda_graph_compatibility (0.5.14 - 0.5.18),
arg_groups/cuda_graph_hook.py apply_cuda_graph_compatibility (0.5.19+), arg_groups/memory_hook.py reserve_for_graph_mb
(0.5.20+: prefill graphs on add len(bs) x 8 MiB, 1536 with MLA, whichever backend). Every multimodal model loses them
("Multimodal prefill replay faults under BCG; allowlisted archs opt back in") except the allowlisted architectures:
Qwen3_5(Moe)ForConditionalGeneration keep breakable graphs from 0.5.16 (sgl-project/sglang PR #30620);
KimiK25ForConditionalGeneration is switched to tc_piecewise on 0.5.16 - 0.5.17 and breakable-listed from 0.5.18.
0.5.10 - 0.5.13, 0.5.14 (Cohere2Vision only) and 0.5.15 keep none of kvplan's presets.

Numbers by hand (H100: nvidia-smi 81559 MiB, TP1, chunk 8192, decode max_bs 256):
  reserve without prefill graphs 512 + 8192 x 1.5 + 1 / 8 x 1024 + 256 x 2 = 512 + 12288 + 128 + 512 = 13440 MiB
  with them: + len(prefill_graph_sizes(8192)) x 8 = 58 x 8 = 464 -> 13904 MiB
  round((81559 - 13904) / 81559, 3) = round(0.82952, 3) = 0.830; round((81559 - 13440) / 81559, 3) = round(0.83521, 3) = 0.835
  Qwen3.5's ViT as SGLang reads it (24 layers, no num_hidden_layers mapped; hidden 1152): 24 x 1152^2 / (24 x 1024^2)
  = 1.265625 -> 0.95 x (1 - 0.1 x 0.265625) = 0.924765625
  Qwen3-VL-8B's on 0.5.20 / 0.5.21 (depth 27 mapped): 27 x 1152^2 / (24 x 1024^2) = 1.423828125 -> 0.95 x
  (1 - 0.0423828125) = 0.909736328125
"""

import pytest

from kvplan import load_preset
from kvplan.engines import EngineConfig
from kvplan.gpus import get_gpu
from kvplan.parallel import Layout
from kvplan.plan import plan
from kvplan.sglang import (
    SGLANG_PROFILES,
    default_settings,
    mm_line_note,
    mm_prefill_backend,
    sglang_mm_arch,
    vit_shape,
)

P = SGLANG_PROFILES
H100 = get_gpu("H100-SXM")
H200 = get_gpu("H200")
QWEN35 = "Qwen3_5ForConditionalGeneration"
KIMI = "KimiK25ForConditionalGeneration"


def _settings(preset: str, version: str, mib: int = 81559, tp: int = 1, **kw):
    spec = load_preset(preset)
    return default_settings(P[version], mib, "nvidia-smi", tp, vit=vit_shape(spec.towers, version, spec.model_type),
                            mm_arch=sglang_mm_arch(spec.model_type, spec.towers), **kw)


def test_presets_map_onto_sglang_architectures():
    for name, arch in (("qwen3.5-27b", QWEN35), ("qwen3.6-27b-nvfp4", QWEN35),
                       ("qwen3.5-35b-a3b", "Qwen3_5MoeForConditionalGeneration"),
                       ("qwen3.5-397b-a17b", "Qwen3_5MoeForConditionalGeneration"),
                       ("kimi-k2.5", KIMI), ("kimi-k2.6-nvfp4", KIMI),  # deepseek_v3 text + a MoonViT tower
                       ("kimi-k2-instruct", ""), ("deepseek-v3", ""),  # no tower: not KimiK25
                       ("qwen2.5-vl-7b-instruct", ""), ("qwen3-vl-8b-instruct", ""), ("gemma-3-27b-it", "")):
        spec = load_preset(name)
        assert sglang_mm_arch(spec.model_type, spec.towers) == arch, name


@pytest.mark.parametrize("version", ["0.5.20", "0.5.21"])
def test_qwen35_27b_keeps_its_breakable_prefill_graphs_on_h100(version):
    s = _settings("qwen3.5-27b", version)
    assert s.prefill_graph_count == 58 and s.reserved_mib == 13904  # 13440 + 58 x 8
    assert s.mem_fraction_static == pytest.approx(0.830 * 0.924765625, abs=1e-12)  # 0.76755546875
    assert f"58 breakable prefill CUDA graphs kept for the multimodal {QWEN35}" in s.rule
    # kvplan had it as every VLM: graphs off, 13440 MiB -> 0.835 x 0.924765625 = 0.77218 (0.0046 x pre ~ 0.36 GiB more KV)
    off = default_settings(P[version], 81559, "", 1, vit=(24, 1152))
    assert (off.prefill_graph_count, off.reserved_mib) == (0, 13440)
    assert off.mem_fraction_static == pytest.approx(0.835 * 0.924765625, abs=1e-12)


@pytest.mark.parametrize("version", ["0.5.20", "0.5.21"])
def test_qwen3_vl_8b_off_the_allowlists_loses_them(version):
    s = _settings("qwen3-vl-8b-instruct", version)
    assert (s.prefill_graph_count, s.reserved_mib) == (0, 13440)
    assert s.mem_fraction_static == pytest.approx(0.835 * 0.909736328125, abs=1e-12)  # 0.75963...
    assert "prefill CUDA graphs kept" not in s.rule
    # Qwen2.5-VL too (32 layers x 1280: 32 x 1280^2 / (24 x 1024^2) = 2.0833 -> 0.95 x 0.89167 = 0.84708)
    q25 = _settings("qwen2.5-vl-7b-instruct", version)
    assert (q25.prefill_graph_count, q25.reserved_mib) == (0, 13440)


def test_the_plan_prices_the_fraction_with_the_graphs():
    # Qwen3.5-27B on one H100, 0.5.20: the "left free" term is (1 - 0.76755546875) x pre, pre = 79.19 GiB device total
    # less the 0.74 GiB one-GPU context
    p = plan(load_preset("qwen3.5-27b"), H100, EngineConfig(engine="sglang", sglang_version="0.5.20",
                                                            max_model_len=32768))
    rank = p.ranks[0]
    term = next(t for t in rank.terms if t.name.startswith("left free"))
    pre = H100.memory_bytes - round(0.74 * 2**30)
    assert term.name.startswith("left free: (1 - 0.7676) x free before load")
    assert term.bytes == int(pre * (1 - 0.830 * 0.924765625))
    assert "58 breakable prefill CUDA graphs kept for the multimodal Qwen3_5ForConditionalGeneration" in term.source
    # text-only serving (--language-model-only, 0.5.20+: ModelConfig.is_multimodal False): graphs by the text rules,
    # no VLM cut: 0.830 itself
    lm = plan(load_preset("qwen3.5-27b"), H100, EngineConfig(engine="sglang", sglang_version="0.5.20",
                                                             max_model_len=32768, language_model_only=True))
    assert next(t for t in lm.ranks[0].terms if t.name.startswith("left free")).bytes == int(pre * (1 - 0.830))
    assert not [w for w in lm.warnings if "language-model-only" in w]


def test_which_lines_keep_them():
    expect = {"0.5.10": (None, None), "0.5.14": (None, None), "0.5.15": (None, None),
              "0.5.17": ("breakable", "tc_piecewise"),  # Kimi-K2.5: piecewise-listed, switched to tc_piecewise
              "0.5.18": ("breakable", "breakable"), "0.5.20": ("breakable", "breakable"),
              "0.5.21": ("breakable", "breakable")}
    for version, (qwen, kimi) in expect.items():
        assert (mm_prefill_backend(P[version], QWEN35), mm_prefill_backend(P[version], KIMI)) == (qwen, kimi), version
    old = [v for v in P if P[v].prefill_graphs == "none"]  # through 0.5.9: no default prefill graphs at all
    assert len(old) == 9 and all(mm_prefill_backend(P[v], QWEN35) is None for v in old)
    assert mm_prefill_backend(P["0.5.20"], "") is None  # an architecture kvplan cannot name: off, as before
    # 0.5.14 (tc_piecewise line) keeps Cohere2Vision alone
    assert mm_prefill_backend(P["0.5.14"], "Cohere2VisionForConditionalGeneration") == "tc_piecewise"


def test_older_lines_reserve_13440_for_qwen35():
    for version in ("0.5.10", "0.5.14", "0.5.15"):  # chunk 8192, max_bs 256 on these lines too
        s = _settings("qwen3.5-27b", version)
        assert (s.prefill_graph_count, s.reserved_mib) == (0, 13440), version
    s = _settings("qwen3.5-27b", "0.5.17")  # 0.5.16+: kept (breakable)
    assert (s.prefill_graph_count, s.reserved_mib) == (58, 13904)


def test_kimi_k25_on_8_h200():
    # H200 143771 MiB, TP8: chunk 8192, decode max_bs 512: 512 + 12288 + 8 / 8 x 1024 + 512 x 2 = 14848 MiB; with the
    # prefill graphs MLA adds 1536 (not 8 a size) -> 16384 MiB: round((143771 - 16384) / 143771, 3) = round(0.88604, 3)
    # = 0.886 (without: round(0.89672, 3) = 0.897). MoonViT 27 x 1152: x 0.909736328125
    kw = dict(mib=143771, tp=8, mla=True)
    for version in ("0.5.17", "0.5.18", "0.5.20", "0.5.21"):
        s = _settings("kimi-k2.5", version, **kw)
        assert s.reserved_mib == 16384 and s.mem_fraction_static == pytest.approx(0.886 * 0.909736328125), version
    assert "tc_piecewise prefill CUDA graphs kept" in _settings("kimi-k2.5", "0.5.17", **kw).rule
    assert _settings("kimi-k2.5", "0.5.15", **kw).reserved_mib == 14848  # 0.5.15: off (MLA and multimodal)
    # tc_piecewise (0.5.17) is off under DP attention; breakable (0.5.20) keeps them there
    assert _settings("kimi-k2.5", "0.5.17", dp_attention=8, **kw).prefill_graph_count == 0
    assert _settings("kimi-k2.5", "0.5.20", dp_attention=8, **kw).prefill_graph_count > 0


def test_what_still_turns_them_off():
    assert _settings("qwen3.5-27b", "0.5.20", eager=True).prefill_graph_count == 0  # --disable-cuda-graph
    assert _settings("qwen3.5-27b", "0.5.20", rocm=True).prefill_graph_count == 0  # ROCm
    assert _settings("qwen3.5-27b", "0.5.20", piecewise="disable").prefill_graph_count == 0
    # an explicit fraction: the graphs are counted, the fraction is the one given
    s = _settings("qwen3.5-27b", "0.5.20", mem_fraction_static=0.8)
    assert s.mem_fraction_static == 0.8 and s.prefill_graph_count == 58


def test_the_015_line_notes_what_016_reserves():
    # 0.5.15 turns them off for every multimodal model; 0.5.16 keeps them for Qwen3.5: 13904 vs 13440 MiB
    note = mm_line_note(P["0.5.15"], "H100-SXM", "NVIDIA", H100.memory_bytes, 1, vit=(24, 1152), mm_arch=QWEN35)
    assert note.startswith(f"SGLang 0.5.16 keeps 58 breakable prefill CUDA graphs for the multimodal {QWEN35}")
    assert "reserves 13904 MiB instead of 13440" in note and "0.7676 instead of 0.7722" in note
    assert mm_line_note(P["0.5.15"], "H100-SXM", "NVIDIA", H100.memory_bytes, 1, vit=(24, 1152), mm_arch="") is None
    assert mm_line_note(P["0.5.17"], "H100-SXM", "NVIDIA", H100.memory_bytes, 1, vit=(24, 1152), mm_arch=QWEN35) is None
    p = plan(load_preset("qwen3.5-27b"), H100, EngineConfig(engine="sglang", sglang_version="0.5.15",
                                                            max_model_len=32768))
    assert any(w.startswith("SGLang 0.5.16 keeps 58 breakable") for w in p.warnings)


def test_language_model_only_where_sglang_has_no_such_flag():
    eng = EngineConfig(engine="sglang", sglang_version="0.5.14", max_model_len=32768, language_model_only=True)
    p = plan(load_preset("qwen3-vl-8b-instruct"), H100, eng)
    assert any("SGLang 0.5.14 has no --language-model-only (it came with 0.5.18)" in w for w in p.warnings)
    eng = eng.model_copy(update={"sglang_version": "0.5.18"})  # 0.5.18 - 0.5.19: is_multimodal from the checkpoint
    assert any("may lose them" in w for w in plan(load_preset("qwen3-vl-8b-instruct"), H100, eng).warnings)


def test_pp_turns_them_off_from_0519():
    # 0.5.19+ cuda_graph_hook.py: "Disabling breakable prefill CUDA graph by default for pipeline parallelism", before
    # any multimodal rule: Qwen3.5-27B PP2 on H100 (TP1: 512 + 12288 + 2 / 8 x 1024 + 512 = 13568 MiB) keeps none on
    # 0.5.20 / 0.5.21; the 0.5.18 line plans 0.5.18 (+ 464 = 14032) and the plan names 0.5.19's figures
    for version in ("0.5.20", "0.5.21"):
        s = _settings("qwen3.5-27b", version, pp=2)
        assert (s.prefill_graph_count, s.reserved_mib) == (0, 13568), version
    assert _settings("qwen3.5-27b", "0.5.18", pp=2).reserved_mib == 14032
    p = plan(load_preset("qwen3-8b"), H100, EngineConfig(engine="sglang", sglang_version="0.5.18", max_model_len=8192),
             Layout(tp=1, pp=2))
    assert any(w.startswith("SGLang 0.5.19 turns the default breakable prefill CUDA graphs off under pipeline "
                            "parallelism (0.5.18 keeps 58): it reserves 13568 MiB instead of 14032") for w in p.warnings)


def test_gemma3_and_llama4_are_text_models_to_sglang_by_default():
    # configs/model_config.py mm_disabled_models (0.4.10 - 0.5.23): enable_multimodal False -> is_multimodal False: no
    # VLM cut, the text prefill graphs: Gemma-3-27B-it on an H100 at 0.5.21 reserves 13904 MiB -> 0.830 flat (it had
    # 13440 x 0.90974 = 0.7596); Gemma 4 (not on the list) keeps the VLM rules
    for name in ("gemma-3-27b-it", "llama-4-scout-17b-16e-instruct"):
        p = plan(load_preset(name), H100, EngineConfig(engine="sglang", max_model_len=8192))
        term = next(t for t in p.ranks[0].terms if t.name.startswith("left free"))
        assert term.name.startswith("left free: (1 - 0.83) x") and "13904 MiB reserved" in term.source, name
        assert "vision tower" not in term.source
        assert not [t for t in p.ranks[0].terms if "multimodal" in t.name]
        assert any("text-only unless --enable-multimodal" in w for w in p.warnings), name
    g4 = plan(load_preset("gemma-4-26b-a4b"), H100, EngineConfig(engine="sglang", max_model_len=8192))
    assert "13440 MiB reserved" in next(t for t in g4.ranks[0].terms if t.name.startswith("left free")).source


def test_llama4_text_only_on_sglang_leaves_the_vision_model_out():
    # models/mllama4.py (0.4.10, 0.5.3 - 0.5.23): has_vision = has_vision_weights and enable_multimodal, which
    # configs/model_config.py sets False for Llama4ForConditionalGeneration unless --enable-multimodal: no
    # vision_model / multi_modal_projector is built; 0.4.5.post3 - 0.4.8 build it always. Gemma 3 builds SigLIP always.
    from kvplan.sglang import sglang_builds_tower
    from kvplan.vllm_mm import loads_tower
    scout = load_preset("llama-4-scout-17b-16e-instruct")
    assert not loads_tower(scout, EngineConfig(engine="sglang", sglang_version="0.5.21"))
    assert loads_tower(scout, EngineConfig(engine="sglang", sglang_version="0.4.8"))
    assert loads_tower(scout, EngineConfig(engine="vllm"))
    assert sglang_builds_tower("0.5.21", "gemma3_text")
    new = plan(scout, get_gpu("H200"), EngineConfig(engine="sglang", sglang_version="0.5.21"), Layout(tp=2))
    old = plan(scout, get_gpu("H200"), EngineConfig(engine="sglang", sglang_version="0.4.8"), Layout(tp=2))
    # the tower's share of a TP-2 rank, bf16: 871,932,416 parameters, of which 1,010,944 replicated (class and
    # positional embeddings 1,408 + 812,416, 2 + 68 layer norms x 2 x 1,408) and 95,744 row-parallel biases (68 x
    # 1,408, whole on each rank): (870,921,472 - 95,744) / 2 + 95,744 + 1,010,944 = 436,519,552 x 2 B = 873,039,104
    assert old.ranks[0].weights_bytes - new.ranks[0].weights_bytes == 873_039_104
    assert any("without the vision model's weights" in w for w in new.warnings)
