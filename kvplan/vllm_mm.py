"""vLLM's multimodal profile run: the encoder's dummy batch and what it leaves held under the LM's dummy run.

Read 2026-12 in the vLLM wheels 0.10.0 - 0.33.0 (v1/worker/gpu_model_runner.py ``profile_run`` /
``_get_mm_dummy_batch``, v1/worker/gpu/model_runner.py ``profile_run`` + gpu/mm/encoder_runner.py
``profile_encoder_cache`` / ``execute_mm_encoder``, multimodal/encoder_budget.py ``MultiModalBudget``
(multimodal/profiling.py before 0.13), v1/core/encoder_cache_manager.py ``compute_mm_encoder_budget``):

1. The item: of the modalities whose --limit-mm-per-prompt count is above 0 (vLLM's default 999 where not named),
   the one with the most tokens per item (``get_modality_with_max_tokens``), at its maximum size
   (``get_mm_max_tokens_per_item``, else the dummy prompt's embeds): ``spec.TowerProfile`` and its ``others``
   (kvplan.families.towers). Qwen3-VL / Qwen3.5 with {"image": 0} profile their video, Gemma-4 with {"video": 0}
   its image (280 tokens); every modality at 0: no encoder profiling ("running in text-only mode"), and from the
   release ``Tower.vllm_skip_from`` no tower either (``loads_tower``). --mm-processor-kwargs max_pixels /
   size.longest_edge resize the Qwen items (0.17.0+, ``_modality_items``); other keys are refused by kvplan.vllm_args.
2. The budget: encoder budget = min(compute, cache) = max(max_num_batched_tokens, tokens per item) (both default to
   max_num_batched_tokens); items = max(1, min(budget // tokens per item, max_num_seqs x max(1, min(limit,
   max_model_len // tokens per item)))) (``_get_max_items``, 0.11.0 - 0.33.0; 0.10.x max_num_seqs x limit:
   ``vllm_mm_items``). The decoder bound binds only where --max-num-seqs is below the encoder's items, and only then
   does the plan's budget memo key max_model_len for it (``vllm_mm_item_reads_length``).
3. The encoder forward on that batch (``embed_multimodal``), then its outputs cached as encoder_cache["tmp..."] while
   the LM's ``_dummy_run(max_num_tokens)`` and the sampler run: the torch peak is
   max(encoder forward peak, LM peak + what the encoder step leaves held).

What is held through the LM run, by release (exact):
- V1 runner: the batched dummy inputs (``batched_dummy_mm_inputs``, a local of profile_run until it returns; floating
  tensors cast to the model dtype by multimodal/processing ``_postprocess_output``) + the outputs:
  0.10.x as returned (items x embeds x text hidden); 0.11.x each scattered into a new (encoder budget, hidden)
  zeros tensor (``expanded = output.new_zeros((encoder_budget, ...))``); 0.12.0 into (tokens per item, hidden)
  where the output is shorter; 0.13.0 - 0.33.0 as returned (``encoder_cache[f"tmp_{i}"] = output``).
- V2 runner (kvplan.engines.vllm_model_runner): no encoder profiling 0.22.0 - 0.26.0 (its profile_run has none);
  from 0.27.0 ``profile_encoder_cache`` on the first PP rank only: the inputs are batched inside
  ``execute_mm_encoder`` and freed on return, the outputs held.
- Either runner, wherever the encoder runs: a buffer the tower's first forward makes and keeps
  (``TowerProfile.kept_buffer_bytes``): MoonViT's 2-D RoPE table, 512 x 512 x head_dim / 2 complex64 = 72 MiB for
  Kimi-K2.5 (kvplan.families.towers ``moonvit_rope_table_bytes``, 0.15.0 - 0.33.0). With --mm-encoder-tp-mode data
  and fewer items than ranks, only the ranks given an item run the tower (vision.py get_load_balance_assignment:
  rank 0 first); kvplan plans that busiest rank, the one whose pool binds.

The encoder forward peak (an estimate, labelled so): inputs + outputs + N x dtype x max(attention stage
3h + 4h/w, MLP stage 2h + k I/w) + the dense mask, with N = items x patches per item (the whole batch in one call:
vLLM's towers run it at once; Gemma-4 from 0.22 calls its tower on chunks of frames, frames x patches x 4 x 10240 x
8 B <= min(free / 2, total / 10), gemma4_mm.py _encoder_chunk: 23 frames a call on an L40S, 41 on an H100; kvplan
takes total / 10 (free / 2 binds only when the weights leave under a fifth of the device free) and adds the earlier
chunks' hidden states, kept for the torch.cat), w the TP
ways (--mm-encoder-tp-mode weights; data: whole widths, the items split over the ranks), k = 3 for a gated MLP
(gate_up 2I + activation I), 2 for fc1 + activation. Attention runs in vLLM's MMEncoderAttention / SDPA kernels
(no N x N scores); Pixtral's HF-format tower without xformers (a dependency of the 0.10 / 0.11 wheels only) builds
one (N, N) model-dtype block mask (transformers generate_block_attention_mask). Gemma-4's tower is transformers'
Gemma4VisionModel (5.23: F.embedding position lookup; the one_hot variant gemma4_mm.py _encoder_chunk was written
against would need ~2.8 GiB (23 frames, 0.25 on an L40S) to ~4 GiB (32, 0.19) of int64 one-hots and their bf16 cast,
and neither the A100 0.19 nor the L40S 0.25 Gemma-4 log has room for it). --mm-encoder-tp-mode data splits the
items as kvplan.parallel.tower_rank_bytes replicates the tower (vLLM honours it only for models that declare
supports_encoder_tp_data; elsewhere it runs as weights).

Qwen3-VL / Qwen3.5 and Kimi-K2.5 (an estimate: their item's size lives in the checkpoint's preprocessor_config.json,
which kvplan does not read; the Qwen / Moonshot checkpoints' values are assumed and recorded as an assumption,
kvplan.families.towers QWEN_VL_IMAGE_MAX_PIXELS / KIMI_K25_PATCH_LIMIT): Qwen's item is the image at longest_edge
16,777,216 px = 16,384 tokens (65,536 patches of 1,536 values); its video (two frames at 25,165,824 / 2 px from
0.15.0; 0.11.0 - 0.14.1 frames from max_model_len, get_num_frames_with_most_features, under the same pixel total) has
at most 12,288 soft tokens, fewer than the image from 0.13.0. 0.11.0 - 0.12.0 count it as int(12.5 x soft tokens)
(the timestamp text), 153,600 at max_model_len >= 16,200 (151,250 below it: two 3,520^2 frames), so there the
item is the video and follows max_model_len (kvplan.families.towers.qwen_vl_length_video): vllm_mm_item_reads_length
says so and plan() keys its budget memo with the length only then. Its outputs carry the deepstack features:
rows of out_hidden_size x (1 + len(deepstack_visual_indexes)) (Qwen3_VisionTransformer.forward's torch.cat; Qwen3.5
has none), so Qwen3-VL-8B holds 16,384 x 4,096 x 4 x 2 B = 512 MiB + 192 MiB of pixel values at 8,192 batched
tokens (the older rule held 64 MiB). Its ViT attends each image whole through MMEncoderAttention (FlashAttention
varlen / SDPA on cu_seqlens: no N x N scores), but Qwen2_5_VisionAttention.forward keeps its locals to the proj: qkv
(3h), the contiguous q/k pair (2h), its rotated copy (2h), v made contiguous for the kernel (h), the context and its
contiguous rearrangement (2h): 10h / w where a generic block holds 4h / w (an estimate: TowerProfile.attn_live_sharded),
so the attention stage (3h + 10h = 14,976 x N x 2 B for h 1,152) beats the MLP (2h + 2I = 10,912). Kimi-K2.5's
item is a 3000^2 image under in_patch_limit 16,384: 130^2 = 16,900 patches, 65^2 = 4,225 tokens (its 4-frame video
chunk has 1,089); MoonViT's apply_rope upcasts q / k to fp32: 11h / w.

Qwen2-VL / Qwen2.5-VL (qwen2_vl.py Qwen2VLProcessingInfo, which qwen2_5_vl.py inherits; an estimate on the Qwen
checkpoints' preprocessor_config.json max_pixels 12,845,056, kvplan.families.towers QWEN2_VL_MAX_PIXELS): the image is
16,384 cells of 28 x 28 (3,584^2, 65,536 patches of 1,176 values); the video's frames are that image at the same per-frame
limit, grown while ceil(n / 2) x 16,384 tokens fit max_model_len (mm_counts one video), at most 14 frames from 0.11.0
(16 before; 0.10.0 - 0.10.1.1 count under max_model_len less the image's 16,384 where the image limit is above 0:
VLLM_CHANGES qwen2_vl_video_frames_from_one, qwen2_vl_video_no_image_reserve), so in every release the item follows
max_model_len: the image to 16,384 (a 2-frame video ties it: "image" before 0.17.0, "video" after,
mm_max_tokens_tie_by_name), a 4-frame video at 32,768, 14 frames = 114,688 tokens (458,752 patches) from 114,688 (the
default 128,000 of Qwen2.5-VL-7B: vLLM 0.23's "budget of 114688 tokens, and profiled with 1 video items").
--mm-processor-kwargs max_pixels / size.longest_edge (0.17.0+) resize the image and every frame alike. The block is
Qwen2_5_VisionAttention (10h / w, as Qwen3-VL) with a gated MLP (2h + 3I / w).

Not modeled (a tower without a ``TowerProfile`` keeps the older rule, one (max_num_batched_tokens, hidden) cache
tensor held, no encoder step): a checkpoint's own pixel limits (preprocessor_config.json); --mm-processor-kwargs
before 0.17.0 (vLLM hands them to the HF processor's constructor) and any key but Qwen's pixel limits (refused);
--limit-mm-per-prompt's dummy options (num_frames, width, height: noted, the default item planned); the decoder
bound without chunked prefill (max_num_seqs first cut to max_num_batched_tokens // tokens per item); Gemma-4's audio
item (its audio tower is not modeled); the profile keys "0.30" (0.30.0 - 0.31.0) and "0.33" (0.32.0+) decide the
0.32.0 routing of a flat max_pixels to Qwen's video as their first release does.

Worked number: Gemma-3-27B on one H100 at 8192 batched tokens (0.19, V1): 8192 // 256 = 32 images; held =
32 x 3 x 896^2 x 2 B (pixel values, 154,140,672) + 32 x 256 x 5376 x 2 B (outputs, 88,080,384) = 242,221,056 B;
the SigLIP step peaks at an estimated 154,140,672 + 88,080,384 + 131,072 patches x 2 B x (2 x 1152 + 2 x 4304) =
3,102,736,384 B (2.89 GiB), under the LM's 3.88 GiB; at 0.33 (V2 runner, the logits alone) it is the peak.
"""

