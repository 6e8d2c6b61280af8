"""A checkpoint's weights from its safetensors headers: every tensor's dtype and shape, no weights read.

Standard library only (core): the CLI's ``plan --checkpoint`` and the app use it; the Hub reader
(huggingface_hub range requests) is ``kvplan.web.checkpoint.read_hub``, which builds the same ``Checkpoint``.

A safetensors file starts with an 8-byte little-endian header length N, then N bytes of JSON:
``{"name": {"dtype": "BF16", "shape": [out, in], "data_offsets": [a, b]}, "__metadata__": {...}}``
(https://huggingface.co/docs/safetensors, format). A local folder is read here: the shards named by
``model.safetensors.index.json`` (else every top-level ``*.safetensors``), each file's first 8 + N bytes only.

Bytes of a tensor = numel x the dtype's bits / 8, rounded up (``DTYPE_BITS``: F8_E4M3, F8_E8M0, U8, I8
1 B; BF16 2 B; F32, I32 4 B; F4 half a byte). Packed formats are already packed in the checkpoint (an
int4 AWQ ``qweight`` is I32 [in, out/8]), so the sum is exactly the bytes the engine copies.

Tensors map to kvplan's categories by name (``categorize``); vision / audio towers, MTP (nextn) layers
and quantization scales are kept apart so a difference from kvplan's computed weights is explained.
``rank_bytes`` splits them over a parallel layout with the spec's shard rules (kvplan.parallel);
``engine_with_checkpoint_weights`` puts the busiest rank's bytes into an EngineConfig, so a plan budgets them.

Served dtype (``served_dtype``): vLLM builds the model under ``set_default_torch_dtype(model_config.dtype)``
(model_loader/base_loader.py load_model) and creates every unquantized parameter in it
(layers/linear.py UnquantizedLinearMethod.create_weights: ``torch.empty(..., dtype=params_dtype)``, params_dtype =
``torch.get_default_dtype()``; vocab_parallel_embedding.py, layernorm.py likewise), then copies each saved tensor into
its parameter (model_loader/weight_utils.py default_weight_loader: ``param.data.copy_(loaded_weight)``, a cast), so
an unquantized checkpoint's float tensors (F64 / F32 / F16 / BF16) take the served dtype's bytes on the GPU: an F32
checkpoint served ``--dtype auto`` (vLLM's and SGLang's downcast, kvplan.plan.vllm_auto_dtype) loads 2 B a weight,
a BF16 one served ``--dtype float32`` 4 B. Kept as saved: non-float tensors, a quantized checkpoint's tensors (packed
weights and their scales keep their dtypes: the quantization method creates them), and ``e_score_correction_bias``
(vLLM creates it float32: models/deepseek_v2.py, glm4_moe.py and ten more, vLLM 0.33.0 wheel).
"""

import json
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path

from kvplan.errors import PlanInputError
from kvplan.layers import heads_per_rank
from kvplan.parallel import VOCAB_PADDING, Layout, pp_partition
from kvplan.units import cdiv, counted

