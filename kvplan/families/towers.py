"""Vision towers (ViT + projector) of the multimodal wrappers kvplan plans, exact to the parameter.

Each builder reads the wrapper's ``vision_config`` (and the projector's fields on the wrapper) by
their config.json names, with transformers 5.23's config defaults where a field is absent (recorded
as an assumption), and returns the tower as ``spec.Tower`` components. The parameter count equals
transformers' ForConditionalGeneration on the meta device minus its text model and lm_head
(tests/test_towers_mtp.py). Shapes: transformers' modeling_<family>.py; TP layout: vLLM's model file,
default ``--mm-encoder-tp-mode weights`` (read 2026-12):

- SigLIP (Gemma-3, vllm/model_executor/models/siglip.py + gemma3_mm.py): q/k/v in a QKVParallelLinear
  (column), out_proj RowParallelLinear, fc1 ColumnParallelLinear, fc2 RowParallelLinear; patch conv,
  position embedding, LayerNorms and the projector (``mm_input_projection_weight``, a plain
  nn.Parameter, and its RMSNorm) whole on every rank.
- Qwen3-VL / Qwen3.5 ViT (qwen3_vl.py / qwen3_5.py): attn.qkv column, attn.proj row, linear_fc1 column,
  linear_fc2 row, the patch merger and deepstack mergers likewise (fc1 column, fc2 row); patch
  embedding (Conv3d) and pos_embed whole.
- Pixtral (Mistral-3, pixtral.py PixtralHFTransformer + mistral3.py): q/k/v column, o row, gate/up
  column, down row; the patch merger's merging_layer (nn.Linear) whole, projector linear_1 column,
  linear_2 row.
- Llama-4 vision (mllama4.py): unfold-conv linear column, q/k/v column, o row, fc1 column, fc2 row, the
  pixel-shuffle adapter fc1 column / fc2 row, projector linear_1 column (gather_output).
- MoonViT (Kimi-K2.5, kimi_k25_vit.py): q/k/v column, proj row, fc1 column, fc2 row; projector
  linear_1 column, linear_2 row.
- Gemma-4 ViT (gemma4_mm.py): q/k/v and gate/up column, o and down row; patch input_proj, position table
  and embed_vision's embedding_projection (ReplicatedLinear) whole.

``--mm-encoder-tp-mode data`` replicates the whole tower on every rank (data-parallel encoder);
``--language-model-only`` (vLLM >= 0.17: every modality limit 0, towers not built) drops it, as does
``--limit-mm-per-prompt`` with every modality of a tower at 0 (``Tower.modalities``, kvplan.vllm_mm.loads_tower).
Towers are kept in the checkpoint's 16-bit dtype (quantized checkpoints usually ignore them:
``quantizable=False``). Not modeled (listed as skipped, not counted): Gemma-3n's MobileNetV5 and
Conformer towers, Gemma-4's audio tower, Step-3.7's perception encoder, MiniMax-M3-VL's tower.

Worked number: Gemma-3-27B's SigLIP tower + projector = 416,866,032 + 6,194,304 = 423,060,336
parameters, 846,120,672 B in bf16 (0.788 GiB) on one GPU.
"""

import functools
import math
from collections.abc import Mapping

from kvplan.errors import ConfigError
from kvplan.families.deepseek_v41 import dsv41_tower
from kvplan.hf_config import Reader
from kvplan.spec import Linear, Norm, Tensor, Tower, TowerProfile

MODEL_TYPES: dict = {}  # no decoder builders here: towers hang off their wrapper (TOWER_BUILDERS)


def _lin(name: str, out_f: int, in_f: int, bias: bool = True, count: int = 1, shard: str = "column") -> Linear:
    return Linear(name=name, in_features=in_f, out_features=out_f, bias=bias, count=count, shard=shard,
                  quantizable=False)


def _norm(name: str, dim: int, bias: bool = True, count: int = 1) -> Norm:
    return Norm(name=name, dim=dim, bias=bias, count=count)


def _vit_layers(prefix: str, h: int, inter: int, layers: int, qkv: tuple[str, ...], out: str,
                fc: tuple[str, ...], bias: bool = True, norms: tuple[str, ...] = ("norm1", "norm2"),
                norm_bias: bool = True) -> list:
    """``layers`` identical pre-norm ViT blocks: q/k/v (or one fused qkv) column, out row, MLP
    (fc1 [, up] column, fc2 row). Returns components with ``count = layers``."""
    comps: list = [_norm(f"{prefix}.{n}", h, norm_bias, layers) for n in norms]
    if len(qkv) == 1:
        comps.append(_lin(f"{prefix}.{qkv[0]}", 3 * h, h, bias, layers))
    else:
        comps += [_lin(f"{prefix}.{n}", h, h, bias, layers) for n in qkv]
    comps.append(_lin(f"{prefix}.{out}", h, h, bias, layers, "row"))
    comps += [_lin(f"{prefix}.{n}", inter, h, bias, layers) for n in fc[:-1]]
    comps.append(_lin(f"{prefix}.{fc[-1]}", h, inter, bias, layers, "row"))
    return comps


def _profile(field: str, **fields) -> TowerProfile:
    """A TowerProfile whose geometry (tokens, embeds, patches, pixels) is whole and positive, else a ConfigError on
    ``field`` (an image smaller than one patch grid cell would make it 0)."""
    for key in ("tokens_per_item", "embeds_per_item", "patches_per_item", "pixels_per_item"):
        if fields[key] < 1:
            raise ConfigError(field, f"gives {fields[key]} {key.replace('_', ' ')} for vLLM's dummy item "
                              "(the image must hold at least one merged patch)")
    return TowerProfile(**fields)


def _optional_profile(r: Reader, build) -> TowerProfile | None:
    """``build()``'s TowerProfile, or None (vLLM's older rule, recorded as an assumption) where the config's geometry
    gives no whole item: the tower's weights are counted either way, as before its profile was modeled."""
    try:
        return build()
    except ConfigError as exc:
        r.assumptions.append(f"vLLM's profile item not modeled ({exc}): one (max_num_batched_tokens, hidden) tensor")
        return None


def _vision(r: Reader) -> Reader:
    cfg = r.raw("vision_config", {})
    if not isinstance(cfg, Mapping):
        raise ConfigError("vision_config", f"must be an object, got {type(cfg).__name__}")
    v = Reader(cfg, prefix="vision_config.")
    v.assumptions = r.assumptions  # one list: the wrapper's defaults and the tower's, in reading order
    return v


def _size(v: Reader, key: str, default: int) -> int:
    """An image / patch size: an int or a square [n, n] (transformers accepts both)."""
    value = v.get(key)
    if isinstance(value, list) and len(value) == 2 and value[0] == value[1]:
        return v.check_int(key, value[0])
    return v.int(key, default, why="transformers' default")


def _vit_dims(v: Reader, cls: str, h: int, inter: int, layers: int, heads: int) -> tuple[int, int, int, int]:
    """(hidden_size, intermediate_size, num_hidden_layers, num_attention_heads) of a ViT config, each
    absent one taken (and recorded) from ``cls``'s defaults ``h``, ``inter``, ``layers``, ``heads``."""
    why = f"{cls} default"
    return (v.int("hidden_size", h, why=why), v.int("intermediate_size", inter, why=why),
            v.int("num_hidden_layers", layers, why=why), v.int("num_attention_heads", heads, why=why))