from typing import NamedTuple

from kvplan.engines import EngineConfig, vllm_has, vllm_release
from kvplan.errors import PlanInputError
from kvplan.families.towers import (
    QWEN2_VL_MAX_FRAMES, QWEN2_VL_MAX_FRAMES_010, QWEN2_VL_MAX_PIXELS, QWEN_VL_IMAGE_MAX_PIXELS,
    QWEN_VL_VIDEO_MAX_PIXELS, qwen2_vl_length_video, qwen_vl_cells, qwen_vl_length_video,
)
from kvplan.spec import ModelSpec, Tower, TowerProfile
from kvplan.units import counted

# config/multimodal.py get_limit_per_prompt: a modality --limit-mm-per-prompt does not name allows 999 items (0.11.0 -
# 0.33.0; 0.10.x: 999 under V1); --language-model-only (0.17.0+) returns 0 for every modality
VLLM_DEFAULT_MM_LIMIT = 999

# per-layer live activations of one encoder block, in units of N x dtype (see the module docstring): the residual
# and the normed input stay alive (the caller's names) while the attention / MLP runs
_ATTN_H = 3  # residual, normed input, out_proj's whole-h output (+ TowerProfile.attn_live_sharded x h / w)
_MLP_H = 2  # residual, normed input
_GATED, _PLAIN = 3, 2  # MLP intermediates: gate_up (2I) + activation (I); fc1 (I) + activation (I)