# Bits per element of every safetensors dtype (safetensors 0.8 Dtype enum, read 2026-12).
DTYPE_BITS = {"BOOL": 8, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8, "I16": 16, "U16": 16,
              "F16": 16, "BF16": 16, "I32": 32, "U32": 32, "F32": 32, "I64": 64, "U64": 64, "F64": 64,
              "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6, "C64": 64}
MAX_HEADER_BYTES = 100 * 2**20  # safetensors refuses headers over 100 MB (MAX_HEADER_SIZE)
INDEX_FILE = "model.safetensors.index.json"
SINGLE_FILE = "model.safetensors"
MAX_INDEX_BYTES = 64 * 2**20
MAX_SHARDS = 4096
# Float dtypes a loader casts into the served dtype; the served dtype's safetensors name (kvplan format -> dtype).
FLOAT_DTYPES = ("F64", "F32", "F16", "BF16")
SERVED_DTYPE = {"fp32": "F32", "bf16": "BF16", "fp16": "F16"}
# A checkpoint holding any of these is quantized: its tensors load as saved (the dtypes of packed / fp8 weights).
QUANTIZED_DTYPES = ("F8_E5M2", "F8_E4M3", "F8_E8M0", "F4", "F6_E2M3", "F6_E3M2", "I8", "U8")
KEEP_FLOAT32 = re.compile(r"e_score_correction_bias$")  # created float32 by vLLM whatever the model dtype

VISION = re.compile(r"(^|\.)(visual|vision_tower|vision_model|vision_encoder|multi_modal_projector|mm_projector|"
                    r"vision_embed_tokens|patch_embed|image_newline|vit)\.")
AUDIO = re.compile(r"(^|\.)(audio_tower|audio_model|audio_encoder|speech_encoder)\.")
MTP = re.compile(r"(^|\.)(mtp|nextn|mtp_layers?)\.")
LAYER = re.compile(r"(?:^|\.)(?:layers|h|blocks|layer)\.(\d+)\.")
EXPERT = re.compile(r"\.experts\.(\d+)\.")
SCALE = re.compile(r"(_scale(_inv|_2)?|\.scales|\.qzeros|\.g_idx|_zero_point|\.absmax|\.nested_absmax|quant_map|"
                   r"\.SCB|input_scale|_g_idx|weight_shape)$")
# AWQ / GPTQ tensors are stored [in, out] (transposed): their output dim is the last axis.
TRANSPOSED = re.compile(r"\.(qweight|qzeros|scales)$")
COLUMN = ("q_proj", "k_proj", "v_proj", "qkv_proj", "gate_proj", "up_proj", "gate_up_proj", "c_attn", "c_fc",
          "query_key_value", "Wqkv", "w1", "w3", "fc1", "dense_h_to_4h", "q_b_proj", "kv_b_proj", "in_proj")
ROW = ("o_proj", "down_proj", "c_proj", "dense", "w2", "fc2", "dense_4h_to_h", "out_proj", "wo")
VOCAB = ("embed_tokens", "lm_head", "wte", "word_embeddings", "embed_in", "embed_out")


class CheckpointError(Exception):
    """A checkpoint whose headers cannot be read; the message says what to do."""


@dataclass(frozen=True)
class TensorInfo:
    name: str
    dtype: str
    shape: tuple[int, ...]
    file: str

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def nbytes(self) -> int:
        return cdiv(self.numel * DTYPE_BITS[self.dtype], 8)


@dataclass
class Checkpoint:
    """Every tensor of a checkpoint, from its headers. ``source``: the folder or Hub id."""

    source: str
    tensors: list[TensorInfo]
    files: int
    notes: list[str] = field(default_factory=list)
    # per spec, what rank_bytes reads of each tensor that no layout changes (see _prepare); the spec is kept in
    # the value so its id is not reused
    _prepared: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def total_bytes(self) -> int:
        return sum(t.nbytes for t in self.tensors)

    def bytes_by_dtype(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for t in self.tensors:
            out[t.dtype] = out.get(t.dtype, 0) + t.nbytes
        return dict(sorted(out.items(), key=lambda kv: -kv[1]))

    def bytes_by_category(self, num_layers: int | None = None) -> dict[str, int]:
        out: dict[str, int] = {}
        for t in self.tensors:
            c = categorize(t.name, num_layers)
            out[c] = out.get(c, 0) + t.nbytes
        return out

    def rows(self, num_layers: int | None = None) -> list[dict]:
        """[{dtype, tensors, elements, bytes}] for a table."""
        rows: dict[str, dict] = {}
        for t in self.tensors:
            r = rows.setdefault(t.dtype, {"dtype": t.dtype, "tensors": 0, "elements": 0, "bytes": 0})
            r["tensors"] += 1
            r["elements"] += t.numel
            r["bytes"] += t.nbytes
        return sorted(rows.values(), key=lambda r: -r["bytes"])


# ----------------------------------------------------------------------------------------------- reading

def parse_header(raw: bytes, file: str) -> list[TensorInfo]:
    """The tensors of one safetensors header (the JSON after the 8-byte length)."""
    try:
        header = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"{file}: the safetensors header is not JSON ({exc.__class__.__name__})") from None
    if not isinstance(header, dict):
        raise CheckpointError(f"{file}: the safetensors header is not a JSON object")
    out = []
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        dtype = entry.get("dtype") if isinstance(entry, dict) else None
        shape = entry.get("shape") if isinstance(entry, dict) else None
        if dtype not in DTYPE_BITS:
            raise CheckpointError(f"{file}: tensor {name[:120]!r} has dtype {str(dtype)[:20]!r}; known: "
                                  f"{', '.join(DTYPE_BITS)}")
        if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0
                                                  for d in shape):
            raise CheckpointError(f"{file}: tensor {name[:120]!r} has no valid shape")
        out.append(TensorInfo(str(name), dtype, tuple(shape), file))
    return out


