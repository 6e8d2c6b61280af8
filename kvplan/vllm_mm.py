"""vLLM's multimodal profile run: the encoder's dummy batch and what it leaves held under the LM's dummy run.

Read 2026-12 in the vLLM wheels 0.10.0 - 0.33.0 (v1/worker/gpu_model_runner.py ``profile_run`` /
``_get_mm_dummy_batch``, v1/worker/gpu/model_runner.py ``profile_run`` + gpu/mm/encoder_runner.py
``profile_encoder_cache`` / ``execute_mm_encoder``, multimodal/encoder_budget.py ``MultiModalBudget``
(multimodal/profiling.py before 0.13), v1/core/encoder_cache_manager.py ``compute_mm_encoder_budget``):

1. The item: the modality with the most tokens per item (``get_modality_with_max_tokens``), at its maximum size
   (``get_mm_max_tokens_per_item``, else the dummy prompt's embeds): ``spec.TowerProfile`` (kvplan.families.towers).
2. The budget: encoder budget = min(compute, cache) = max(max_num_batched_tokens, tokens per item) (both default to
   max_num_batched_tokens); items = max(1, budget // tokens per item) (``_get_max_items``; the decoder bound
   max_num_seqs x items per prompt is taken as not binding: it is >= max_num_seqs, which is >= the encoder's items
   unless --max-num-seqs is set below them, and it reads max_model_len, which the budget memo must not).
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
limit, grown from 1 while ceil(n / 2) x 16,384 tokens fit max_model_len and capped at 14 (0.11.0+; 0.10.x from 0 under
max_model_len - 16,384, capped at 16: VLLM_CHANGES qwen2_vl_video_frames_from_one), so in every release the item follows
max_model_len: the image to 16,384 (a 2-frame video ties it), a 4-frame video at 32,768, 14 frames = 114,688 tokens
(458,752 patches) from 114,688 (the default 128,000 of Qwen2.5-VL-7B: vLLM 0.23's "budget of 114688 tokens, and profiled
with 1 video items"). The block is Qwen2_5_VisionAttention (10h / w, as Qwen3-VL) with a gated MLP (2h + 3I / w).

Not modeled (a tower without a ``TowerProfile`` keeps the older rule, one (max_num_batched_tokens, hidden) cache
tensor held, no encoder step): --mm-processor-kwargs / a checkpoint's own pixel limits, --limit-mm-per-prompt (an
image limit of 0 would make Qwen's video the item); the decoder bound on the items (max_num_seqs x items per
prompt, and max_num_batched_tokens // tokens per item without chunked prefill).

Worked number: Gemma-3-27B on one H100 at 8192 batched tokens (0.19, V1): 8192 // 256 = 32 images; held =
32 x 3 x 896^2 x 2 B (pixel values, 154,140,672) + 32 x 256 x 5376 x 2 B (outputs, 88,080,384) = 242,221,056 B;
the SigLIP step peaks at an estimated 154,140,672 + 88,080,384 + 131,072 patches x 2 B x (2 x 1152 + 2 x 4304) =
3,102,736,384 B (2.89 GiB), under the LM's 3.88 GiB; at 0.33 (V2 runner, the logits alone) it is the peak.
"""

from typing import NamedTuple

from kvplan.engines import vllm_has
from kvplan.families.towers import qwen2_vl_length_video, qwen_vl_length_video
from kvplan.spec import ModelSpec, Tower, TowerProfile

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


def vllm_mm_item_reads_length(spec: ModelSpec, version: str) -> bool:
    """Whether vLLM ``version``'s dummy item for this model's tower follows max_model_len (Qwen3-VL / Qwen3.5's video
    in 0.11.0 - 0.12.0, whose 12.5 x soft tokens outrank the image; Qwen2-VL / Qwen2.5-VL's video in every release,
    its frames counted from max_model_len), so the budget memo must key the length."""
    return any(t.profile is not None and t.profile.length_video for t in spec.towers) and (
        _qwen2_vl_rule(spec) or not vllm_has(version, "qwen_vl_video_soft_tokens"))