class MMProfile(NamedTuple):
    """What vLLM's profile run does with one rank's tower: ``items`` of ``modality``, ``held`` bytes kept through the
    LM's dummy run, ``encoder_peak`` bytes of the encoder step (0: not run or not modeled), ``basis`` / ``note``."""

    modality: str
    items: int
    budget: int
    held: int
    encoder_peak: int
    basis: str
    note: str


def _release_rule(version: str) -> str:
    """How the V1 runner keeps the dummy outputs (VLLM_CHANGES mm_dummy_outputs_*; the module docstring)."""
    if vllm_has(version, "mm_dummy_outputs_as_returned") or not vllm_has(version, "mm_dummy_outputs_expanded"):
        return "as_returned"
    return "item_rows" if vllm_has(version, "mm_dummy_outputs_item_rows") else "budget_rows"


def mm_limit(limits: tuple[tuple[str, int], ...], modality: str) -> int:
    """The --limit-mm-per-prompt count of ``modality`` (config/multimodal.py get_limit_per_prompt): as given, else
    VLLM_DEFAULT_MM_LIMIT (999). ((("image", 0),), "video") -> 999."""
    return next((n for m, n in limits if m == modality), VLLM_DEFAULT_MM_LIMIT)


def loads_tower(spec: ModelSpec, engine: EngineConfig) -> bool:
    """Whether the engine builds the checkpoint's towers (their weights are in "Model loading took").

    Not with the custom engine, nor --language-model-only (vLLM 0.17+: every limit 0). Under vLLM a tower is skipped
    when --limit-mm-per-prompt sets every modality it is marked with (``Tower.modalities``) to 0, from the release whose
    model file does so (``Tower.vllm_skip_from``): 0.15.0+ every model through interfaces.py _mark_tower_model
    ("Tower model components are automatically skipped when `--limit-mm-per-prompt` is set to zero for all of their
    modalities", no_init_weights -> StageMissingLayer); 0.11.0 - 0.14.1 only qwen3_vl.py (image and video 0),
    mistral3.py and mllama4.py (image 0) set theirs to None; gemma3_mm.py builds SigLIP until 0.15.0, kimi_k25.py
    MoonViT until 0.16.0; 0.10.x and V0 build every tower. Gemma-4-31B with {"image": 0, "audio": 0}: video stays 999,
    the tower loads (the B300 log's "profiled with 3 video items"). SGLang: every tower but Llama 4's, which it
    builds only with --enable-multimodal (kvplan.sglang.sglang_builds_tower)."""
    if engine.engine == "custom" or engine.language_model_only or not spec.towers:
        return False
    if engine.engine == "sglang":  # Llama 4 is served text-only without --enable-multimodal, and built so
        from kvplan.sglang import sglang_builds_tower  # kvplan.sglang imports nothing of this module's
        return sglang_builds_tower(engine.sglang_version, spec.model_type)
    if engine.engine != "vllm" or not engine.mm_limits:
        return True
    release = vllm_release(engine.vllm_version)
    return any(release < t.vllm_skip_from or any(mm_limit(engine.mm_limits, m) > 0 for m in t.modalities)
               for t in spec.towers)