def read_local_header(path: str | Path) -> list[TensorInfo]:
    """One local file's tensors: 8 + N bytes read, never the weights."""
    p = Path(path)
    with open(p, "rb") as f:
        head = f.read(8)
        if len(head) < 8:
            raise CheckpointError(f"{p.name}: shorter than a safetensors header")
        (n,) = struct.unpack("<Q", head)
        if n > MAX_HEADER_BYTES:
            raise CheckpointError(f"{p.name}: header of {n:,} bytes is over the {MAX_HEADER_BYTES:,} limit")
        raw = f.read(n)
    if len(raw) < n:
        raise CheckpointError(f"{p.name}: truncated safetensors header")
    return parse_header(raw, p.name)


def shards_from_index(index: dict, where: str) -> list[str]:
    """The shard file names a parsed model.safetensors.index.json's weight_map names, sorted and each once;
    CheckpointError (``where``: the folder or repo, for the message) when it has none or names a file kvplan does not
    read (not *.safetensors beside the index, or more than MAX_SHARDS)."""
    weight_map = index.get("weight_map") if isinstance(index, dict) else None
    if not isinstance(weight_map, dict) or not weight_map:
        raise CheckpointError(f"{where}: {INDEX_FILE} has no weight_map")
    files = sorted({str(v) for v in weight_map.values()})
    if len(files) > MAX_SHARDS or any("/" in f or "\\" in f or f.startswith(".") or not f.endswith(".safetensors")
                                      for f in files):
        raise CheckpointError(f"{where}: {INDEX_FILE} names shards kvplan does not read (only *.safetensors "
                              f"beside the index, at most {MAX_SHARDS})")
    return files


def read_local(folder: str | Path, within: str | Path | None = None) -> Checkpoint:
    """Every tensor of a local checkpoint folder (see the module docstring).

    ``within``: a root every file read must lie under once symlinks and ``..`` are resolved (the app's
    KVPLAN_CHECKPOINT_ROOT): a shard that is a link out of it is refused, not read."""
    root = Path(folder)
    if not root.is_dir():
        raise CheckpointError(f"{root}: not a folder")
    fence = None if within is None else Path(within).resolve()

    def check(p: Path) -> Path:
        if fence is not None and not p.resolve().is_relative_to(fence):
            raise CheckpointError(f"{root.name}: {p.name} is a link out of {fence}; kvplan reads no file outside it")
        return p

    index = root / INDEX_FILE
    if index.is_file():
        if check(index).stat().st_size > MAX_INDEX_BYTES:
            raise CheckpointError(f"{root.name}: {INDEX_FILE} is over {MAX_INDEX_BYTES:,} bytes")
        try:
            names = shards_from_index(json.loads(index.read_bytes()), root.name)
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise CheckpointError(f"{root.name}: {INDEX_FILE} is not JSON") from None
    else:
        names = sorted(p.name for p in root.glob("*.safetensors") if p.is_file())
    if not names:
        raise CheckpointError(f"{root.name}: no *.safetensors files (kvplan reads safetensors only)")
    tensors = []
    for name in names:
        if not (root / name).is_file():
            raise CheckpointError(f"{root.name}: shard {name} named by the index is missing")
        try:
            tensors.extend(read_local_header(check(root / name)))
        except CheckpointError as exc:  # name the folder too: "ck/model-00002-of-00004.safetensors: ..."
            raise CheckpointError(f"{root.name}/{exc}" if str(exc).startswith(name) else str(exc)) from None
    return Checkpoint(str(root), tensors, len(names), [f"{counted(len(names), 'safetensors file')}, headers only"])


