"""KV caches for the reference decoder: none, static (preallocated), paged (block pool + tables).

All three answer ``update(layer, k, v, step) -> (k_all, v_all, kpos)``: store the new tokens' K/V
and return every key the new queries may need, ``k_all [B, nkv, S, d]``, ``v_all [B, nkv, S, dv]``,
with the absolute position of each key (``kpos [S]``, -1 for an empty slot). MLA layers pass their
latent ``[B, T, 1, r + p]`` as ``k`` and ``None`` as ``v`` and get ``[B, 1, S, r + p]`` back.

Static cache, per layer kind (the "vllm" convention of ``kvplan.layers``):
- full attention: K ``[B, nkv, max_len, d]`` and V ``[B, nkv, max_len, dv]``; in use: T tokens.
- sliding window W / chunked local C: a ring of min(max_len, W or C) slots, slot = position mod W.
  In use: the slots holding a token the layer still needs, i.e. min(T, W) for sliding and the
  current chunk's ((T - 1) mod C) + 1 tokens for chunked layers.
- MLA: the latent ``[B, 1, max_len, kv_lora_rank + qk_rope_head_dim]``: one copy, no heads.
- Mamba-2 / gated DeltaNet: conv state ``[B, conv_dim, K - 1]`` and SSM / recurrent state in the
  model dtype (vLLM's layout); fixed size, so always in use.

Paged cache: every attention layer has a pool ``[num_blocks * block_size, nkv, d]`` (MLA:
``[num_blocks * block_size, r + p]``) and all layers share one block table per sequence (one KV
cache group, as vLLM without its hybrid allocator). Blocks come from ``blocks.BlockAllocator`` on
demand; a shared prompt prefix's full blocks are stored once and reference-counted. Sliding-window
layers keep all their blocks here (freeing blocks that leave the window is not modelled), so the
paged figures are ``page_sequences`` slots x bytes per token over all layers, windows ignored.
Reads gather one layer's blocks into a contiguous ``[B, nkv, S, d]`` copy per call (a paged kernel
reads them in place); that copy is transient workspace, counted in the workspace estimate.
"""

import torch

from kvplan.layers import ATTENTION_KINDS
from kvplan.spec import ModelSpec
from kvplan.units import cdiv
from kvplan.validate.blocks import BlockAllocator, BlockTables
from kvplan.validate.decoder import Step
from kvplan.validate.estimate import static_slots

RING_KINDS = ("sliding_attention", "chunked_attention")


class NoCache:
    """The full forward: attend over this call's own K/V only."""

    def update(self, i, k, v, step: Step):
        if v is None:
            return k.transpose(1, 2), None, step.qpos
        return k.transpose(1, 2), v.transpose(1, 2), step.qpos


def _state_tensors(cache, batch: int, dtype, device) -> list[torch.Tensor]:
    """Recurrent state buffers, vLLM layout: conv [B, conv_dim, K - 1] + SSM/recurrent state, the
    latter in fp32 where the config names float32 for it (``vllm_ssm_dtype_bytes``, as vLLM does)."""
    ssm_dtype = torch.float32 if getattr(cache, "vllm_ssm_dtype_bytes", None) == 4 else dtype
    if cache.kind == "mamba":
        return [torch.zeros(batch, cache.conv_dim, cache.conv_kernel - 1, dtype=dtype, device=device),
                torch.zeros(batch, cache.num_heads, cache.head_dim, cache.state_size, dtype=ssm_dtype, device=device)]
    if cache.kind == "linear_attention":
        return [torch.zeros(batch, cache.conv_dim, cache.conv_kernel - 1, dtype=dtype, device=device),
                torch.zeros(batch, cache.num_value_heads, cache.key_head_dim, cache.value_head_dim,
                            dtype=ssm_dtype, device=device)]
    if cache.kind == "short_conv":
        return [torch.zeros(batch, cache.conv_dim, cache.conv_kernel - 1, dtype=dtype, device=device)]
    return []


