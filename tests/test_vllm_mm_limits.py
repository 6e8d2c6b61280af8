"""--limit-mm-per-prompt, --mm-processor-kwargs and VLLM_USE_V2_MODEL_RUNNER as vLLM reads them (kvplan.vllm_args,
kvplan.vllm_mm): which towers load, which item the multimodal profile runs, how many, and what it holds.

Rules read 2026-12 in the vLLM wheels 0.10.0 - 0.33.0 (kvplan.vllm_mm's docstrings cite the files). Real lines:
- QwenLM/Qwen3.8 issue #168 (2026-05-14, "vllm方式部署Qwen3.5-27B"): ``vllm serve /mnt/data/liuyang/model/Qwen3.5-27B
  --limit-mm-per-prompt '{"image": 6, "video": 2}' --tensor-parallel-size 2 --reasoning-parser qwen3 --max-model-len
  210000 --enable-prefix-caching --gpu-memory-utilization 0.95 --block-size 16 --port 8005 --enable-log-requests
  --enable-prompt-tokens-details --max-num-seqs 1024 --max_log_len 128 --mm-encoder-tp-mode data
  --mm-processor-cache-type shm --enable-prefix-caching --default-chat-template-kwargs '{"enable_thinking": false}'
  --served-model-name Qwen3.5-27B`` (the release is not given: planned at 0.19, a Qwen3.5-capable release of May 2026).
- vllm-project/recipes pull #75 (2025-10-01, Qwen/Qwen3-VL.md): text-only mode "by passing
  `--limit-mm-per-prompt.video 0 --limit-mm-per-prompt.image 0`, which skips the vision encoder and multimodal
  profiling" for ``vllm serve Qwen/Qwen3-VL-235B-A22B-Instruct``.
- vllm-project/vllm issue #15737 (vLLM 0.8.2): ``python -m vllm.entrypoints.openai.api_server --model
  Qwen2.5-VL-32B-Instruct --port 8000 --host 0.0.0.0 --dtype bfloat16 --tensor_parallel_size 2 --limit-mm-per-prompt
  image=5,video=5`` (the KEY=VALUE form before 0.10).
"""

import pytest

from kvplan import load_preset
from kvplan.engines import EngineConfig
from kvplan.errors import PlanInputError
from kvplan.gpus import get_gpu
from kvplan.plan import plan
from kvplan.vllm_args import parse_vllm_command
from kvplan.vllm_mm import loads_tower, mm_profiled, vllm_mm_item_reads_length, vllm_mm_items, vllm_mm_profile
from tests.test_engine_logs_2026b import _gemma4_31b_it
from tests.test_engine_logs_dec import _plan

H100 = get_gpu("H100-SXM")
ISSUE_168 = ("vllm serve /mnt/data/liuyang/model/Qwen3.5-27B --limit-mm-per-prompt '{\"image\": 6, \"video\": 2}' "
             "--tensor-parallel-size 2 --reasoning-parser qwen3 --max-model-len 210000 --enable-prefix-caching "
             "--gpu-memory-utilization 0.95 --block-size 16 --port 8005 --enable-log-requests "
             "--enable-prompt-tokens-details --max-num-seqs 1024 --max_log_len 128 --mm-encoder-tp-mode data "
             "--mm-processor-cache-type shm --enable-prefix-caching --default-chat-template-kwargs "
             "'{\"enable_thinking\": false}' --served-model-name Qwen3.5-27B")
RECIPE_75 = "vllm serve Qwen/Qwen3-VL-235B-A22B-Instruct --limit-mm-per-prompt.video 0 --limit-mm-per-prompt.image 0"
ISSUE_15737 = ("python -m vllm.entrypoints.openai.api_server --model Qwen2.5-VL-32B-Instruct --port 8000 --host 0.0.0.0 "
               "--dtype bfloat16 --tensor_parallel_size 2 --limit-mm-per-prompt image=5,video=5")


def _mm(spec, version, runner="V1", mnbt=8192, **kw):
    return vllm_mm_profile(spec, version, runner, 1, False, mnbt, 2, True, **kw)


def _mm_note(p) -> str:
    return next(t.source for t in p.ranks[0].terms if t.name.startswith("activation peak"))