# -------------------------------------------------------------------------------------------- categories

def layer_index(name: str) -> int | None:
    m = LAYER.search(name)
    return int(m[1]) if m else None


def categorize(name: str, num_layers: int | None = None) -> str:
    """kvplan's category of one tensor name, or "vision" / "audio" / "mtp" (not in kvplan's spec).

    ``num_layers`` (config num_hidden_layers): a decoder layer index at or past it is an MTP layer
    (DeepSeek-V3 ships its nextn layer as model.layers.61 of 61)."""
    if VISION.search(name):
        return "vision"
    if AUDIO.search(name):
        return "audio"
    if MTP.search(name):
        return "mtp"
    i = layer_index(name)
    if i is not None and num_layers is not None and i >= num_layers:
        return "mtp"
    leaf = name.rsplit(".", 2)
    module = leaf[-2] if len(leaf) >= 2 else name
    if module in ("lm_head", "embed_out") or name.startswith("lm_head."):
        return "lm_head"
    if i is None:
        if module in VOCAB or "embed" in module or module == "wpe":
            return "embeddings"
        if "norm" in module or module in ("ln_f",):
            return "norms"
        return "other"
    if ".experts." in name and ".shared_expert" not in name:
        return "experts"
    if module in ("gate", "router") or name.endswith(".mlp.gate.weight") or "e_score_correction" in name:
        return "router"
    if any(k in name for k in (".self_attn.", ".attn.", ".attention.", ".linear_attn.", ".mixer.")):
        return "attention"  # q_norm / k_norm included, as kvplan's spec counts them
    if "norm" in module or module.startswith("ln_"):
        return "norms"
    if any(k in name for k in (".mlp.", ".feed_forward.", ".ffn.", ".shared_expert")):
        return "mlp"
    return "other"


# ---------------------------------------------------------------------------------------- bytes per rank

@dataclass
class RankWeights:
    """Weight bytes on the busiest rank of one stage, from the checkpoint headers."""

    weights_bytes: int
    basis: str
    by_category: dict[str, int]
    left_out: dict[str, int]
    replicated_unmapped: list[str]
    notes: list[str]
    # "cast from F32 to bf16 as vLLM loads it" when float tensors were counted in the served dtype, else ""
    cast: str = ""


def _module(name: str) -> str:
    parts = name.split(".")
    return parts[-2] if len(parts) >= 2 else name


def _shard_of(t: TensorInfo, spec_shards: dict[str, str]) -> str:
    """column / row / vocab / replicated / unmapped for one tensor: the spec's rule for its module name,
    else vLLM's rule for the well-known names (COLUMN, ROW, VOCAB), else unmapped."""
    m = _module(t.name)
    leaf = t.name.rsplit(".", 1)[-1]
    if leaf in spec_shards and leaf not in ("weight", "bias"):  # a parameter on the module itself (sinks)
        m = leaf
    if m in spec_shards:
        s = spec_shards[m]
        return "column" if s == "expert" and m in COLUMN else "row" if s == "expert" else s
    if m in VOCAB:
        return "vocab"
    if m in COLUMN:
        return "column"
    if m in ROW:
        return "row"
    if "norm" in m or m in ("gate", "router") or t.numel <= 1:
        return "replicated"
    return "unmapped"