def mm_profiled(spec: ModelSpec, engine: EngineConfig) -> bool:
    """Whether vLLM's profile run encodes a dummy batch: the towers load and some modality they take has a limit above 0
    (multimodal/registry.py supports_multimodal_inputs, 0.11.0+: "All limits of multimodal modalities supported by the
    model are set to 0, running in text-only mode"; a gemma3 tower built at 0.11 - 0.14 with image 0 runs none), and
    not --skip-mm-profiling (gpu_model_runner.py profile_run from 0.10.2, gpu/model_runner.py from 0.27.0)."""
    if engine.skip_mm_profiling and engine.engine == "vllm" and vllm_release(engine.vllm_version) >= (0, 10, 2):
        return False
    return loads_tower(spec, engine) and any(mm_limit(engine.mm_limits, m) > 0 for t in spec.towers
                                             for m in t.modalities)


def _qwen_pixels(kwargs: tuple[tuple[str, int], ...], modality: str, version: str, qwen2: bool = False) -> int:
    """The longest_edge vLLM sizes Qwen-VL's largest ``modality`` item by under --mm-processor-kwargs (``kwargs``:
    max_pixels, size.longest_edge; min_pixels / size.shortest_edge do not move the largest item). The image
    (qwen2_vl.py get_image_size_with_most_features, 0.17.0+: image_processor.size | size, then max_pixels): max_pixels,
    else size.longest_edge, else 16,777,216; the video (qwen3_vl.py get_max_video_tokens): 0.17.0 - 0.31.0
    mm_kwargs.get("size", video_processor.size)["longest_edge"] (a flat max_pixels is not read there), 0.32.0+ the
    image's rule over videos_kwargs (get_merged_mm_kwargs routes max_pixels / size to both), else 25,165,824.
    Qwen2-VL / Qwen2.5-VL (``qwen2``): both by the image's rule over 12,845,056, per frame for the video (qwen2_vl.py
    get_max_video_tokens takes its frames at get_image_size_with_most_features and resizes them in _get_vision_info
    under ctx.get_merged_mm_kwargs' size / max_pixels, 0.17.0 - 0.31.0; 0.32.0+ under videos_kwargs, which a flat
    max_pixels reaches too: Qwen2VLVideoProcessor takes min_pixels / max_pixels)."""
    given = dict(kwargs)
    if qwen2:
        return given.get("max_pixels", given.get("size.longest_edge", QWEN2_VL_MAX_PIXELS))
    if modality == "image":
        return given.get("max_pixels", given.get("size.longest_edge", QWEN_VL_IMAGE_MAX_PIXELS))
    if vllm_has(version, "mm_kwargs_scoped"):
        return given.get("max_pixels", given.get("size.longest_edge", QWEN_VL_VIDEO_MAX_PIXELS))
    return given.get("size.longest_edge", QWEN_VL_VIDEO_MAX_PIXELS)