def test_the_three_spellings_parse_and_a_bad_value_is_refused():
    assert parse_vllm_command(ISSUE_168).mm_limits == (("image", 6), ("video", 2))
    assert parse_vllm_command(RECIPE_75).mm_limits == (("video", 0), ("image", 0))  # argparse_utils.py's dotted keys
    assert parse_vllm_command(ISSUE_15737).mm_limits == (("image", 5), ("video", 5))  # nullable_kvs, vLLM < 0.10
    a = parse_vllm_command("""vllm serve m --limit-mm-per-prompt '{"video": {"count": 1, "num_frames": 8}}'""")
    assert a.mm_limits == (("video", 1),) and "num_frames" in a.notes[0]  # planned with the default item, said so
    for bad in ("image", '{"image": -1}', '{"image": true}', "image=x", "{image: 0}", '{"image": {"fps": 2}}', "[0]"):
        with pytest.raises(PlanInputError) as exc:
            parse_vllm_command(f"vllm serve m --limit-mm-per-prompt '{bad}'")
        assert exc.value.field == "--limit-mm-per-prompt"
    # --language-model-only is its own switch now; a limit never sets it
    assert not parse_vllm_command(RECIPE_75).language_model_only


def test_real_line_qwen3_5_issue_168_plans_one_image_item():
    # Qwen3.5-27B, TP 2, data-parallel ViT, at 0.19 on H100s: 8,192 batched tokens, image 16,384 tokens (> video's
    # 12,288): budget max(8,192, 16,384) = 16,384 -> 16,384 // 16,384 = 1 item; the decoder bound 1,024 x max(1,
    # min(6, 210,000 // 16,384 = 12)) = 6,144 does not bind
    args = parse_vllm_command(ISSUE_168)
    assert (args.tensor_parallel_size, args.mm_encoder_tp_mode, args.max_num_seqs) == (2, "data", 1024)
    p = _plan(load_preset("qwen3.5-27b"), H100, ISSUE_168, "0.19")
    assert "1 image item of 16,384 tokens (encoder budget 16,384)" in _mm_note(p)


def test_towers_skipped_per_release():
    g3, q, g4 = load_preset("gemma-3-27b-it"), load_preset("qwen3-vl-8b-instruct"), _gemma4_31b_it()
    cases = {  # (spec, limits, release) -> (tower built, encoder profiled)
        # gemma3_mm.py builds SigLIP whatever the limit until 0.15.0 (then _mark_tower_model(vllm_config, "image"));
        # with image 0 the registry runs text-only: no encoder step
        (g3, (("image", 0),), "0.14"): (True, False), (g3, (("image", 0),), "0.15"): (False, False),
        # qwen3_vl.py: visual = None with image and video 0 from 0.11.0; one of them at 0 keeps it
        (q, (("image", 0), ("video", 0)), "0.11"): (False, False), (q, (("image", 0),), "0.11"): (True, True),
        # Gemma-4's {"image", "video"} tower: the B300 line's image 0 / audio 0 keeps it (video 999)
        (g4, (("image", 0), ("audio", 0)), "0.26"): (True, True), (g4, (("image", 0), ("video", 0)), "0.26"): (False, False),
        # 0.10.x builds every tower
        (q, (("image", 0), ("video", 0)), "0.10"): (True, False),
    }
    for (spec, limits, version), want in cases.items():
        e = EngineConfig(vllm_version=version, mm_limits=limits)
        assert (loads_tower(spec, e), mm_profiled(spec, e)) == want, (spec.name, limits, version)
    # the weights follow: Gemma-3-27B's SigLIP + projector is 846,120,672 B in bf16 (tests/test_towers_mtp.py)
    with_tower = plan(g3, H100, EngineConfig(vllm_version="0.14", mm_limits=(("image", 0),)))
    without = plan(g3, H100, EngineConfig(vllm_version="0.15", mm_limits=(("image", 0),)))
    text = plan(g3, H100, EngineConfig(vllm_version="0.15", language_model_only=True))
    assert with_tower.ranks[0].weights_bytes - without.ranks[0].weights_bytes == 846_120_672
    assert without.ranks[0].weights_bytes == text.ranks[0].weights_bytes
    assert "multimodal profile" not in _mm_note(with_tower)  # built, but "running in text-only mode"
    # --skip-mm-profiling (0.10.2+): the tower loads, no encoder step
    skip = parse_vllm_command("vllm serve google/gemma-3-27b-it --skip-mm-profiling").engine_fields()["skip_mm_profiling"]
    e = EngineConfig(vllm_version="0.19", skip_mm_profiling=skip)
    assert skip and loads_tower(g3, e) and not mm_profiled(g3, e)
    assert mm_profiled(g3, EngineConfig(vllm_version="0.10", skip_mm_profiling=True))  # 0.10.0 - 0.10.1 lack it


