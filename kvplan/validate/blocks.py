"""Paged-cache bookkeeping: a block pool's allocator and per-sequence block tables. No torch.

This is the part of a paged KV cache that decides *where* tokens go; ``caches.PagedCache`` owns
the tensors and asks this for slot numbers. Its counts are read back from its own state (reference
counts, fill levels), then compared with the planner's ``kvplan.paging.page_sequences``.

- Blocks are handed out on demand, one when a sequence's next token starts a new block.
- A prompt prefix shared by every sequence is stored once: its *full* blocks are allocated once and
  referenced by each sequence's table (reference count = number of sequences). A partial block is
  never shared (vLLM hashes full blocks only), so each sequence writes its own copy of the tail.
- Releasing a sequence decrements its blocks' counts; a block returns to the free list at zero.
"""

from collections import deque
from collections.abc import Sequence

from kvplan.errors import PlanInputError
from kvplan.units import cdiv


class PoolExhausted(PlanInputError):
    """The pool has no free block left (the run sized it too small)."""


class BlockAllocator:
    """``num_blocks`` physical blocks of ``block_size`` slots: a free list and reference counts."""

    def __init__(self, num_blocks: int, block_size: int):
        if num_blocks < 0 or block_size < 1:
            raise PlanInputError("block_size", f"need num_blocks >= 0 and block_size >= 1, "
                                               f"got {num_blocks}, {block_size}")
        self.num_blocks = num_blocks
        self.block_size = block_size
        self.free: deque[int] = deque(range(num_blocks))
        self.refcount = [0] * num_blocks
        self.filled = [0] * num_blocks  # slots written in each block (a shared block counts once)

    def allocate(self) -> int:
        if not self.free:
            raise PoolExhausted("blocks", f"the pool of {self.num_blocks} blocks is exhausted")
        block = self.free.popleft()
        self.refcount[block] = 1
        return block

    def share(self, block: int) -> None:
        assert self.refcount[block] > 0, "sharing a free block"
        self.refcount[block] += 1

    def release(self, block: int) -> None:
        assert self.refcount[block] > 0, "double free"
        self.refcount[block] -= 1
        if self.refcount[block] == 0:
            self.filled[block] = 0
            self.free.append(block)

    # Counts, read from the allocator's state (the names of kvplan.paging.Paging).
    @property
    def allocated_blocks(self) -> int:
        return sum(1 for r in self.refcount if r > 0)

    @property
    def allocated_slots(self) -> int:
        return self.allocated_blocks * self.block_size

    @property
    def used_slots(self) -> int:
        return sum(f for f, r in zip(self.filled, self.refcount) if r > 0)

    @property
    def wasted_slots(self) -> int:
        return self.allocated_slots - self.used_slots

    @property
    def shared_blocks(self) -> int:
        return sum(1 for r in self.refcount if r > 1)

    def counts(self) -> dict[str, int]:
        return dict(allocated_blocks=self.allocated_blocks, allocated_slots=self.allocated_slots,
                    used_slots=self.used_slots, wasted_slots=self.wasted_slots, shared_blocks=self.shared_blocks)


class BlockTables:
    """One block table per sequence over a shared ``BlockAllocator``.

    ``grow(seq, length)`` makes sequence ``seq`` hold ``length`` tokens and returns the flat slot
    numbers (block * block_size + offset) of the new tokens it must write; tokens that live in a
    shared prefix block already written by another sequence are left out.
    """

    def __init__(self, allocator: BlockAllocator, num_sequences: int, shared_prefix: int = 0):
        self.alloc = allocator
        self.tables: list[list[int]] = [[] for _ in range(num_sequences)]
        self.lengths = [0] * num_sequences
        bs = allocator.block_size
        # Only full blocks are shared, and only when there is more than one sequence to share them.
        self.shared_full = shared_prefix // bs if num_sequences > 1 else 0
        self.shared_prefix = shared_prefix
        self._prefix_written = False
        if self.shared_full:
            blocks = [allocator.allocate() for _ in range(self.shared_full)]
            for table in self.tables:
                table.extend(blocks)
            for block in blocks:
                for _ in range(num_sequences - 1):
                    allocator.share(block)

    def grow(self, seq: int, length: int) -> list[int]:
        bs = self.alloc.block_size
        table = self.tables[seq]
        start = self.lengths[seq]
        if length < start:
            raise PlanInputError("lengths", f"sequence {seq} cannot shrink from {start} to {length}")
        while len(table) < cdiv(length, bs):
            table.append(self.alloc.allocate())
        slots = []
        shared_end = self.shared_full * bs
        for pos in range(start, length):
            block, offset = table[pos // bs], pos % bs
            if pos < shared_end and seq > 0:
                continue  # sequence 0 writes the shared prefix blocks for everyone
            slots.append(block * bs + offset)
            self.alloc.filled[block] = max(self.alloc.filled[block], offset + 1)
        self.lengths[seq] = length
        return slots

    def release(self, seq: int) -> None:
        for block in self.tables[seq]:
            self.alloc.release(block)
        self.tables[seq] = []
        self.lengths[seq] = 0

    def release_all(self) -> None:
        for seq in range(len(self.tables)):
            self.release(seq)


def simulate(lengths: Sequence[int], block_size: int, shared_prefix: int = 0) -> dict[str, int]:
    """Run the allocator over sequences of ``lengths`` (grown one token at a time) and return its counts.

    For the unequal-lengths check against ``page_sequences``: block 4, lengths 5, 3, 8 -> 5 blocks.
    """
    need = sum(cdiv(n, block_size) for n in lengths) + 1
    tables = BlockTables(BlockAllocator(need, block_size), len(lengths), shared_prefix)
    for step in range(1, max(lengths, default=0) + 1):
        for seq, n in enumerate(lengths):
            if step <= n:
                tables.grow(seq, step)
    return tables.alloc.counts()