def _qwen2_vl_rule(spec: ModelSpec) -> bool:
    """Whether the tower's video follows qwen2_vl.py's rule (Qwen2-VL, and Qwen2.5-VL whose Qwen2_5_VLProcessingInfo
    inherits Qwen2VLProcessingInfo's get_num_frames_with_most_features) rather than qwen3_vl.py's."""
    return spec.model_type.startswith(("qwen2_vl", "qwen2_5_vl"))


def _qwen2_vl_video(p: TowerProfile, version: str, max_model_len: int) -> TowerProfile:
    """vLLM's Qwen2-VL / Qwen2.5-VL item (qwen2_vl.py, 0.10.0 - 0.33.0): the video of qwen2_vl_length_video where it has
    more tokens than the image (a 2-frame video ties it with the same patches and pixels, so the tie is moot); tokens
    are the soft tokens (no timestamp text here), patches tokens x m^2, pixels one C x T x p^2 row a patch.
    Qwen2.5-VL-7B at max_model_len 128,000 (0.11+): 14 frames, 114,688 tokens, 458,752 patches (7 x 3,584^2 x 2)."""
    patch, merge, temporal, ch = p.length_video
    _, tokens = qwen2_vl_length_video(p.length_video, p.tokens_per_item, max_model_len,
                                      vllm_has(version, "qwen2_vl_video_frames_from_one"))
    if tokens <= p.tokens_per_item:
        return p
    return p.model_copy(update={"modality": "video", "tokens_per_item": tokens, "embeds_per_item": tokens,
                                "patches_per_item": tokens * merge * merge,
                                "pixels_per_item": tokens * merge * merge * ch * temporal * patch * patch})


def _length_video(p: TowerProfile, max_model_len: int) -> TowerProfile:
    """vLLM 0.11.0 - 0.12.0's Qwen3-VL item: the video of qwen_vl_length_video(max_model_len) when its
    int(12.5 x soft tokens) outranks the image (always on the Qwen checkpoints' limits: 151,250 / 153,600 > 16,384);
    embeds are the soft tokens, patches soft x m^2. Qwen3-VL-30B-A3B at max_model_len 65,536: 153,600 tokens, 12,288
    embeds (the 0.11.0 log's 'budget of 153600 tokens, and profiled with 1 video items')."""
    patch, merge, temporal, ch = p.length_video
    _, soft = qwen_vl_length_video(p.length_video, max_model_len)
    tokens = int(soft * 12.5)
    if tokens <= p.tokens_per_item:
        return p
    return p.model_copy(update={"modality": "video", "tokens_per_item": tokens, "embeds_per_item": soft,
                                "patches_per_item": soft * merge * merge,
                                "pixels_per_item": soft * merge * merge * ch * temporal * patch * patch})


def vllm_mm_profile(spec: ModelSpec, version: str, runner: str, tp: int, data_mode: bool, mnbt: int, act_b: int,
                    first_stage: bool, device_bytes: int = 0, max_model_len: int = 0) -> MMProfile:
    """The multimodal part of vLLM's profile run on one rank (see the module docstring).

    Inputs: ``version`` the kvplan profile key, ``runner`` "V1" / "V2", ``tp`` the tensor-parallel size,
    ``data_mode`` --mm-encoder-tp-mode data, ``mnbt`` max_num_batched_tokens, ``act_b`` the model dtype's bytes,
    ``first_stage`` whether this rank is on PP stage 0, ``device_bytes`` the device's total memory (Gemma-4's frame
    chunks from 0.22: total // 10 taken as the binding half of min(free // 2, total // 10)), ``max_model_len`` the
    length a Qwen video item follows (Qwen3-VL 0.11.0 - 0.12.0, Qwen2-VL / Qwen2.5-VL always:
    ``vllm_mm_item_reads_length``; 0: the image). A tower without a
    ``TowerProfile`` keeps the older rule
    (one (max_num_batched_tokens, hidden) encoder-cache tensor held, the encoder forward not modeled).
    Worked number: Gemma-3-27B, "0.19", V1, TP 1, 8192 -> 32 images, held 242,221,056 B."""
    tower = next((t for t in spec.towers if t.profile is not None), None)
    if runner == "V2" and (not vllm_has(version, "v2_mm_encoder_profile") or not first_stage):
        why = ("the V2 runner's profile_run has no encoder profiling before 0.27.0" if first_stage else
               "the V2 runner profiles the encoder on the first PP rank only")
        return MMProfile("none", 0, 0, 0, 0, "exact", why)
    if tower is None:
        held = mnbt * spec.hidden_size * act_b
        return MMProfile("image", 0, mnbt, held, 0, "fitted",
                         f"encoder outputs in one (max_num_batched_tokens {mnbt:,}, hidden) cache tensor; "
                         f"{', '.join(t.name for t in spec.towers)}: its dummy item and forward are not modeled")
    return _profiled(spec, tower, version, runner, tp, data_mode, mnbt, act_b, device_bytes, max_model_len)