def test_a_modality_at_zero_is_not_the_item():
    q, g4 = load_preset("qwen3-vl-8b-instruct"), _gemma4_31b_it()
    # Qwen3-VL-8B at 0.19 with {"image": 0}: the video, two frames under 25,165,824 px: 12,582,912 // 32^2 = 12,288
    # tokens, 4 x 12,288 = 49,152 patches of 1,536 values; budget max(8,192, 12,288) = 12,288 -> 1 item; held (V1) =
    # 49,152 x 1,536 x 2 B (150,994,944) + 12,288 rows x 16,384 (4,096 x 4 deepstack) x 2 B (402,653,184)
    m = _mm(q, "0.19", limits=(("image", 0),))
    assert (m.modality, m.items, m.budget, m.held) == ("video", 1, 12_288, 553_648_128)
    assert 49_152 * 1_536 * 2 + 12_288 * 16_384 * 2 == 553_648_128
    # 0.13 - 0.14.1: the video's frames follow max_model_len (two 3,520^2 frames below 16,200: 12,100 tokens)
    m = _mm(q, "0.14", limits=(("image", 0),), max_model_len=8192)
    assert (m.modality, m.items, m.budget) == ("video", 1, 12_100)
    assert vllm_mm_item_reads_length(q, "0.14", (("image", 0),)) and not vllm_mm_item_reads_length(q, "0.14")
    # Gemma-4-31B at 0.26 with {"video": 0}: the image, 280 tokens: 8,192 // 280 = 29 items; each zero-padded to 280
    # x 3^2 = 2,520 patches of 3 x 16^2 = 768 values, 256 soft tokens out (the 224^2 dummy: 48^2 / 9); held =
    # 29 x 2,520 x 768 x 2 B (112,250,880) + 29 x 256 x 5,376 x 2 B (79,822,848)
    m = _mm(g4, "0.26", limits=(("video", 0),))
    assert (m.modality, m.items, m.held) == ("image", 29, 192_073_728)
    assert 29 * 2_520 * 768 * 2 + 29 * 256 * 5_376 * 2 == 192_073_728
    # every modality at 0: nothing to profile
    assert _mm(g4, "0.26", limits=(("video", 0), ("image", 0))).items == 0


def test_the_decoder_bound_where_max_num_seqs_is_below_the_encoder_items():
    g3 = load_preset("gemma-3-27b-it")
    # Gemma-3-27B at 0.19, 8,192 batched tokens: 8,192 // 256 = 32 images by the encoder budget; --max-num-seqs 4:
    # max_model_len 512 -> 4 x max(1, min(999, 512 // 256 = 2)) = 8 items, held 8 x 3 x 896^2 x 2 B (38,535,168) + 8 x
    # 256 x 5,376 x 2 B (22,020,096); max_model_len 200 -> 4 x max(1, 0) = 4; an image limit of 1 -> 4 x 1 = 4
    assert _mm(g3, "0.19", max_model_len=512, max_num_seqs=4).held == 60_555_264 == 38_535_168 + 22_020_096
    assert _mm(g3, "0.19", max_model_len=200, max_num_seqs=4).items == 4
    assert _mm(g3, "0.19", max_model_len=4096, max_num_seqs=4, limits=(("image", 1),)).items == 4
    assert _mm(g3, "0.19", max_model_len=4096, max_num_seqs=64).items == 32  # 64 x 16 >= 32: not binding
    # 0.10.x (gpu_model_runner.py profile_run): max_num_seqs x the limit, no length: 4 x 2 = 8
    assert vllm_mm_items("0.10", 8192, 256, 2, 4, 0) == 8
    # the plan keys the length only where the bound can bind (its budget memo), and follows it there
    assert vllm_mm_item_reads_length(g3, "0.19", (), 4, 8192) and not vllm_mm_item_reads_length(g3, "0.19", (), 32, 8192)
    notes = [_mm_note(plan(g3, H100, EngineConfig(vllm_version="0.19", max_num_seqs=4, max_model_len=n)))
             for n in (512, 200)]
    # in the plan the default batch budget is capped too (0.11.1+, kvplan.engines.batch_defaults): 4 x 512 = 2,048
    # tokens (8 images by the encoder budget, the decoder bound's 8) and 4 x 200 = 800 (800 // 256 = 3 < the bound's 4)
    assert "8 image items of 256 tokens (encoder budget 2,048)" in notes[0]
    assert "3 image items of 256 tokens (encoder budget 800)" in notes[1]