def _resized(p: TowerProfile, tokens: int, embeds: int | None = None, modality: str | None = None) -> TowerProfile:
    """A Qwen ViT item of ``tokens`` merged cells (``embeds`` output rows, default the same), its patches and
    pixel_values rows from the profile's (patch, merge, temporal, channels)."""
    patch, merge, temporal, ch = p.length_video
    embeds = tokens if embeds is None else embeds
    return p.model_copy(update={"modality": modality or p.modality, "tokens_per_item": tokens,
                                "embeds_per_item": embeds, "patches_per_item": embeds * merge * merge,
                                "pixels_per_item": embeds * merge * merge * ch * temporal * patch * patch,
                                "others": ()})


def _qwen2_vl_rule(spec: ModelSpec) -> bool:
    """Whether the tower's video follows qwen2_vl.py's rule (Qwen2-VL, and Qwen2.5-VL whose Qwen2_5_VLProcessingInfo
    inherits Qwen2VLProcessingInfo's get_num_frames_with_most_features) rather than qwen3_vl.py's."""
    return spec.model_type.startswith(("qwen2_vl", "qwen2_5_vl"))


def _qwen2_vl_video(item: TowerProfile, image_tokens: int, version: str, limits: tuple[tuple[str, int], ...],
                    max_model_len: int) -> TowerProfile:
    """vLLM's Qwen2-VL / Qwen2.5-VL video item (qwen2_vl.py, 0.10.0 - 0.33.0): qwen2_vl_length_video over frames of
    ``item``'s cells (the image with most features, one temporal patch), under max_model_len (0.10.0 - 0.10.1.1: less
    the image's ``image_tokens`` where the image limit is above 0, mm_counts then holding one image;
    VLLM_CHANGES qwen2_vl_video_no_image_reserve), at most 14 frames (16 before 0.11.0); tokens are the soft tokens (no
    timestamp text here), patches tokens x m^2, pixels one C x T x p^2 row a patch. Qwen2.5-VL-7B at max_model_len
    128,000 (0.11+): 14 frames, 114,688 tokens, 458,752 patches (7 x 3,584^2 x 2)."""
    budget = max_model_len
    if not vllm_has(version, "qwen2_vl_video_no_image_reserve") and mm_limit(limits, "image") > 0:
        budget -= image_tokens
    cap = QWEN2_VL_MAX_FRAMES if vllm_has(version, "qwen2_vl_video_frames_from_one") else QWEN2_VL_MAX_FRAMES_010
    _, tokens = qwen2_vl_length_video(item.tokens_per_item, item.length_video[2], budget, cap,
                                      vllm_has(version, "qwen2_vl_video_pad_up"))
    return _resized(item, tokens, modality="video")