def siglip_gemma3(r: Reader, text_hidden: int) -> tuple[Tower, ...]:
    """Gemma-3: SiglipVisionModel (transformers siglip/modeling_siglip.py) + Gemma3MultiModalProjector.

    params = h*c*p^2 + h (patch conv) + (image/p)^2 * h (positions) + L x (4(h^2 + h) + 2(I*h) + I + h
    + 4h) + 2h (post LN) [+ head] + h*text_h + h (projector weight, RMSNorm).
    Gemma-3-27B (h 1152, I 4304, L 27, p 14, image 896): 416,866,032 + 6,194,304.
    """
    v = _vision(r)
    h, inter, layers, heads = _vit_dims(v, "SiglipVisionConfig", 768, 3072, 12, 12)
    ch = v.int("num_channels", 3, why="SiglipVisionConfig default")
    image, patch = _size(v, "image_size", 224), _size(v, "patch_size", 16)
    comps: list = [Tensor(name="vision_tower.patch_embedding", numel=h * ch * patch * patch + h),
                   Tensor(name="vision_tower.position_embedding", numel=(image // patch) ** 2 * h)]
    comps += _vit_layers("vision_tower.encoder.layers", h, inter, layers, ("q_proj", "k_proj", "v_proj"),
                         "out_proj", ("fc1", "fc2"), norms=("layer_norm1", "layer_norm2"))
    comps.append(_norm("vision_tower.post_layernorm", h))
    if v.bool("vision_use_head", True):  # attention-pooling head: probe, nn.MultiheadAttention, LN, MLP
        comps += [Tensor(name="vision_tower.head.probe", numel=h),
                  Tensor(name="vision_tower.head.attention", numel=4 * h * h + 4 * h),
                  _norm("vision_tower.head.layernorm", h),
                  _lin("vision_tower.head.mlp.fc1", inter, h), _lin("vision_tower.head.mlp.fc2", h, inter, shard="row")]
    comps += [Tensor(name="multi_modal_projector.mm_input_projection_weight", numel=h * text_hidden),
              _norm("multi_modal_projector.mm_soft_emb_norm", h, bias=False)]
    # vLLM's profile item: one image at image_size (no pan-and-scan), mm_tokens_per_image embeds (gemma3_mm.py has no
    # get_mm_max_tokens_per_item: the budget counts the dummy prompt's embeds)
    tokens = r.int("mm_tokens_per_image", 256, why="Gemma3Config default")
    profile = _profile(
        "vision_config.image_size", tokens_per_item=tokens, embeds_per_item=tokens, patches_per_item=(image // patch) ** 2,
                           pixels_per_item=ch * image * image, hidden_size=h, intermediate_size=inter,
                           num_layers=layers, source="vLLM gemma3_mm.py Gemma3DummyInputsBuilder, siglip.py")
    return (Tower(name="vision_tower (SigLIP) + multi_modal_projector", components=tuple(comps), num_heads=heads,
                  source="transformers siglip/modeling_siglip.py, gemma3/modeling_gemma3.py; "
                         "vLLM siglip.py, gemma3_mm.py", profile=profile),)


def _qwen_vit(r: Reader, text_hidden: int, deepstack: bool) -> tuple[Tower, ...]:
    """Qwen3-VL / Qwen3.5 ViT: Conv3d patch embed, learned pos_embed, ``depth`` blocks, patch merger
    (LN over h, fc1 h*m^2 -> h*m^2, fc2 -> out_hidden_size) and, Qwen3-VL only, one deepstack merger
    per ``deepstack_visual_indexes`` entry (LN over h*m^2). Qwen3-VL-8B: 576,388,336."""
    v = _vision(r)
    h = v.int("hidden_size", 1152, why="transformers' vision config default")
    inter = v.int("intermediate_size", 4304, why="transformers' vision config default")
    depth = v.int("depth", 27, why="transformers' vision config default")
    heads = v.int("num_heads", 16, why="transformers' vision config default")
    ch = v.int("in_channels", 3, why="transformers' vision config default")
    patch = _size(v, "patch_size", 16)
    temporal = _size(v, "temporal_patch_size", 2)
    merge = v.int("spatial_merge_size", 2, why="transformers' vision config default")
    out = v.int("out_hidden_size", 3584, why="transformers' vision config default")
    positions = v.int("num_position_embeddings", 2304, why="transformers' vision config default")
    merged = h * merge * merge
    comps: list = [Tensor(name="visual.patch_embed.proj", numel=h * ch * temporal * patch * patch + h),
                   Tensor(name="visual.pos_embed", numel=positions * h)]
    comps += _vit_layers("visual.blocks", h, inter, depth, ("attn.qkv",), "attn.proj",
                         ("mlp.linear_fc1", "mlp.linear_fc2"))
    comps += [_norm("visual.merger.norm", h), _lin("visual.merger.linear_fc1", merged, merged),
              _lin("visual.merger.linear_fc2", out, merged, shard="row")]
    n_deep = 0
    if deepstack:
        indexes = v.int_list("deepstack_visual_indexes")
        n_deep = 3 if indexes is None else len(indexes)
        if indexes is None:
            v.assumptions.append("vision_config.deepstack_visual_indexes = [8, 16, 24] (transformers' default)")
    if n_deep:
        comps += [_norm("visual.deepstack_merger_list.norm", merged, count=n_deep),
                  _lin("visual.deepstack_merger_list.linear_fc1", merged, merged, count=n_deep),
                  _lin("visual.deepstack_merger_list.linear_fc2", out, merged, count=n_deep, shard="row")]
    name = "visual (ViT + patch merger" + (" + deepstack mergers)" if n_deep else ")")
    profile = _optional_profile(v, lambda: _qwen_vit_profile(v, patch, temporal, merge, ch, h, inter, depth,
                                                             out * (1 + n_deep)))
    # vLLM 0.11.0 - 0.14.1 qwen3_vl.py: self.visual = None when the image and video limits are both 0 (0.15+:
    # _mark_tower_model(vllm_config, {"image", "video"}); qwen3_5.py from 0.17.0 the same)
    return (Tower(name=name, components=tuple(comps), num_heads=heads, profile=profile,
                  modalities=("image", "video"), vllm_skip_from=(0, 11, 0),
                  source="transformers qwen3_vl/modeling_qwen3_vl.py, qwen3_5/modeling_qwen3_5.py; vLLM qwen3_vl.py"),)


# The pixel limits vLLM reads from the checkpoint's processor files, not config.json (an estimate where a checkpoint
# ships others): Qwen/Qwen3-VL-* and Qwen/Qwen3.5-* preprocessor_config.json "size": {"longest_edge": 16777216,
# "shortest_edge": 65536} and video_preprocessor_config.json {"longest_edge": 25165824, "shortest_edge": 4096}
# (16,384 and 24,576 merged 32 x 32 cells; the video's is over two frames). Read 2026-12; the same values are
# Qwen3VLVideoProcessor's class default in transformers 5.23 (32 x 32 x 768 = 786,432 is its image-size default).
QWEN_VL_IMAGE_MAX_PIXELS, QWEN_VL_VIDEO_MAX_PIXELS = 16_777_216, 25_165_824


def qwen_vl_cells(unit: int, max_pixels: int) -> int:
    """Merged cells (LM tokens) of vLLM's largest Qwen-VL image under ``max_pixels`` (qwen2_vl.py
    get_image_size_with_most_features): max_pixels // unit^2 cells factored into the closest pair whose aspect is at
    most 200, else one cell fewer; ``unit`` = patch x spatial merge. 16,777,216 px, unit 32 -> 16,384; 1,003,520 -> 980
    (28 x 35); 12,845,056 px, unit 28 (Qwen2-VL / Qwen2.5-VL) -> 16,384 (128 x 128)."""
    for cells in range(max_pixels // (unit * unit), 0, -1):
        d = next(d for d in range(math.isqrt(cells), 0, -1) if cells % d == 0)
        if (cells // d) / d <= 200:
            return cells
    return 0


def _qwen_vit_profile(v: Reader, patch: int, temporal: int, merge: int, ch: int, h: int, inter: int, depth: int,
                      width: int) -> TowerProfile:
    """vLLM's dummy item for the Qwen3-VL / Qwen3.5 ViT (qwen3_vl.py Qwen3VLProcessingInfo, 0.11.0 - 0.33.0).

    The image: get_image_size_with_most_features factors max_pixels // (p m)^2 merged cells into the closest pair
    (aspect <= 200, else one cell fewer), so tokens = 16,777,216 // 32^2 = 16,384 (128 x 128 cells, a 4,096^2 image),
    patches 4 x 16,384 = 65,536, each a (C x T x p^2) = 1,536-value row of pixel_values (the frame repeated to
    temporal_patch_size). The video: two frames at video max_pixels // T (0.15.0+; before, get_num_frames_with_most_features
    from max_model_len, which video_smart_resize keeps under the same pixel total): 12,582,912 // 32^2 = 12,288 tokens,
    fewer than the image's at every length, so the item is the image and does not read max_model_len. Output rows
    ``width`` = out_hidden_size x (1 + deepstack layers): Qwen3_VisionTransformer.forward returns
    torch.cat([hidden_states] + deepstack_feature_lists, dim=1), cached whole (the deepstack split happens in
    embed_input_ids). Qwen3-VL-8B: 16,384 tokens x 4,096 x 4 = a 512 MiB bf16 output, 192 MiB of pixel values."""
    v.assumptions.append(f"vLLM's profile image for the Qwen ViT: max_pixels {QWEN_VL_IMAGE_MAX_PIXELS:,} (video "
                         f"{QWEN_VL_VIDEO_MAX_PIXELS:,}), the Qwen checkpoints' preprocessor_config.json / "
                         "video_preprocessor_config.json (not in config.json)")
    unit = patch * merge
    if min(patch, merge, temporal, ch) < 1:
        raise ConfigError("vision_config.patch_size", "patch_size, spatial_merge_size, temporal_patch_size and "
                          "in_channels must be positive for vLLM's dummy item")

    image = qwen_vl_cells(unit, QWEN_VL_IMAGE_MAX_PIXELS)
    video = qwen_vl_cells(unit, QWEN_VL_VIDEO_MAX_PIXELS // temporal)  # two frames = one temporal patch

    def item(modality: str, tokens: int) -> TowerProfile:
        return _profile("vision_config.patch_size", modality=modality,
                        tokens_per_item=tokens, embeds_per_item=tokens, patches_per_item=tokens * merge * merge,
                        pixels_per_item=tokens * merge * merge * ch * temporal * patch * patch, hidden_size=h,
                        intermediate_size=inter, num_layers=depth, embed_width=width, attn_live_sharded=10,
                        length_video=(patch, merge, temporal, ch),
                        source="vLLM qwen3_vl.py Qwen3VLProcessingInfo.get_mm_max_tokens_per_item (qwen2_vl.py "
                               "get_image_size_with_most_features), Qwen3_VisionTransformer.forward")

    # the larger is the item; the other is kept for a --limit-mm-per-prompt that sets it to 0 (kvplan.vllm_mm)
    first, second = (item("image", image), item("video", video)) if image >= video else \
        (item("video", video), item("image", image))
    return first.model_copy(update={"others": (second,)})



# vLLM 0.11.0 - 0.14.1 qwen3_vl.py _MAX_FRAMES_PER_VIDEO (the frame cap of get_num_frames_with_most_features)
QWEN_VL_MAX_FRAMES = 24_576


def _qwen_video_resize(frames: int, side: int, unit: int, temporal: int) -> int:
    """One side of a ``side`` x ``side`` frame after transformers' Qwen3-VL video smart_resize (5.23
    video_processing_qwen3_vl.py, the function vLLM imports): scaled so t x h x w stays under the video max_pixels."""
    bar = round(side / unit) * unit
    if round(frames / temporal) * temporal * bar * bar > QWEN_VL_VIDEO_MAX_PIXELS:
        beta = math.sqrt(frames * side * side / QWEN_VL_VIDEO_MAX_PIXELS)
        bar = max(unit, math.floor(side / beta / unit) * unit)
    return bar


@functools.lru_cache(maxsize=64)
def qwen_vl_length_video(profile_key: tuple[int, ...], max_model_len: int) -> tuple[int, int]:
    """(frames, soft tokens) of vLLM 0.11.0 - 0.14.1's Qwen3-VL dummy video (qwen2_vl.py _get_max_video_frames /
    get_num_frames_with_most_features, qwen3_vl.py _get_vision_info with the video processor), an estimate on the
    Qwen checkpoints' pixel limits: frames grow from 2 while the next count's tokens fit in max_model_len, capped at
    24,576; each frame is the image size with most features (4,096^2) resized by video smart_resize, tokens
    grid_t x (h / p) x (w / p) / m^2. Three frames take 16,200 tokens (2,880^2, two temporal patches), so from
    max_model_len 16,200 the count runs on to the cap: 24,576 frames of 32 x 32 = 12,288 tokens; below it the 2-frame
    start stays (3,520^2 = 12,100 tokens, kept even where that is over the length)."""
    patch, merge, temporal, _ = profile_key
    unit = patch * merge
    side = unit * math.isqrt(QWEN_VL_IMAGE_MAX_PIXELS // (unit * unit))  # the square image vLLM starts from

    def tokens(frames: int) -> int:
        bar = _qwen_video_resize(frames, side, unit, temporal)
        grid_t = max((frames + frames % temporal) // temporal, 1)
        return grid_t * (bar // patch) ** 2 // (merge * merge)

    frames = 2
    while frames < QWEN_VL_MAX_FRAMES and tokens(frames + 1) <= max_model_len:
        frames += 1
    return frames, tokens(frames)


def qwen3_vl(r: Reader, text_hidden: int) -> tuple[Tower, ...]:
    return _qwen_vit(r, text_hidden, deepstack=True)


def qwen3_5(r: Reader, text_hidden: int) -> tuple[Tower, ...]:
    return _qwen_vit(r, text_hidden, deepstack=False)


def qwen2_5_vl(r: Reader, text_hidden: int) -> tuple[Tower, ...]:
    """Qwen2.5-VL: Qwen2_5_VisionTransformerPretrainedModel (transformers 5.23 modeling_qwen2_5_vl.py), the Qwen3-VL
    ViT's parent less its learned pos_embed (2-D rotary only) and with window attention on every block outside
    ``fullatt_block_indexes`` (no weights of its own): Conv3d patch embed without bias, ``depth`` blocks of RMSNorms
    (no bias), qkv / proj with bias and a gated SiLU MLP with bias (gate_proj, up_proj: vLLM gate_up_proj
    MergedColumnParallelLinear; down_proj RowParallelLinear), the patch merger (RMSNorm ln_q over h, mlp.0 h m^2 ->
    h m^2 column, mlp.2 -> out_hidden_size row). vLLM qwen2_5_vl.py shards it as the Qwen3-VL ViT (qkv
    QKVParallelLinear, proj row, Conv3dLayer whole). Qwen2.5-VL-7B (h 1,280, I 3,420, depth 32, p 14, out 3,584):
    1,505,280 + 32 x 19,702,200 + 44,574,464 = 676,550,144."""
    v = _vision(r)
    why = "Qwen2_5_VLVisionConfig default"
    h = v.int("hidden_size", 3584, why=why)
    inter = v.int("intermediate_size", 3420, why=why)
    depth = v.int("depth", 32, why=why)
    heads = v.int("num_heads", 16, why=why)
    ch = v.int("in_channels") if v.has("in_channels") else v.int("in_chans", 3, why=why)  # in_chans: the published name
    patch, temporal = _size(v, "patch_size", 14), _size(v, "temporal_patch_size", 2)
    merge = v.int("spatial_merge_size", 2, why=why)
    out = v.int("out_hidden_size", 3584, why=why)
    merged = h * merge * merge
    comps: list = [Tensor(name="visual.patch_embed.proj", numel=h * ch * temporal * patch * patch),
                   _norm("visual.blocks.norm1", h, False, depth), _norm("visual.blocks.norm2", h, False, depth),
                   _lin("visual.blocks.attn.qkv", 3 * h, h, True, depth),
                   _lin("visual.blocks.attn.proj", h, h, True, depth, "row"),
                   _lin("visual.blocks.mlp.gate_proj", inter, h, True, depth),
                   _lin("visual.blocks.mlp.up_proj", inter, h, True, depth),
                   _lin("visual.blocks.mlp.down_proj", h, inter, True, depth, "row"),
                   _norm("visual.merger.ln_q", h, False), _lin("visual.merger.mlp.0", merged, merged),
                   _lin("visual.merger.mlp.2", out, merged, shard="row")]
    profile = _optional_profile(v, lambda: _qwen2_vl_profile(v, patch, temporal, merge, ch, h, inter, depth, out, True))
    return (Tower(name="visual (window-attention ViT + patch merger)", components=tuple(comps), num_heads=heads,
                  profile=profile, modalities=("image", "video"), vllm_skip_from=QWEN2_VL_SKIP_FROM,
                  source="transformers qwen2_5_vl/modeling_qwen2_5_vl.py; vLLM qwen2_5_vl.py"),)


def qwen2_vl(r: Reader, text_hidden: int) -> tuple[Tower, ...]:
    """Qwen2-VL: Qwen2VisionTransformerPretrainedModel (transformers 5.23 modeling_qwen2_vl.py), Qwen2.5-VL's ViT with
    other names and blocks: width ``embed_dim``, LayerNorms with bias, a plain quick-GELU MLP fc1 (embed_dim x
    mlp_ratio, column) / fc2 (row) with bias, full attention everywhere; the merger's ln_q a LayerNorm, its output
    ``hidden_size`` (the text width). vLLM qwen2_vl.py: qkv ColumnParallelLinear, proj / fc2 / merger mlp.2 row.
    Qwen2-VL-7B (e 1,280, ratio 4, depth 32): 1,505,280 + 32 x 19,677,440 + 44,575,744 = 675,759,104."""
    v = _vision(r)
    why = "Qwen2VLVisionConfig default"
    e = v.int("embed_dim", 1280, why=why)
    # Qwen2VLVisionBlock: mlp_hidden_dim = int(embed_dim * mlp_ratio); Qwen2VLVisionConfig types it int (5.23 refuses 2.5)
    inter = e * v.int("mlp_ratio", 4, why=why)
    depth = v.int("depth", 32, why=why)
    heads = v.int("num_heads", 16, why=why)
    ch = v.int("in_channels") if v.has("in_channels") else v.int("in_chans", 3, why=why)
    patch, temporal = _size(v, "patch_size", 14), _size(v, "temporal_patch_size", 2)
    merge = v.int("spatial_merge_size", 2, why=why)
    out = v.int("hidden_size", 3584, why=why)
    merged = e * merge * merge
    comps: list = [Tensor(name="visual.patch_embed.proj", numel=e * ch * temporal * patch * patch)]
    comps += _vit_layers("visual.blocks", e, inter, depth, ("attn.qkv",), "attn.proj", ("mlp.fc1", "mlp.fc2"))
    comps += [_norm("visual.merger.ln_q", e), _lin("visual.merger.mlp.0", merged, merged),
              _lin("visual.merger.mlp.2", out, merged, shard="row")]
    profile = _optional_profile(v, lambda: _qwen2_vl_profile(v, patch, temporal, merge, ch, e, inter, depth, out, False))
    return (Tower(name="visual (ViT + patch merger)", components=tuple(comps), num_heads=heads, profile=profile,
                  modalities=("image", "video"), vllm_skip_from=QWEN2_VL_SKIP_FROM,
                  source="transformers qwen2_vl/modeling_qwen2_vl.py; vLLM qwen2_vl.py"),)


# vLLM qwen2_vl.py / qwen2_5_vl.py build self.visual only when the image or the video limit is above 0 from 0.10.1 (read
# in 0.10.1.1; 0.10.0 builds it always; 0.15.0+ the same through _mark_tower_model(vllm_config, {"image", "video"}))
QWEN2_VL_SKIP_FROM = (0, 10, 1)

# Qwen/Qwen2.5-VL-* and Qwen/Qwen2-VL-* preprocessor_config.json "max_pixels": 12845056 ("min_pixels": 3136), which
# vLLM reads from the processor, not config.json (read 2026-12 in Harrison-HXLiu/vlm_api_test
# models/Qwen2.5-VL-7B-Instruct/preprocessor_config.json @da6f7936; Qwen2VLImageProcessor's own default is the same
# 16,384 merged 28 x 28 cells). The checkpoints ship no video_preprocessor_config.json: the video processor loads the
# same limit, per frame.
QWEN2_VL_MAX_PIXELS = 12_845_056


def _qwen2_vl_profile(v: Reader, patch: int, temporal: int, merge: int, ch: int, h: int, inter: int, depth: int,
                      out: int, gated: bool) -> TowerProfile:
    """vLLM's dummy items for the Qwen2-VL / Qwen2.5-VL ViT (qwen2_vl.py Qwen2VLProcessingInfo, which qwen2_5_vl.py
    inherits; 0.10.0 - 0.33.0): get_image_size_with_most_features factors max_pixels // (p m)^2 = 12,845,056 // 28^2 =
    16,384 merged cells into 128 x 128 (a 3,584^2 image): 16,384 tokens, 65,536 patches of C T p^2 = 1,176 values.
    The video (``others``): frames of that image, one temporal patch (16,384 tokens, a tie) until kvplan.vllm_mm counts
    its frames from max_model_len (get_num_frames_with_most_features, every release: qwen2_vl_length_video), where it
    outranks the image from 3 frames. The ViT attends each window / image through MMEncoderAttention
    (Qwen2_5_VisionAttention, the block Qwen3-VL reuses): 10h / w live in the attention stage (an estimate, as for
    Qwen3-VL). Qwen2.5-VL-7B: 16,384 x 3,584 x 2 = 112 MiB of bf16 outputs, 147 MiB of pixel values."""
    v.assumptions.append(f"vLLM's profile image for the Qwen2-VL / Qwen2.5-VL ViT: max_pixels {QWEN2_VL_MAX_PIXELS:,} "
                         "per image / video frame, the Qwen checkpoints' preprocessor_config.json (not in config.json)")
    if min(patch, merge, temporal, ch) < 1:
        raise ConfigError("vision_config.patch_size", "patch_size, spatial_merge_size, temporal_patch_size and "
                          "in_channels must be positive for vLLM's dummy item")
    tokens = qwen_vl_cells(patch * merge, QWEN2_VL_MAX_PIXELS)

    def item(modality: str) -> TowerProfile:
        return _profile("vision_config.patch_size", modality=modality, tokens_per_item=tokens, embeds_per_item=tokens,
                        patches_per_item=tokens * merge * merge,
                        pixels_per_item=tokens * merge * merge * ch * temporal * patch * patch, hidden_size=h,
                        intermediate_size=inter, num_layers=depth, gated_mlp=gated, embed_width=out,
                        attn_live_sharded=10, length_video=(patch, merge, temporal, ch),
                        source="vLLM qwen2_vl.py Qwen2VLProcessingInfo.get_mm_max_tokens_per_item / "
                               "get_image_size_with_most_features, qwen2_5_vl.py Qwen2_5_VisionTransformer")

    # a tie: the image first (the larger first, as Qwen3-VL's); kvplan.vllm_mm sizes the video by max_model_len
    return item("image").model_copy(update={"others": (item("video"),)})


# vLLM qwen2_vl.py _MAX_FRAMES_PER_VIDEO: 16 in 0.10.x, 14 from 0.11.0 (read in the 0.10.0 - 0.33.0 wheels)
QWEN2_VL_MAX_FRAMES_010, QWEN2_VL_MAX_FRAMES = 16, 14


def qwen2_vl_length_video(frame_tokens: int, temporal: int, max_tokens: int, max_frames: int,
                          pad_up: bool = True) -> tuple[int, int]:
    """(frames, tokens) of vLLM's Qwen2-VL / Qwen2.5-VL dummy video (qwen2_vl.py _get_max_video_frames /
    get_num_frames_with_most_features / get_max_video_tokens, mm_counts one video): every frame the image with most
    features (``frame_tokens`` merged cells; smart_resize under the same per-frame max_pixels leaves it), tokens(n) =
    max(padded(n) // T, 1) x frame_tokens with padded(n) = n + (-n % T) (0.27.0+; before, n + n % T: the same for
    T = 2, every Qwen checkpoint's); frames grow while tokens(n + 1) <= ``max_tokens`` (max_model_len, less the image's
    tokens in 0.10.0 - 0.10.1.1 where the image limit is above 0: kvplan.vllm_mm), then min(., ``max_frames``) and at
    least 1 (counting from 0 before 0.11.0 or from 1 after gives the same count). Qwen2.5-VL-7B at 128,000, cap 14:
    14 frames, 7 x 16,384 = 114,688 tokens (0.10.0: 128,000 - 16,384 = 111,616 -> 12 frames, 98,304); at 32,768: 4
    frames, 32,768; at 16,384: 2 frames, 16,384 (the image's)."""
    def tokens(n: int) -> int:
        padded = n + (-n % temporal if pad_up else n % temporal)
        return max(padded // temporal, 1) * frame_tokens

    frames = 0
    while frames < max_frames and tokens(frames + 1) <= max_tokens:  # past the cap the count is cut to it anyway
        frames += 1
    frames = max(frames, 1)
    return frames, tokens(frames)


def pixtral_mistral3(r: Reader, text_hidden: int) -> tuple[Tower, ...]:
    """Mistral-3: PixtralVisionModel (RMSNorms, gated SiLU MLP, no biases) + Mistral3MultiModalProjector
    (RMSNorm, patch merger h*s^2 -> h, linear_1 h*n_layers -> text_h, linear_2 text_h -> text_h).
    Mistral-Small-3.1: 403,305,472 + 35,652,608."""
    v = _vision(r)
    h, inter, layers, heads = _vit_dims(v, "PixtralVisionConfig", 1024, 4096, 24, 16)
    ch = v.int("num_channels", 3, why="PixtralVisionConfig default")
    patch = _size(v, "patch_size", 16)
    merge = r.int("spatial_merge_size", 2, why="Mistral3Config default")
    bias = r.bool("multimodal_projector_bias", False)
    feature = r.raw("vision_feature_layer", -1)
    n_feature = len(feature) if isinstance(feature, list) else 1
    comps: list = [Tensor(name="vision_tower.patch_conv", numel=h * ch * patch * patch),
                   _norm("vision_tower.ln_pre", h, bias=False)]
    comps += _vit_layers("vision_tower.transformer.layers", h, inter, layers, ("q_proj", "k_proj", "v_proj"),
                         "o_proj", ("gate_proj", "up_proj", "down_proj"), bias=False,
                         norms=("attention_norm", "ffn_norm"), norm_bias=False)
    comps += [_norm("multi_modal_projector.norm", h, bias=False),
              _lin("multi_modal_projector.patch_merger.merging_layer", h, h * merge * merge, False, shard="replicated"),
              _lin("multi_modal_projector.linear_1", text_hidden, h * n_feature, bias),
              _lin("multi_modal_projector.linear_2", text_hidden, text_hidden, bias, shard="row")]
    # vLLM's profile item: one image_size x image_size image (get_image_size_with_most_features), its patch grid
    # merged s x s into (image / (p s))^2 embeds (pixtral.py PixtralHFEncoderInfo.get_num_image_tokens)
    image = _size(v, "image_size", 1024)
    grid = image // patch
    profile = _profile(
        "vision_config.image_size", tokens_per_item=(grid // merge) ** 2, embeds_per_item=(grid // merge) ** 2,
                           patches_per_item=grid * grid, pixels_per_item=ch * image * image, hidden_size=h,
                           intermediate_size=inter, num_layers=layers, gated_mlp=True, block_mask="dense_from_0_12",
                           source="vLLM mistral3.py Mistral3ProcessingInfo, pixtral.py PixtralHFVisionModel")
    # vLLM 0.11.0 - 0.14.1 mistral3.py: vision_tower = None when the image limit is 0 (0.15+: _mark_tower_model)
    return (Tower(name="vision_tower (Pixtral) + multi_modal_projector", components=tuple(comps), num_heads=heads,
                  source="transformers pixtral/modeling_pixtral.py, mistral3/modeling_mistral3.py; vLLM pixtral.py, "
                         "mistral3.py", profile=profile, vllm_skip_from=(0, 11, 0)),)


def llama4_vision(r: Reader, text_hidden: int) -> tuple[Tower, ...]:
    """Llama-4: Llama4VisionModel (class token, positions (image/p)^2 + 1, unfold-conv linear, LN pre/post,
    biased blocks, pixel-shuffle adapter fc1 I -> projector_input_dim, fc2 projector_output_dim^2) +
    Llama4MultiModalProjector (vision_output_dim -> text_h). Llama-4-Scout: 850,960,896 + 20,971,520."""
    v = _vision(r)
    h, inter, layers, heads = _vit_dims(v, "Llama4VisionConfig", 768, 5632, 34, 16)
    ch = v.int("num_channels", 3, why="Llama4VisionConfig default")
    image, patch = _size(v, "image_size", 448), _size(v, "patch_size", 14)
    proj_in = v.int("projector_input_dim", 4096, why="Llama4VisionConfig default")
    proj_out = v.int("projector_output_dim", 4096, why="Llama4VisionConfig default")
    out = v.int("vision_output_dim", 7680, why="Llama4VisionConfig default")
    comps: list = [Tensor(name="vision_model.class_embedding", numel=h),
                   Tensor(name="vision_model.positional_embedding_vlm", numel=((image // patch) ** 2 + 1) * h),
                   _lin("vision_model.patch_embedding.linear", h, ch * patch * patch, False),
                   _norm("vision_model.layernorm_pre", h), _norm("vision_model.layernorm_post", h)]
    comps += _vit_layers("vision_model.model.layers", h, inter, layers, ("q_proj", "k_proj", "v_proj"), "o_proj",
                         ("mlp.fc1", "mlp.fc2"), norms=("input_layernorm", "post_attention_layernorm"))
    comps += [_lin("vision_model.vision_adapter.mlp.fc1", proj_in, inter, False),
              _lin("vision_model.vision_adapter.mlp.fc2", proj_out, proj_out, False, shard="row"),
              _lin("multi_modal_projector.linear_1", text_hidden, out, False)]
    # vLLM's profile item: an image of max_patches x 1 tiles (16:1, get_image_size_with_most_features) -> 16 tiles
    # + the global one, each (image/p)^2 patches + a class token, pixel-shuffled to (image/p)^2 x ratio^2 embeds
    ratio = v.raw("pixel_shuffle_ratio", 0.5)
    if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not 0 < ratio <= 1:
        raise ConfigError("vision_config.pixel_shuffle_ratio", f"must be a number in (0, 1], got {ratio!r}")
    tiles = LLAMA4_MAX_TILES + 1
    grid = (image // patch) ** 2
    per_tile = grid // round(1 / ratio ** 2)
    r.assumptions.append(f"vLLM profiles Llama-4 with {LLAMA4_MAX_TILES} + 1 image tiles (preprocessor_config.json "
                         "max_patches 16, not in config.json)")
    profile = _profile(
        "vision_config.image_size", tokens_per_item=tiles * per_tile, embeds_per_item=tiles * per_tile,
                           patches_per_item=tiles * (grid + 1), pixels_per_item=tiles * ch * image * image,
                           hidden_size=h, intermediate_size=inter, num_layers=layers,
                           source="vLLM mllama4.py Mllama4ProcessingInfo (get_max_num_tiles, get_patch_per_chunk)")
    # vLLM 0.11.0 - 0.14.1 mllama4.py: vision_model = None when the image limit is 0 (0.15+: _mark_tower_model)
    return (Tower(name="vision_model + multi_modal_projector", components=tuple(comps), num_heads=heads,
                  source="transformers llama4/modeling_llama4.py; vLLM mllama4.py", profile=profile,
                  vllm_skip_from=(0, 11, 0)),)


# Llama4ImageProcessorFast max_patches in meta-llama/Llama-4-Scout / Maverick preprocessor_config.json (16), which
# vLLM mllama4.py get_max_num_tiles reads from the processor (not config.json); read 2026-12
LLAMA4_MAX_TILES = 16


def _first(v: Reader, keys: tuple[str, ...], default: int, why: str) -> int:
    """The first of ``keys`` the config gives (transformers' name, then the remote-code one)."""
    for key in keys:
        if v.has(key):
            return v.int(key)
    return v.int(keys[0], default, why=why)


def moonvit_kimi_k25(r: Reader, text_hidden: int) -> tuple[Tower, ...]:
    """Kimi-K2.5: MoonViT (Kimi_K25VisionModel: conv patch embed, learned H x W position grid, biased
    blocks, final LN) + Kimi_K25MultimodalProjection (LN over projection_hidden_size, in_proj
    h*k^2 -> h*k^2, out_proj -> text_h). Moonshot's remote-code config names (vt_hidden_size,
    init_pos_emb_height, ...) are read where transformers' names are absent.
    Kimi-K2.5: 416,866,032 + 54,277,888."""
    v = _vision(r)
    why = "Kimi_K25VisionConfig default"
    h = _first(v, ("hidden_size", "vt_hidden_size"), 1152, why)
    inter = _first(v, ("intermediate_size", "vt_intermediate_size"), 4304, why)
    layers = _first(v, ("num_hidden_layers", "vt_num_hidden_layers"), 27, why)
    heads = _first(v, ("num_attention_heads", "vt_num_attention_heads"), 16, why)
    patch = _size(v, "patch_size", 14)
    grid_h = _first(v, ("pos_emb_height", "init_pos_emb_height"), 64, why)
    grid_w = _first(v, ("pos_emb_width", "init_pos_emb_width"), 64, why)
    kernel = v.int_list("merge_kernel_size") or [2, 2]
    if len(kernel) != 2:
        raise ConfigError("vision_config.merge_kernel_size", "must be two integers [kh, kw]")
    proj_norm = (r.int("projection_hidden_size") if r.has("projection_hidden_size")
                 else _first(v, ("mm_hidden_size",), 1152, "Kimi_K25Config projection_hidden_size default"))
    merged = h * kernel[0] * kernel[1]
    comps: list = [Tensor(name="vision_tower.patch_embed.proj", numel=h * 3 * patch * patch + h),
                   Tensor(name="vision_tower.patch_embed.pos_emb", numel=grid_h * grid_w * h)]
    comps += _vit_layers("vision_tower.layers", h, inter, layers, ("attn.q_proj", "attn.k_proj", "attn.v_proj"),
                         "attn.proj", ("mlp.fc1", "mlp.fc2"))
    comps += [_norm("vision_tower.final_layernorm", h), _norm("mm_projector.pre_norm", proj_norm),
              _lin("mm_projector.in_proj", merged, merged),
              _lin("mm_projector.out_proj", text_hidden, merged, shard="row")]
    profile = _optional_profile(r, lambda: _moonvit_profile(r, patch, kernel, h, inter, layers, heads))
    # vLLM kimi_k25.py get_supported_mm_limits: {"vision_chunk": None} (images and video chunks alike); the tower is
    # marked _mark_tower_model(vllm_config, "vision_chunk") from 0.16.0 (0.15.x builds it always)
    return (Tower(name="vision_tower (MoonViT) + mm_projector", components=tuple(comps), num_heads=heads,
                  profile=profile, modalities=("vision_chunk",), vllm_skip_from=(0, 16, 0),
                  source="transformers kimi_k25/modeling_kimi_k25.py; vLLM kimi_k25.py, kimi_k25_vit.py"),)


# moonshotai/Kimi-K2.5 preprocessor_config.json media_proc_cfg (not in config.json; read 2026-12 as quoted by the
# RTP-LLM and Baseten ports of its processor): in_patch_limit 16384, patch_limit_on_one_side 512,
# in_patch_limit_each_frame 4096, temporal_merge_kernel_size 4; vLLM kimi_k25.py MaxImageTokenMeta 3000 x 3000
KIMI_K25_PATCH_LIMIT, KIMI_K25_SIDE_LIMIT, KIMI_K25_FRAME_PATCH_LIMIT = 16_384, 512, 4_096
KIMI_K25_DUMMY_SIDE = 3000
# vLLM kimi_k25_vit.py MoonViT3dEncoder builds Rope2DPosEmbRepeated(head_dim, 512, 512), whose get_freqs_cis registers
# the whole (512, 512, head_dim / 2) complex64 table as a buffer on its first call (read in the 0.15.0, 0.20.0,
# 0.30.0 and 0.33.0 wheels, 2026-12-03): 8 B a complex value
KIMI_K25_ROPE_GRID, COMPLEX64_BYTES = 512, 8


def moonvit_rope_table_bytes(head_dim: int) -> int:
    """The 2-D RoPE table MoonViT's encoder keeps once it has run (vLLM kimi_k25_vit.py Rope2DPosEmbRepeated
    ``get_freqs_cis``: ``_precompute_freqs_cis`` on the first forward, kept with ``register_buffer``; 0.15.0 - 0.33.0).
    Inputs: ``head_dim`` the encoder's attention head width (qkv width / heads). bytes = 512 x 512 x head_dim / 2 x 8.
    Made in vLLM's profile run (the encoder's dummy item), after "Model loading took", and held from then on: inside
    the torch peak. Worked number: Kimi-K2.5 (1152 / 16 = 72): 512 x 512 x 36 x 8 = 75,497,472 B (72 MiB)."""
    return KIMI_K25_ROPE_GRID * KIMI_K25_ROPE_GRID * (head_dim // 2) * COMPLEX64_BYTES


def _navit_side(side: int, patch: int, merge: int, limit: int, side_limit: int) -> int:
    """Patches along one side of a square ``side`` x ``side`` image after Moonshot's navit_resize_image: scale by
    min(1, sqrt(limit / (side // p)^2), side_limit p / side), truncate, pad to a multiple of p x merge.
    3000, p 14, merge 2, limit 16,384: scale 0.598, 1,794 px, padded to 1,820 = 130 patches (65 tokens)."""
    scale = min(1.0, math.sqrt(limit / (max(1, side // patch) ** 2)), side_limit * patch / side)
    new = min(max(1, int(side * scale)), side_limit * patch)
    factor = patch * merge
    return (new + (factor - new % factor) % factor) // patch


def _moonvit_profile(r: Reader, patch: int, kernel: list[int], h: int, inter: int, layers: int,
                     heads: int) -> TowerProfile:
    """vLLM's dummy item for Kimi-K2.5 (kimi_k25.py KimiK25DummyInputsBuilder.get_dummy_mm_items, 0.15.0 - 0.33.0):
    a 3000 x 3000 image or a 4-frame video chunk of them, whichever has more tokens (media_tokens_calculator); no
    get_mm_max_tokens_per_item, so the budget counts those embeds. Image: 130^2 = 16,900 patches of 3 x 14^2, merged
    2 x 2 to 65^2 = 4,225 tokens; the chunk's frames get 4,096 patches each (66^2 after padding: 33^2 = 1,089 tokens,
    the 4 frames pooled into one by sd2_tpool), fewer: the item is the image. Attention stage (an estimate):
    kimi_k25_vit.py apply_rope upcasts q and k to fp32 complex, so at the k rotation qkv 3h, the fp32 q / k 4h, the
    rotated fp32 q 2h and the k product 2h are alive: 11h / w beside the residual and normed input. The encoder's first
    call also keeps its 2-D RoPE table (``moonvit_rope_table_bytes``: 72 MiB at head width 72)."""
    r.assumptions.append(f"vLLM's profile image for MoonViT: {KIMI_K25_DUMMY_SIDE}^2 under in_patch_limit "
                         f"{KIMI_K25_PATCH_LIMIT:,} / patch_limit_on_one_side {KIMI_K25_SIDE_LIMIT} (Kimi-K2.5's "
                         "preprocessor_config.json media_proc_cfg, not in config.json)")
    kh, kw = kernel
    if min(kh, kw, patch) < 1:
        raise ConfigError("vision_config.merge_kernel_size", "the merge kernel and patch size must be positive")
    side = _navit_side(KIMI_K25_DUMMY_SIDE, patch, kh, KIMI_K25_PATCH_LIMIT, KIMI_K25_SIDE_LIMIT)
    frame = _navit_side(KIMI_K25_DUMMY_SIDE, patch, kh, KIMI_K25_FRAME_PATCH_LIMIT, KIMI_K25_SIDE_LIMIT)
    tokens = max((side // kh) * (side // kw), (frame // kh) * (frame // kw))
    return _profile("vision_config.patch_size", modality="vision_chunk", tokens_per_item=tokens, embeds_per_item=tokens,
                    patches_per_item=side * side, pixels_per_item=side * side * 3 * patch * patch, hidden_size=h,
                    intermediate_size=inter, num_layers=layers, attn_live_sharded=11,
                    kept_buffer_bytes=moonvit_rope_table_bytes(h // max(1, heads)),
                    source="vLLM kimi_k25.py KimiK25DummyInputsBuilder (Moonshot's navit_resize_image), "
                           "kimi_k25_vit.py (Rope2DPosEmbRepeated's kept table)")


def build_towers(outer: Mapping, text_hidden: int) -> tuple[tuple[Tower, ...], list[str], list[str]]:
    """(towers, assumptions, warnings) for a wrapper config; none for a model_type without a builder.
    A malformed vision_config leaves the tower uncounted with a warning (the text plan stands)."""
    builder = TOWER_BUILDERS.get(outer.get("model_type") or "")
    if builder is None:
        return (), [], []
    r = Reader(outer)
    try:
        towers = builder(r, text_hidden)
    except ConfigError as exc:
        return (), [], [f"vision tower not counted: {exc}"]
    return towers, r.assumptions, []


def gemma4_vision(r: Reader, text_hidden: int) -> tuple[Tower, ...]:
    """Gemma-4: Gemma4VisionModel (patch input_proj 3p^2 -> h, a (2, position_embedding_size, h) position
    table, blocks of q/k/v/o without bias, q_norm / k_norm (head_dim), gated MLP, four RMSNorms) +
    embed_vision (Gemma4MultimodalEmbedder: a scale-free RMSNorm, embedding_projection h -> text_h, a
    ReplicatedLinear in vLLM gemma4_mm.py). ``vision_config`` absent (optional in Gemma4Config): no tower.
    The audio tower (Gemma4AudioModel, E2B / E4B checkpoints) is not modeled: a warning says so.
    Gemma-4-26B-A4B: 569,548,080 + 3,244,032."""
    if r.raw("audio_config") is not None:
        raise ConfigError("audio_config", "Gemma-4's audio tower is not modeled: tower weights not counted")
    if r.raw("vision_config") is None:
        return ()
    v = _vision(r)
    why = "Gemma4VisionConfig default"
    h, inter, layers, heads = _vit_dims(v, "Gemma4VisionConfig", 768, 3072, 16, 12)
    kv = v.int("num_key_value_heads", 12, why=why)
    hd = v.int("head_dim", 64, why=why)
    patch = v.int("patch_size", 16, why=why)
    positions = v.int("position_embedding_size", 10 * 1024, why=why)
    out = v.int("output_proj_dims") if v.has("output_proj_dims") else h
    p = "vision_tower.encoder.layers"
    comps: list = [_lin("vision_tower.patch_embedder.input_proj", h, 3 * patch * patch, False, shard="replicated"),
                   Tensor(name="vision_tower.patch_embedder.position_embedding_table", numel=2 * positions * h),
                   _norm(f"{p}.norms", h, False, 4 * layers), _norm(f"{p}.self_attn.qk_norm", hd, False, 2 * layers),
                   _lin(f"{p}.self_attn.q_proj", heads * hd, h, False, layers),
                   _lin(f"{p}.self_attn.k_proj", kv * hd, h, False, layers),
                   _lin(f"{p}.self_attn.v_proj", kv * hd, h, False, layers),
                   _lin(f"{p}.self_attn.o_proj", h, heads * hd, False, layers, "row"),
                   _lin(f"{p}.mlp.gate_proj", inter, h, False, layers),
                   _lin(f"{p}.mlp.up_proj", inter, h, False, layers),
                   _lin(f"{p}.mlp.down_proj", h, inter, False, layers, "row"),
                   _lin("embed_vision.embedding_projection", text_hidden, out, False, shard="replicated")]
    # vLLM's profile item is a video (its 2,496 tokens beat an image's default_output_length 280): 32 frames, each at
    # most 70 soft tokens from 70 x k^2 patches (padded to that many), tokens 32 x (70 + 2 + 6) (gemma4_mm.py
    # get_mm_max_tokens_per_item, _VIDEO_MAX_FRAMES / _VIDEO_MAX_SOFT_TOKENS, 0.19.0 - 0.33.0)
    k = v.int("pooling_kernel_size", 3, why=why)
    frames, soft = GEMMA4_VIDEO_FRAMES, GEMMA4_VIDEO_SOFT_TOKENS
    profile = _profile(
        "vision_config.pooling_kernel_size", modality="video", tokens_per_item=frames * (soft + 2 + 6), embeds_per_item=frames * soft,
                           patches_per_item=frames * soft * k * k, pixels_per_item=frames * soft * k * k * 3 * patch ** 2,
                           hidden_size=h, intermediate_size=inter, num_layers=layers, gated_mlp=True,
                           frames_per_item=frames, frame_chunk_cost=soft * k * k * 4 * positions * 8,
                           source="vLLM gemma4_mm.py _process_video_input (the tower is transformers' Gemma4VisionModel)")
    # the image item (profiled when --limit-mm-per-prompt sets video to 0): get_mm_max_tokens_per_item's image entry
    # vision_config.default_output_length (280) tokens; the dummy image is 224 x 224 (get_dummy_mm_data: the
    # Gemma4ImageProcessor has no size), patchified and zero-padded to max_patches = 280 x k^2 = 2,520 patches of
    # 3 x p^2 values; its soft tokens _compute_num_soft_tokens(224, 224): scale sqrt(2,520 / 14^2) = 3.586, each side
    # floor(224 x 3.586 / 48) x 48 = 768 px = 48 patches, 48^2 / 3^2 = 256 embeds (0.19.0 - 0.33.0)
    default = v.int("default_output_length", 280, why=why)
    unit, side = patch * k, GEMMA4_DUMMY_IMAGE_SIDE
    scaled = max(unit, math.floor(side * math.sqrt(default * k * k / ((side / patch) ** 2)) / unit) * unit)
    image = _profile("vision_config.default_output_length", modality="image", tokens_per_item=default,
                     embeds_per_item=min((scaled // patch) ** 2 // (k * k), default),
                     patches_per_item=default * k * k, pixels_per_item=default * k * k * 3 * patch ** 2, hidden_size=h,
                     intermediate_size=inter, num_layers=layers, gated_mlp=True,
                     source="vLLM gemma4_mm.py Gemma4ProcessingInfo.get_mm_max_tokens_per_item, _compute_num_soft_tokens")
    profile = profile.model_copy(update={"others": (image,)})
    # gemma4_mm.py (0.19.0 - 0.33.0): the vision tower is _mark_tower_model(vllm_config, {"image", "video"})
    return (Tower(name="vision_tower + embed_vision", components=tuple(comps), num_heads=heads,
                  source="transformers gemma4/modeling_gemma4.py; vLLM gemma4_mm.py", profile=profile,
                  modalities=("image", "video")),)


# vLLM gemma4_mm.py _VIDEO_MAX_FRAMES / _VIDEO_MAX_SOFT_TOKENS (0.19.0 - 0.33.0 wheels, read 2026-12)
GEMMA4_VIDEO_FRAMES, GEMMA4_VIDEO_SOFT_TOKENS = 32, 70
GEMMA4_DUMMY_IMAGE_SIDE = 224  # gemma4_mm.py get_dummy_mm_data: size.get("width", 224) (the processor has no size)


# Wrapper model_type -> tower builder (reader over the wrapper config, text hidden size).
TOWER_BUILDERS = {
    "gemma3": siglip_gemma3,
    "qwen2_vl": qwen2_vl,
    "qwen2_5_vl": qwen2_5_vl,
    "qwen3_vl": qwen3_vl,
    "qwen3_vl_moe": qwen3_vl,
    "qwen3_5": qwen3_5,
    "qwen3_5_moe": qwen3_5,
    "mistral3": pixtral_mistral3,
    "llama4": llama4_vision,
    "kimi_k25": moonvit_kimi_k25,
    "gemma4": gemma4_vision,
    "deepseek_v41": dsv41_tower,
}