def _profiled(spec: ModelSpec, tower: Tower, version: str, runner: str, tp: int, data_mode: bool, mnbt: int,
              act_b: int, device_bytes: int, max_model_len: int) -> MMProfile:
    p = tower.profile
    if max_model_len and vllm_mm_item_reads_length(spec, version):
        p = _qwen2_vl_video(p, version, max_model_len) if _qwen2_vl_rule(spec) else _length_video(p, max_model_len)
    budget = max(mnbt, p.tokens_per_item)  # compute_mm_encoder_budget: max(max_num_encoder_input_tokens, item)
    items = max(1, budget // p.tokens_per_item)  # MultiModalBudget._get_max_items
    hidden = p.embed_width or spec.hidden_size  # one output row (Qwen3-VL: + its deepstack features)
    # data mode: every rank runs its share of the items with the whole tower (run_dp_sharded_vision_model)
    rank_items, ways = (-(-items // tp), 1) if data_mode else (items, tp)
    inputs = rank_items * p.pixels_per_item * act_b
    outputs = items * p.embeds_per_item * hidden * act_b
    rule = _release_rule(version) if runner == "V1" else "as_returned"
    kept = {"as_returned": outputs, "budget_rows": items * budget * hidden * act_b,
            "item_rows": items * max(p.embeds_per_item, p.tokens_per_item) * hidden * act_b}[rule]
    held = kept + (inputs if runner == "V1" else 0)
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
    encoder = inputs + outputs + done + n * act_b * max(attn, mlp) + mask
    kept_src = {"as_returned": "as returned", "budget_rows": f"each scattered into ({budget:,}, hidden) zeros (0.11.x)",
                "item_rows": f"each padded to ({p.tokens_per_item:,}, hidden) (0.12.0)"}[rule]
    note = (f"{items} {p.modality} item(s) of {p.tokens_per_item:,} tokens (encoder budget {budget:,}); held through "
            f"the LM run: outputs {kept_src} {kept / 2**30:.3f} GiB"
            + (f" + dummy inputs {inputs / 2**30:.3f} GiB" if runner == "V1" else " (V2 frees the inputs)")
            + f"; encoder step ~{encoder / 2**30:.2f} GiB ({n:,} patches"
            + (f" a call of {full_n:,}, gemma4_mm.py _encoder_chunk" if n != full_n else "")
            + (f", a {n:,}^2 block mask" if mask else "") + ", estimate)")
    return MMProfile(p.modality, items, budget, held, encoder, "estimate", note)


def vllm_mm_profile_peak_bytes(lm_peak: int, mm: MMProfile) -> int:
    """The profile run's torch peak with the encoder step: max(encoder step, LM peak + what it leaves held).
    Worked number: Gemma-3-27B at 0.19 on an H100: max(3,102,736,384, 3.88 GiB + 242,221,056 B) = the second."""
    return max(mm.encoder_peak, lm_peak + mm.held)