class StaticCache:
    """Preallocated per layer for ``batch`` sequences of up to ``max_len`` tokens (see module doc)."""

    def __init__(self, spec: ModelSpec, batch: int, max_len: int, dtype, device):
        self.batch, self.max_len = batch, max_len
        self.kinds = [layer.cache.kind for layer in spec.layers]
        self.specs = [layer.cache for layer in spec.layers]
        self.k: list[torch.Tensor | None] = []
        self.v: list[torch.Tensor | None] = []
        self.slot_pos: list[torch.Tensor | None] = []  # ring layers: position held by each slot
        self.states: list[list[torch.Tensor]] = []
        self.end = [0] * len(spec.layers)
        self.positions = torch.arange(max_len, device=device)
        for c in self.specs:
            k = v = ring = None
            slots = static_slots(c, max_len)
            if c.kind == "mla":
                k = torch.zeros(batch, 1, slots, c.latent_dim, dtype=dtype, device=device)  # [B, 1, max_len, r+p]
            elif c.kind in ATTENTION_KINDS:
                k = torch.zeros(batch, c.num_key_value_heads, slots, c.head_dim, dtype=dtype, device=device)
                v = torch.zeros(batch, c.num_key_value_heads, slots, c.v_head_dim, dtype=dtype, device=device)
                if c.kind in RING_KINDS:
                    ring = torch.full((slots,), -1, dtype=torch.long, device=device)
            self.k.append(k)
            self.v.append(v)
            self.slot_pos.append(ring)
            self.states.append(_state_tensors(c, batch, dtype, device))

    def tensors(self) -> list[torch.Tensor]:
        out = [t for t in self.k + self.v + self.slot_pos if t is not None]
        return out + [t for s in self.states for t in s]

    def update(self, i, k, v, step: Step):
        s, e = step.start, step.start + step.T
        if e > self.max_len:
            raise IndexError(f"position {e - 1} is past the static cache's {self.max_len} slots")
        kc, vc, ring = self.k[i], self.v[i], self.slot_pos[i]
        self.end[i] = e
        if ring is None:  # full attention / MLA: slot = position
            kc[:, :, s:e] = k.transpose(1, 2)
            if v is None:
                return kc[:, :, :e], None, self.positions[:e]
            vc[:, :, s:e] = v.transpose(1, 2)
            return kc[:, :, :e], vc[:, :, :e], self.positions[:e]
        slots = ring.shape[0]
        if step.T == 1:  # decode: write first, then the ring is exactly what the query may see
            slot = s % slots
            kc[:, :, slot] = k[:, 0]
            vc[:, :, slot] = v[:, 0]
            ring[slot] = s
            return kc, vc, ring
        # Several tokens: attend over ring + new (a transient copy), then keep the last `slots` of them.
        k_all = torch.cat((kc, k.transpose(1, 2)), dim=2)
        v_all = torch.cat((vc, v.transpose(1, 2)), dim=2)
        kpos = torch.cat((ring, step.qpos))
        keep = min(step.T, slots)
        idx = step.qpos[-keep:] % slots
        kc[:, :, idx] = k[:, -keep:].transpose(1, 2)
        vc[:, :, idx] = v[:, -keep:].transpose(1, 2)
        ring[idx] = step.qpos[-keep:]
        return k_all, v_all, kpos

    # -------------------------------------------------------------- measurement

    def allocated_bytes(self) -> int:
        """Bytes of K/V/latent/state tensors (ring position indices are bookkeeping, not counted)."""
        return sum(t.nbytes for t in self.k + self.v if t is not None) + sum(t.nbytes for s in self.states for t in s)

    def held_tokens(self, i: int) -> int:
        """Tokens per sequence layer ``i`` holds and still needs (read from its slots)."""
        c, ring, end = self.specs[i], self.slot_pos[i], self.end[i]
        if c.kind not in ATTENTION_KINDS:
            return 0
        if ring is None:
            return end
        live = ring >= 0
        if c.kind == "chunked_attention" and end > 0:
            chunk = c.attention_chunk_size
            live &= torch.div(ring, chunk, rounding_mode="floor") == (end - 1) // chunk
        return int(live.sum())

    def layer_in_use_bytes(self, i: int) -> int:
        """Held tokens x the bytes one token occupies in this layer's tensors (+ fixed state)."""
        kc, vc = self.k[i], self.v[i]
        state = sum(t.nbytes for t in self.states[i])
        if kc is None:
            return state
        slots = kc.shape[2]
        per_slot = (kc.nbytes + (vc.nbytes if vc is not None else 0)) // slots  # all B sequences
        return self.held_tokens(i) * per_slot + state

    def in_use_by_kind(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for i, kind in enumerate(self.kinds):
            out[kind] = out.get(kind, 0) + self.layer_in_use_bytes(i)
        return out


class PagedCache:
    """A block pool per layer and one block table per sequence (see module doc)."""

    def __init__(self, spec: ModelSpec, batch: int, num_blocks: int, block_size: int, dtype, device,
                 shared_prefix: int = 0):
        self.batch, self.block_size, self.num_blocks, self.device = batch, block_size, num_blocks, device
        self.kinds = [layer.cache.kind for layer in spec.layers]
        self.alloc = BlockAllocator(num_blocks, block_size)
        self.tables = BlockTables(self.alloc, batch, shared_prefix)
        slots = num_blocks * block_size
        self.k: list[torch.Tensor | None] = []
        self.v: list[torch.Tensor | None] = []
        self.states: list[list[torch.Tensor]] = []
        for layer in spec.layers:
            c = layer.cache
            k = v = None
            if c.kind == "mla":
                k = torch.zeros(slots, c.latent_dim, dtype=dtype, device=device)  # [blocks*bs, r+p]
            elif c.kind in ATTENTION_KINDS:
                k = torch.zeros(slots, c.num_key_value_heads, c.head_dim, dtype=dtype, device=device)
                v = torch.zeros(slots, c.num_key_value_heads, c.v_head_dim, dtype=dtype, device=device)
            self.k.append(k)
            self.v.append(v)
            self.states.append(_state_tensors(c, batch, dtype, device))
        self.positions = torch.arange(0, device=device)
        self._write = self._read = None

    def tensors(self) -> list[torch.Tensor]:
        return [t for t in self.k + self.v if t is not None] + [t for s in self.states for t in s]

    def begin(self, step: Step) -> None:
        """Before a forward call: grow every sequence to start + T tokens (allocating blocks on demand)
        and precompute the slots this call writes and the table it reads."""
        e = step.start + step.T
        rows, slots = [], []
        for seq in range(self.batch):
            new = self.tables.grow(seq, e)
            skipped = step.T - len(new)  # shared-prefix tokens another sequence writes
            rows.extend(seq * step.T + skipped + j for j in range(len(new)))
            slots.extend(new)
        dev = self.device
        self._rows = torch.tensor(rows, dtype=torch.long, device=dev)  # rows of the [B*T] new tokens to store
        self._write = torch.tensor(slots, dtype=torch.long, device=dev)  # their flat slot numbers
        n_blocks = cdiv(e, self.block_size)
        table = [t[:n_blocks] for t in self.tables.tables]
        self._read = torch.tensor(table, dtype=torch.long, device=dev)  # [B, n_blocks]
        self._end = e
        if self.positions.shape[0] < e:
            self.positions = torch.arange(max(e, 2 * self.positions.shape[0]), device=dev)

    def _gather(self, pool: torch.Tensor) -> torch.Tensor:
        """[blocks*bs, ...] -> [B, S, ...]: the sequence's blocks in table order, cut at S tokens."""
        B, nb = self._read.shape
        blocks = pool.view(self.num_blocks, self.block_size, *pool.shape[1:])[self._read]  # [B, nb, bs, ...]
        return blocks.reshape(B, nb * self.block_size, *pool.shape[1:])[:, :self._end]

    def update(self, i, k, v, step: Step):
        B, T = k.shape[0], k.shape[1]
        kp, vp = self.k[i], self.v[i]
        kpos = self.positions[:self._end]
        if v is None:  # MLA latent [B, T, 1, r+p]
            kp[self._write] = k.reshape(B * T, -1)[self._rows]
            return self._gather(kp).unsqueeze(1), None, kpos  # [B, 1, S, r+p]
        kp[self._write] = k.reshape(B * T, *k.shape[2:])[self._rows]
        vp[self._write] = v.reshape(B * T, *v.shape[2:])[self._rows]
        return self._gather(kp).transpose(1, 2), self._gather(vp).transpose(1, 2), kpos  # [B, nkv, S, d]

    # -------------------------------------------------------------- measurement

    def pool_bytes(self) -> int:
        return sum(t.nbytes for t in self.tensors())

    def block_bytes(self) -> int:
        """Bytes one block occupies across every layer's pool (read from the pools)."""
        return sum(t.nbytes for t in self.k + self.v if t is not None) // self.num_blocks if self.num_blocks else 0

    def state_bytes(self) -> int:
        return sum(t.nbytes for s in self.states for t in s)

    def in_use_bytes(self) -> int:
        return self.alloc.allocated_blocks * self.block_bytes() + self.state_bytes()

    def release(self) -> None:
        """End of the requests: every sequence gives its blocks back."""
        self.tables.release_all()