def _split(t: TensorInfo, rule: str, ranks: int, kv_heads: int | None, module: str | None = None,
           transposed: bool | None = None) -> int:
    """Bytes of tensor ``t`` on the busiest of ``ranks`` under ``rule`` (cdiv splits: rank 0 is busiest).
    ``module`` / ``transposed``: _module(t.name) / TRANSPOSED.search(t.name), when the caller has them."""
    if ranks == 1 or rule in ("replicated", "unmapped") or t.numel <= 1 or not t.shape:
        return t.nbytes
    shape = list(t.shape)
    transposed = bool(TRANSPOSED.search(t.name)) if transposed is None else transposed
    if rule == "vocab":
        shape[0] = cdiv(cdiv(shape[0], VOCAB_PADDING) * VOCAB_PADDING, ranks)
    elif rule == "column":
        axis = len(shape) - 1 if transposed else 0
        if (module or _module(t.name)) in ("k_proj", "v_proj") and kv_heads and shape[axis] % kv_heads == 0:
            shape[axis] = heads_per_rank(kv_heads, ranks) * (shape[axis] // kv_heads)
        else:
            shape[axis] = cdiv(shape[axis], ranks)
    elif rule == "row":
        if len(shape) == 1 and not t.name.endswith("g_idx"):
            return t.nbytes  # a row-parallel layer's bias is whole on every rank
        axis = 0 if transposed or len(shape) == 1 else 1
        shape[axis] = cdiv(shape[axis], ranks)
    n = 1
    for d in shape:
        n *= d
    return cdiv(n * DTYPE_BITS[t.dtype], 8)


@dataclass(frozen=True)
class _Row:
    """One tensor as rank_bytes reads it, whatever the layout."""

    t: TensorInfo
    cat: str
    layer: int | None
    expert: int | None  # the N of ".experts.N." (per-expert tensors), else None
    module: str
    rule: str  # _shard_of
    transposed: bool


def is_quantized(ckpt: Checkpoint, spec) -> bool:
    """Whether ``ckpt`` loads as saved (no cast): the config names a quantization, or the checkpoint holds fp8 / fp4 /
    int8 / uint8 tensors, quantization scales or AWQ / GPTQ packed tensors."""
    return bool(spec.quantization) or any(
        t.dtype in QUANTIZED_DTYPES or SCALE.search(t.name) or TRANSPOSED.search(t.name) for t in ckpt.tensors)


def _cast(t: TensorInfo, to: str | None) -> TensorInfo:
    """``t`` as the loader holds it: a float tensor in the served dtype ``to`` (a safetensors name), else as saved."""
    if to is None or t.dtype == to or t.dtype not in FLOAT_DTYPES or KEEP_FLOAT32.search(t.name):
        return t
    return TensorInfo(t.name, to, t.shape, t.file)


def _prepare(ckpt: Checkpoint, spec, to: str | None = None) -> tuple[list[_Row], dict[int, int], bool, int]:
    """(rows, experts per layer, whether the checkpoint has an lm_head, fused expert tensors) for ``spec``: the
    name matching of every tensor, done once per checkpoint and spec (regexes over ~94,000 tensor names of a
    DeepSeek-V3 checkpoint took 5 s a layout; the per-layout loop is arithmetic only)."""
    hit = ckpt._prepared.get((id(spec), to))
    if hit is not None and hit[0] is spec:
        return hit[1]
    n_layers = spec.num_hidden_layers
    spec_shards: dict[str, str] = {}
    for layer in {id(x): x for x in spec.layers}.values():
        for cat in ("attention", "mlp", "router", "norms", "other"):
            for c in getattr(layer, cat):
                spec_shards.setdefault(c.name, c.shard)
        if layer.experts is not None:
            for c in layer.experts.linears:
                spec_shards.setdefault(c.name, "expert")
    for c in (*spec.embeddings, *spec.lm_head, *spec.final_norm, *spec.other):
        spec_shards.setdefault(c.name, c.shard)
    rows: list[_Row] = []
    expert_counts: dict[int, int] = {}
    fused = 0
    for t in ckpt.tensors:
        m = EXPERT.search(t.name)
        i = layer_index(t.name)
        cat = categorize(t.name, n_layers)
        if m:
            expert_counts[i or 0] = max(expert_counts.get(i or 0, 0), int(m[1]) + 1)
        elif cat == "experts" and len(t.shape) >= 3:
            fused += 1
        rows.append(_Row(_cast(t, to), cat, i, int(m[1]) if m else None, _module(t.name), _shard_of(t, spec_shards),
                         bool(TRANSPOSED.search(t.name))))
    out = (rows, expert_counts, any(r.cat == "lm_head" for r in rows), fused)
    ckpt._prepared[(id(spec), to)] = (spec, out)
    return out


def rank_bytes(ckpt: Checkpoint, spec, layout: Layout | None = None, stage: int = 0, *, include_vision: bool = True,
               include_mtp: bool = False, served_dtype: str | None = None, loader: str = "vLLM") -> RankWeights:
    """Weights as loaded on the busiest rank of pipeline stage ``stage``, from the headers.

    What the engine loads: every tensor but MTP layers (vLLM loads them only with an MTP speculative
    config: ``include_mtp``); a vision / audio tower is loaded for a multimodal checkpoint
    (``include_vision``). Split: each tensor by its module's shard rule in the spec (kvplan.parallel),
    so TP splits columns / rows / the 64-padded vocabulary, KV projections keep max(1, kv/tp) heads,
    experts split over tp x dp (or whole, cdiv(E, tp x dp) on the busiest rank, with EP). Tensors
    whose module the spec does not name and vLLM's usual names do not cover are counted whole on
    every rank (listed in ``replicated_unmapped``); vision towers are counted whole too.

    ``served_dtype`` ("bf16" / "fp16" / "fp32", kvplan.plan.served_dtype; None: as saved): the dtype ``loader``
    creates the parameters in; an unquantized checkpoint's float tensors are counted in it (the module docstring),
    numel x 2 B for bf16 / fp16, x 4 B for fp32, and ``cast`` says so.
    Worked number: the tiny Llama of tests/test_checkpoint.py at TP=2; tests/test_checkpoint_dtype.py's fp32 one,
    219,776 B as saved, 109,888 B served in bf16.
    """
    layout = Layout() if layout is None else layout
    if not isinstance(layout, Layout) or not 0 <= stage < layout.pp:
        raise PlanInputError("pipeline_parallel_size", f"stage {stage} is not a stage of pp={layout.pp}")
    if served_dtype is not None and served_dtype not in SERVED_DTYPE:
        raise PlanInputError("served_dtype", f"{served_dtype!r} is not a float dtype; allowed: "
                             f"{', '.join(SERVED_DTYPE)}")
    to = None
    if served_dtype is not None:
        key = ("quantized", id(spec))
        hit = ckpt._prepared.get(key)
        if hit is None or hit[0] is not spec:
            hit = ckpt._prepared[key] = (spec, is_quantized(ckpt, spec))
        to = None if hit[1] else SERVED_DTYPE[served_dtype]
    rows, expert_counts, has_head, fused = _prepare(ckpt, spec, to)
    parts = pp_partition(spec.num_hidden_layers, layout.pp)
    start = sum(parts[:stage])
    first, last = stage == 0, stage == layout.pp - 1
    moe_ranks = layout.tp * layout.dp
    kv_heads = spec.num_key_value_heads
    by_cat: dict[str, int] = {}
    left: dict[str, int] = {}
    unmapped: list[str] = []
    for r in rows:
        t, cat, i = r.t, r.cat, r.layer
        if (cat == "mtp" and not include_mtp) or (cat in ("vision", "audio") and not include_vision):
            left[cat] = left.get(cat, 0) + t.nbytes
            continue
        if cat == "mtp":
            on_stage = last
        elif cat in ("vision", "audio", "embeddings"):
            on_stage = first
        elif cat == "lm_head" or (i is None and cat == "norms"):
            on_stage = last
        elif i is not None:
            on_stage = start <= i < start + parts[stage]
        else:
            on_stage = first
        copies = 1
        if cat == "embeddings" and not has_head and layout.pp > 1 and last and r.module in VOCAB:
            copies = 2 if first else 1  # a tied lm_head: a second copy on the last stage
            on_stage = True
        if not on_stage:
            continue
        if cat in ("vision", "audio"):
            b = t.nbytes
        elif cat == "experts":
            if layout.ep and r.expert is not None:
                total_e = expert_counts.get(i or 0, 1)
                b = t.nbytes if r.expert < cdiv(total_e, moe_ranks) else 0
            elif layout.ep and t.shape:  # fused [E, ...] tensor: cdiv(E, ranks) experts of it
                b = cdiv(t.nbytes * cdiv(t.shape[0], moe_ranks), t.shape[0])
            elif r.expert is None and t.name.endswith("_bias") and len(t.shape) == 2:  # fused [E, out] bias (gpt-oss)
                base = t.name.rsplit(".", 1)[-1].removesuffix("_bias")
                b = t.nbytes if base in ROW else cdiv(t.shape[1], moe_ranks) * t.shape[0] * DTYPE_BITS[t.dtype] // 8
            else:
                b = _split(t, r.rule, moe_ranks, None, r.module, r.transposed) \
                    if r.expert is not None or len(t.shape) < 3 else cdiv(t.nbytes, moe_ranks)
        else:
            if r.rule == "unmapped":
                unmapped.append(t.name)
            b = _split(t, r.rule, layout.tp, kv_heads, r.module, r.transposed) * copies
        by_cat[cat] = by_cat.get(cat, 0) + b
    notes = [f"{len(ckpt.tensors):,} tensors in {counted(ckpt.files, 'file')}, sizes from the safetensors headers"]
    if left.get("mtp"):
        notes.append(f"MTP (nextn) layers left out: {left['mtp']:,} B (vLLM loads them only with an MTP "
                     "speculative config)")
    if by_cat.get("vision"):
        notes.append(f"vision tower: {by_cat['vision']:,} B, loaded by vLLM for multimodal checkpoints, counted "
                     "whole on every rank (kvplan's spec has no vision tower)")
    if unmapped:
        notes.append(f"{counted(len(unmapped), 'tensor')} of modules the spec does not name, counted whole on every rank")
    if fused and moe_ranks > 1 and not layout.ep:
        notes.append(f"{counted(fused, 'fused expert tensor')} split evenly over {moe_ranks} ranks (cdiv of the bytes)")
    cast = ""
    if to is not None:
        saved = sorted({t.dtype for t in ckpt.tensors if _cast(t, to) is not t}, key=FLOAT_DTYPES.index)
        if saved:
            cast = f"cast from {', '.join(saved)} to {served_dtype} as {loader} loads it"
            notes.append(f"{cast}: float tensors counted at {DTYPE_BITS[to] // 8} B an element, not as saved")
    return RankWeights(sum(by_cat.values()), "checkpoint headers", by_cat, left, unmapped, notes, cast)


def compare_rows(ckpt: Checkpoint, spec, weight_format: str | None = None) -> list[dict]:
    """Per category: checkpoint bytes vs kvplan's computed ``weight_bytes`` for the format, and why they differ."""
    from kvplan.weights import weight_bytes

    computed = weight_bytes(spec, weight_format).components
    found = ckpt.bytes_by_category(spec.num_hidden_layers)
    scales: dict[str, int] = {}
    for t in ckpt.tensors:
        if SCALE.search(t.name):
            c = categorize(t.name, spec.num_hidden_layers)
            scales[c] = scales.get(c, 0) + t.nbytes
    why = {"vision": "vision tower: loaded by vLLM for multimodal checkpoints; not in kvplan's spec",
           "audio": "audio tower: not in kvplan's spec", "mtp": "MTP (nextn) layers: loaded only for MTP speculation"}
    rows = []
    for cat in sorted(set(computed) | set(found), key=lambda c: (c not in computed, c)):
        a, b = found.get(cat, 0), computed.get(cat)
        note = why.get(cat, "")
        if scales.get(cat):
            note = f"of which quantization scales {scales[cat]:,} B"
        rows.append({"category": cat, "checkpoint_bytes": a, "kvplan_bytes": b,
                         "difference": None if b is None else a - b, "note": note})
    return rows


def busiest_rank(ckpt: Checkpoint, spec, layout: Layout, **options) -> RankWeights:
    """``rank_bytes`` of the pipeline stage whose rank holds the most checkpoint bytes: the one figure a plan
    budgets for every stage (as for a typed-in "Model loading took")."""
    return max((rank_bytes(ckpt, spec, layout, s, **options) for s in range(layout.pp)), key=lambda r: r.weights_bytes)


def load_options(engine, spec=None) -> dict:
    """What of a checkpoint the engine loads, as ``rank_bytes`` options, from an EngineConfig: the vision / audio
    towers unless ``--language-model-only`` (or the custom engine, which kvplan plans without towers: kvplan.plan's
    ``loads_tower``), the MTP layers only with ``--speculative-config`` method mtp (vLLM's drafter loads them); with
    ``spec``, also the dtype the engine creates its parameters in (kvplan.plan.served_dtype, the plan's own
    resolution of ``--dtype``) and the loader's name for the notes."""
    out = {"include_vision": engine.engine != "custom" and not engine.language_model_only,
           "include_mtp": engine.speculative_method == "mtp"}
    if spec is not None:
        from kvplan.plan import served_dtype
        from kvplan.vllm_mm import loads_tower

        # --limit-mm-per-prompt with the tower's modalities at 0 skips it too (a config without modeled towers: as is)
        out["include_vision"] = out["include_vision"] and (not spec.towers or loads_tower(spec, engine))

        out |= {"served_dtype": served_dtype(spec, engine),
                "loader": {"vllm": "vLLM", "sglang": "SGLang"}.get(engine.engine, engine.engine)}
    return out


def engine_with_checkpoint_weights(engine, ckpt: Checkpoint, spec, layout: Layout | None = None, **options):
    """``engine`` (an EngineConfig) with ``weights_bytes`` = the busiest rank's checkpoint bytes (``busiest_rank``,
    with ``load_options(engine)`` unless ``options`` say otherwise), basis "checkpoint headers": the plan then
    budgets the weights as the engine loads them."""
    busiest = busiest_rank(ckpt, spec, Layout() if layout is None else layout,
                           **(load_options(engine, spec) | options))
    return engine.model_copy(update={"weights_bytes": busiest.weights_bytes, "weights_basis": "checkpoint headers",
                                     "weights_source": source_text(ckpt, busiest)})


def source_text(ckpt: Checkpoint, rank: RankWeights | None = None) -> str:
    """'acme/ckpt: 21 tensors in 2 files' (what the weights term cites), '...; cast from F32 to bf16 as vLLM loads
    it' when ``rank`` (its RankWeights) counted float tensors in the served dtype."""
    cast = f"; {rank.cast}" if rank is not None and rank.cast else ""
    return f"{ckpt.source}: {len(ckpt.tensors):,} tensors in {counted(ckpt.files, 'file')}{cast}"


def shape_mismatches(ckpt: Checkpoint, spec) -> list[str]:
    """Where the checkpoint's tensors contradict the model it is planned with (another model's checkpoint would be
    split with the wrong shard rules, and its layers past the spec's count taken for MTP layers and left out):
    the embedding's width against hidden_size and fewer decoder layers than num_hidden_layers. A float dtype other
    than the served one is no mismatch: rank_bytes counts an unquantized checkpoint's float tensors at the served
    dtype, as vLLM copies each into a parameter of the model dtype (and says "cast from F32 to bf16")."""
    out = []
    embed = next((t for t in ckpt.tensors if categorize(t.name, spec.num_hidden_layers) == "embeddings"
                  and _module(t.name) in VOCAB and len(t.shape) == 2), None)
    if embed is not None and embed.shape[1] != spec.hidden_size and not TRANSPOSED.search(embed.name):
        out.append(f"its embedding {embed.name} is {list(embed.shape)}, where {spec.name} has hidden_size "
                   f"{spec.hidden_size:,}")
    layers = {i for t in ckpt.tensors if categorize(t.name) not in ("vision", "audio", "mtp")
              and (i := layer_index(t.name)) is not None}
    if layers and max(layers) + 1 < spec.num_hidden_layers:
        out.append(f"it holds {max(layers) + 1} decoder layers, where {spec.name} has {spec.num_hidden_layers}")
    return out