def test_mm_processor_kwargs_resize_the_qwen_items():
    q = load_preset("qwen3-vl-8b-instruct")
    a = parse_vllm_command("""vllm serve Qwen/Qwen3-VL-8B-Instruct --mm-processor-kwargs '{"max_pixels": 1003520}'""")
    assert a.mm_processor_kwargs == (("max_pixels", 1_003_520),)
    # 1,003,520 // 32^2 = 980 cells (28 x 35): the image has 980 tokens. At 0.19 get_max_video_tokens reads only
    # mm_kwargs "size", so the video keeps 12,288 tokens and becomes the item (1 of it)
    m = _mm(q, "0.19", mm_kwargs=a.mm_processor_kwargs)
    assert (m.modality, m.items) == ("video", 1)
    # size.longest_edge moves both at 0.19: the video's 1,003,520 // 2 px = 490 cells; the image (980) is the item:
    # 8,192 // 980 = 8 images, held 8 x 3,920 patches x 1,536 x 2 B (96,337,920) + 8 x 980 x 16,384 x 2 B (256,901,120)
    m = _mm(q, "0.19", mm_kwargs=(("size.longest_edge", 1_003_520),))
    assert (m.modality, m.items, m.held) == ("image", 8, 353_239_040) and 96_337_920 + 256_901_120 == 353_239_040
    # 0.32+ routes a flat max_pixels to videos_kwargs too: the image again, 8 items; the V2 runner holds the outputs
    m = _mm(q, "0.33", runner="V2", mm_kwargs=a.mm_processor_kwargs)
    assert (m.modality, m.items, m.held) == ("image", 8, 256_901_120)
    with pytest.raises(PlanInputError, match="0.17.0") as exc:  # the HF processor's constructor path: not modeled
        _mm(q, "0.16", mm_kwargs=a.mm_processor_kwargs)
    assert exc.value.field == "--mm-processor-kwargs"
    with pytest.raises(PlanInputError) as exc:  # a tower whose processing info kvplan does not read the kwargs for
        _mm(load_preset("gemma-3-27b-it"), "0.19", mm_kwargs=a.mm_processor_kwargs)
    assert exc.value.field == "--mm-processor-kwargs"
    for bad in ('{"max_soft_tokens": 560}', '{"size": {"shortest_edge": 4096}}', '{"max_pixels": 0}', "[1]"):
        with pytest.raises(PlanInputError) as exc:
            parse_vllm_command(f"vllm serve m --mm-processor-kwargs '{bad}'")
        assert exc.value.field == "--mm-processor-kwargs"


def test_vllm_use_v2_model_runner_is_read():
    assert parse_vllm_command("VLLM_USE_V2_MODEL_RUNNER=0 vllm serve m").engine_fields()["model_runner"] == "V1"
    assert parse_vllm_command("VLLM_USE_V2_MODEL_RUNNER=1 vllm serve m").engine_fields()["model_runner"] == "V2"
    assert "model_runner" not in parse_vllm_command("vllm serve m").engine_fields()  # the release's default
    docker = "docker run --gpus all -e VLLM_USE_V2_MODEL_RUNNER=0 vllm/vllm-openai:v0.26.0 --model m"
    assert parse_vllm_command(docker).model_runner == "V1"
    old = parse_vllm_command("docker run -e VLLM_USE_V2_MODEL_RUNNER=1 vllm/vllm-openai:v0.11.0 --model m")
    assert old.model_runner == "auto" and any("0.12.0" in n for n in old.notes)  # envs.py has it from 0.12.0
    with pytest.raises(PlanInputError) as exc:  # envs.py: int(os.getenv(...))
        parse_vllm_command("VLLM_USE_V2_MODEL_RUNNER=true vllm serve m")
    assert exc.value.field == "VLLM_USE_V2_MODEL_RUNNER"
    # it changes the plan: Gemma-4-31B (dense) runs V2 by default at 0.26, V1 with the variable at 0
    g4 = _gemma4_31b_it()
    assert plan(g4, H100, EngineConfig(vllm_version="0.26")).model_runner == "V2"
    assert plan(g4, H100, EngineConfig(vllm_version="0.26", model_runner="V1")).model_runner == "V1"
    q = load_preset("qwen3-vl-8b-instruct")  # before 0.12.0 the variable is not read
    assert plan(q, H100, EngineConfig(vllm_version="0.11", model_runner="V2")).model_runner == "V1"