def _modality_items(spec: ModelSpec, p: TowerProfile, version: str, max_model_len: int,
                    mm_kwargs: tuple[tuple[str, int], ...],
                    limits: tuple[tuple[str, int], ...] = ()) -> dict[str, TowerProfile]:
    """The largest item of each modality the tower takes, as vLLM ``version`` sizes it (get_mm_max_tokens_per_item).

    Qwen3-VL / Qwen3.5's video: 0.15.0+ two frames under the video longest_edge (12,288 tokens on the Qwen
    checkpoints); 0.11.0 - 0.14.1 qwen_vl_length_video(max_model_len) (0 here: the length is not read), counted as
    int(12.5 x soft tokens) before 0.13.0 (the timestamp text), its soft tokens after. --mm-processor-kwargs
    (``_qwen_pixels``, 0.17.0+) resizes the Qwen image and video: max_pixels 1,003,520 -> 980 image tokens (28 x 35
    cells of 32 px), 3,920 patches; the video stays 12,288 through 0.31.0.

    Qwen2-VL / Qwen2.5-VL's video follows max_model_len in every release (``_qwen2_vl_video``; ``limits`` the
    --limit-mm-per-prompt counts, read by 0.10.0 - 0.10.1.1's image reserve), its frames the image's size, which
    --mm-processor-kwargs max_pixels moves for both (0.17.0+): 1,003,520 px -> 1,280 cells of 28 px (32 x 40) a frame."""
    qwen2 = _qwen2_vl_rule(spec)
    items = {o.modality: o.model_copy(update={"others": ()}) for o in (p, *p.others)}
    if mm_kwargs:
        if not p.length_video:
            raise PlanInputError("--mm-processor-kwargs", f"{spec.name}: kvplan reads its keys for the Qwen2-VL / "
                                 "Qwen2.5-VL / Qwen3-VL / Qwen3.5 ViTs only (max_pixels, min_pixels, size.longest_edge "
                                 "/ shortest_edge); this tower's processing info is not modeled with them: drop the "
                                 "flag to plan vLLM's default item")
        if not vllm_has(version, "qwen_vl_mm_kwargs_size"):
            raise PlanInputError("--mm-processor-kwargs", "before vLLM 0.17.0 the Qwen-VL processing info reads the "
                                 "HF processor built with these kwargs, which kvplan does not model: plan a 0.17+ "
                                 "release or drop the flag")
        unit = p.length_video[0] * p.length_video[1]
        temporal = p.length_video[2]
        per_frame = 1 if qwen2 else temporal  # Qwen3-VL's video limit is over two frames; Qwen2-VL's is per frame
        for modality, pixels in (("image", _qwen_pixels(mm_kwargs, "image", version, qwen2)),
                                 ("video", _qwen_pixels(mm_kwargs, "video", version, qwen2) // per_frame)):
            if modality in items:
                cells = qwen_vl_cells(unit, pixels)
                if cells < 1:
                    raise PlanInputError("--mm-processor-kwargs", f"{pixels:,} px holds no {unit} x {unit} cell")
                items[modality] = _resized(items[modality], cells)
    if qwen2:
        if "video" in items and max_model_len:
            items["video"] = _qwen2_vl_video(items["video"], items["image"].tokens_per_item, version, limits,
                                             max_model_len)
    elif p.length_video and "video" in items and not vllm_has(version, "qwen_vl_video_two_frames") and max_model_len:
        _, soft = qwen_vl_length_video(p.length_video, max_model_len)
        tokens = soft if vllm_has(version, "qwen_vl_video_soft_tokens") else int(soft * 12.5)
        items["video"] = _resized(items["video"], tokens, soft, "video")
    return items


def _select(spec: ModelSpec, p: TowerProfile, version: str, limits: tuple[tuple[str, int], ...], max_model_len: int,
            mm_kwargs: tuple[tuple[str, int], ...]) -> TowerProfile | None:
    """The item vLLM profiles: of the modalities whose limit is above 0, the one with the most tokens per item
    (MultiModalBudget.get_modality_with_max_tokens; a tie goes to the later name from 0.17.0, whose key is (tokens,
    modality), and to the first of the model's get_mm_max_tokens_per_item before, image before video: the profile's
    order); None when every one is 0. Qwen3-VL with {"image": 0}: the video (12,288 tokens at 0.15+); Qwen2.5-VL at
    max_model_len 16,384: a 2-frame video ties the image (16,384), "image" at 0.11, "video" at 0.17+ (the same bytes)."""
    items = {m: it for m, it in _modality_items(spec, p, version, max_model_len, mm_kwargs, limits).items()
             if mm_limit(limits, m) > 0}
    if not items:
        return None
    if vllm_has(version, "mm_max_tokens_tie_by_name"):
        return max(items.values(), key=lambda it: (it.tokens_per_item, it.modality))
    return max(items.values(), key=lambda it: it.tokens_per_item)  # the first of equals, in the profile's order


def vllm_mm_item_reads_length(spec: ModelSpec, version: str, limits: tuple[tuple[str, int], ...] = (),
                              max_num_seqs: int = 0, mnbt: int = 0,
                              mm_kwargs: tuple[tuple[str, int], ...] = ()) -> bool:
    """Whether vLLM ``version``'s multimodal profile for this model follows max_model_len, so the budget memo must key
    the length: Qwen3-VL / Qwen3.5's video item before 0.15.0 where it is profiled (0.11.0 - 0.12.0: its 12.5 x soft
    tokens outrank the image; 0.13.0 - 0.14.1: where the image limit is 0), Qwen2-VL / Qwen2.5-VL's video wherever its
    limit is above 0 (every release: its frames are counted from max_model_len, and from 3 frames it outranks the
    image), or the decoder bound on the items (0.11.0+: max_num_seqs x max(1, min(limit, max_model_len // tokens)))
    where --max-num-seqs is below the encoder budget's items."""
    p = next((t.profile for t in spec.towers if t.profile is not None), None)
    if p is None:
        return False
    video_on = mm_limit(limits, "video") > 0
    if _qwen2_vl_rule(spec):
        if video_on:
            return True
    elif p.length_video and not vllm_has(version, "qwen_vl_video_two_frames") and video_on and (
            not vllm_has(version, "qwen_vl_video_soft_tokens") or mm_limit(limits, "image") == 0):
        return True
    if not max_num_seqs or vllm_release(version) < (0, 11, 0):
        return False
    item = _select(spec, p, version, limits, 0, mm_kwargs)
    return item is not None and max_num_seqs < max(mnbt, item.tokens_per_item) // item.tokens_per_item


def vllm_mm_items(version: str, budget: int, tokens: int, limit: int, max_num_seqs: int, max_model_len: int) -> int:
    """Items of the dummy batch (MultiModalBudget._get_max_items; v1/worker/utils.py 0.11.0 - 0.15.1,
    multimodal/encoder_budget.py 0.16.0 - 0.33.0): max(1, min(encoder budget // tokens, max_num_seqs x
    max(1, min(limit, max_model_len // tokens)))) with chunked prefill (vLLM V1's default; kvplan plans it: without
    it max_num_seqs is first cut to max_num_batched_tokens // tokens); 0.10.x (gpu_model_runner.py profile_run)
    max(1, min(budget // tokens, max_num_seqs x limit)). ``max_num_seqs`` or ``max_model_len`` 0: the decoder bound
    is not applied (not binding: vllm_mm_item_reads_length). Qwen3-VL-8B at 0.19, 8,192 tokens, --max-num-seqs 1,
    {"video": 0} at 16,384 tokens a prompt: encoder 16,384 // 16,384 = 1; 0.29 Gemma-4 video (2,496) at 16,384 batched,
    --max-num-seqs 2, max_model_len 4,096: min(6, 2 x max(1, min(999, 1))) = 2."""
    encoder = budget // tokens
    if not max_num_seqs:
        return max(1, encoder)
    if vllm_release(version) < (0, 11, 0):
        return max(1, min(encoder, max_num_seqs * limit))
    if not max_model_len:
        return max(1, encoder)
    return max(1, min(encoder, max_num_seqs * max(1, min(limit, max_model_len // tokens))))


def vllm_mm_profile(spec: ModelSpec, version: str, runner: str, tp: int, data_mode: bool, mnbt: int, act_b: int,
                    first_stage: bool, device_bytes: int = 0, max_model_len: int = 0,
                    limits: tuple[tuple[str, int], ...] = (), max_num_seqs: int = 0,
                    mm_kwargs: tuple[tuple[str, int], ...] = ()) -> MMProfile:
    """The multimodal part of vLLM's profile run on one rank (see the module docstring).

    Inputs: ``version`` the kvplan profile key, ``runner`` "V1" / "V2", ``tp`` the tensor-parallel size,
    ``data_mode`` --mm-encoder-tp-mode data, ``mnbt`` max_num_batched_tokens, ``act_b`` the model dtype's bytes,
    ``first_stage`` whether this rank is on PP stage 0, ``device_bytes`` the device's total memory (Gemma-4's frame
    chunks from 0.22: total // 10 taken as the binding half of min(free // 2, total // 10)), ``max_model_len`` the
    length a Qwen video item follows and the decoder bound reads (``vllm_mm_item_reads_length``; 0: not read),
    ``limits`` the --limit-mm-per-prompt counts (a modality at 0 is not the item), ``max_num_seqs`` the decoder bound's
    (``vllm_mm_items``), ``mm_kwargs`` the --mm-processor-kwargs kvplan reads (``_modality_items``). A tower without a
    ``TowerProfile`` keeps the older rule
    (one (max_num_batched_tokens, hidden) encoder-cache tensor held, the encoder forward not modeled).
    Worked number: Gemma-3-27B, "0.19", V1, TP 1, 8192 -> 32 images, held 242,221,056 B."""
    tower = next((t for t in spec.towers if t.profile is not None), None)
    if runner == "V2" and (not vllm_has(version, "v2_mm_encoder_profile") or not first_stage):
        why = ("the V2 runner's profile_run has no encoder profiling before 0.27.0" if first_stage else
               "the V2 runner profiles the encoder on the first PP rank only")
        return MMProfile("none", 0, 0, 0, 0, "exact", why)
    if mm_kwargs and tower is None:
        raise PlanInputError("--mm-processor-kwargs", f"{spec.name}: its tower's dummy item is not modeled, so the "
                             "kwargs cannot be read: drop the flag")
    if tower is None:
        held = mnbt * spec.hidden_size * act_b
        return MMProfile("image", 0, mnbt, held, 0, "fitted",
                         f"encoder outputs in one (max_num_batched_tokens {mnbt:,}, hidden) cache tensor; "
                         f"{', '.join(t.name for t in spec.towers)}: its dummy item and forward are not modeled")
    p = _select(spec, tower.profile, version, limits, max_model_len, mm_kwargs)
    if p is None:
        return MMProfile("none", 0, 0, 0, 0, "exact", "every modality of the tower at 0 (--limit-mm-per-prompt): "
                         "no encoder profiling")
    return _profiled(spec, tower, p, version, runner, tp, data_mode, mnbt, act_b, device_bytes,
                     vllm_mm_items(version, max(mnbt, p.tokens_per_item), p.tokens_per_item,
                                   mm_limit(limits, p.modality), max_num_seqs, max_model_len))


def _profiled(spec: ModelSpec, tower: Tower, p: TowerProfile, version: str, runner: str, tp: int, data_mode: bool,
              mnbt: int, act_b: int, device_bytes: int, items: int) -> MMProfile:
    budget = max(mnbt, p.tokens_per_item)  # compute_mm_encoder_budget: max(max_num_encoder_input_tokens, item)
    hidden = p.embed_width or spec.hidden_size  # one output row (Qwen3-VL: + its deepstack features)
    # data mode: every rank runs its share of the items with the whole tower (run_dp_sharded_vision_model)
    rank_items, ways = (-(-items // tp), 1) if data_mode else (items, tp)
    inputs = rank_items * p.pixels_per_item * act_b
    outputs = items * p.embeds_per_item * hidden * act_b
    rule = _release_rule(version) if runner == "V1" else "as_returned"
    kept = {"as_returned": outputs, "budget_rows": items * budget * hidden * act_b,
            "item_rows": items * max(p.embeds_per_item, p.tokens_per_item) * hidden * act_b}[rule]
    held = kept + (inputs if runner == "V1" else 0) + p.kept_buffer_bytes  # + a buffer the tower's forward keeps
    n = rank_items * p.patches_per_item
    h, inter = p.hidden_size, p.intermediate_size
    done = 0  # encoder outputs of the chunks already run, kept for the torch.cat after the last
    if p.frame_chunk_cost and device_bytes and vllm_has(version, "gemma4_encoder_chunk"):
        frames = rank_items * p.frames_per_item
        chunk = min(frames, max(1, device_bytes // 10 // p.frame_chunk_cost))
        n, done = chunk * (p.patches_per_item // p.frames_per_item), n * h * act_b
    full_n = rank_items * p.patches_per_item
    attn = _ATTN_H * h + p.attn_live_sharded * h // ways
    mlp = _MLP_H * h + (_GATED if p.gated_mlp else _PLAIN) * inter // ways
    mask = 0
    if p.block_mask == "dense_from_0_12" and vllm_has(version, "mm_pixtral_dense_mask"):
        mask = n * n * act_b
    encoder = inputs + outputs + done + n * act_b * max(attn, mlp) + mask + p.kept_buffer_bytes
    kept_src = {"as_returned": "as returned", "budget_rows": f"each scattered into ({budget:,}, hidden) zeros (0.11.x)",
                "item_rows": f"each padded to ({p.tokens_per_item:,}, hidden) (0.12.0)"}[rule]
    note = (f"{counted(items, p.modality + ' item')} of {p.tokens_per_item:,} tokens (encoder budget {budget:,}); held through "
            f"the LM run: outputs {kept_src} {kept / 2**30:.3f} GiB"
            + (f" + dummy inputs {inputs / 2**30:.3f} GiB" if runner == "V1" else " (V2 frees the inputs)")
            + (f" + the tower's kept buffers {p.kept_buffer_bytes / 2**30:.3f} GiB" if p.kept_buffer_bytes else "")
            + f"; encoder step ~{encoder / 2**30:.2f} GiB ({n:,} patches"
            + (f" a call of {full_n:,}, gemma4_mm.py _encoder_chunk" if n != full_n else "")
            + (f", a {n:,}^2 block mask" if mask else "") + ", estimate)")
    return MMProfile(p.modality, items, budget, held, encoder, "estimate", note)


def vllm_mm_profile_peak_bytes(lm_peak: int, mm: MMProfile) -> int:
    """The profile run's torch peak with the encoder step: max(encoder step, LM peak + what it leaves held).
    Worked number: Gemma-3-27B at 0.19 on an H100: max(3,102,736,384, 3.88 GiB + 242,221,056 B) = the second."""
    return max(mm.encoder_peak, lm_peak + mm.held)
