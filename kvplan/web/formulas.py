"""The budget's formulas as LaTeX, with the plan's own numbers substituted (for ``st.latex``).

Every number shown is read from the ``Plan`` (its terms, groups and rank results); the formulas are
the ones ``kvplan.plan`` documents. Pure functions: ``budget_formulas(plan)`` -> [(title, latex)],
``as_markdown`` -> one Markdown text with each formula as a display-math block.
"""

import re

from kvplan.engines import VLLM_PROFILES
from kvplan.plan import Plan, RankPlan
from kvplan.units import GiB


def _g(n: int | float) -> str:
    return f"{n / GiB:,.2f}".replace(",", "{,}") + r"\,\text{GiB}"


def _n(n: int | float) -> str:
    text = f"{n:,}" if isinstance(n, int) else f"{n:,.2f}"
    return text.replace(",", "{,}")


def _term(rank: RankPlan, prefix: str) -> int | None:
    return next((t.bytes for t in rank.terms if t.name.startswith(prefix)), None)


def tightest(plan: Plan) -> RankPlan:
    return min(plan.ranks, key=lambda r: r.num_blocks)


def unit(plan: Plan) -> str:
    """The pool's unit as the plan's engine names it: SGLang's pages of --page-size tokens, vLLM's blocks."""
    return "page" if plan.engine == "sglang" else "block"


def budget_formulas(plan: Plan) -> list[tuple[str, str]]:
    """The Budget's formulas, in the engine's words: an SGLang plan counts pages (num_pages, bytes/page, page size:
    its log's "page_size" and "#tokens"), a vLLM plan blocks (num_blocks, bytes/block, its num_gpu_blocks).
    Worked example: Llama-3.1-8B on one H100, SGLang 0.5.21: num_pages = floor(53,661,292,234 / 131,072) = 409,403."""
    rank = tightest(plan)
    out = [("KV pool on the tightest rank", _pool(plan, rank))]
    groups = plan.kv_groups
    u = unit(plan)
    if plan.engine == "sglang" and rank.kv_bytes_per_token * plan.block_size == rank.bytes_per_block:
        # SGLang's pool: one page holds page_size tokens of every layer (memory_pool.py sizes it per token)
        out.append(("Bytes per page", rf"\text{{bytes/page}} = \text{{bytes/token}} \times \text{{page size}}"
                    rf" = {_n(rank.kv_bytes_per_token)} \times {plan.block_size}"
                    rf" = {_n(rank.bytes_per_block)}\,\text{{B}}"))
    if groups and plan.engine != "sglang":
        size = groups[0].layers + groups[0].padding_layers
        page = max(g.page_bytes for g in groups)
        if size * page == rank.bytes_per_block:
            out.append(("Bytes per block", rf"\text{{bytes/block}} = \text{{layers per group}} \times \text{{largest page}}"
                        rf" = {size} \times {_n(page)}\,\text{{B}}"
                        rf" = {_n(rank.bytes_per_block)}\,\text{{B}}"))
        elif len(groups) != 1:
            # Groups whose page is already the sum over their layers (vLLM's packed DeepSeek-V4 pool,
            # kvplan.vllm_dsv4.dsv4_layout): one block is the largest group page (0.27+), or the release's own packing
            # rule before. "62 x 1,002,240 B = 1,002,240 B" (V4-Flash TP 8, 0.33) was false: 1,002,240 is the MLA
            # group's page, its 62 layers' pages summed, and the largest of the five groups' pages.
            largest = page == rank.bytes_per_block
            out.append((f"Bytes per block ({len(groups)} groups, each page the sum over its layers"
                        + ("" if largest else f"; largest {page:,} B") + ")",
                        (rf"\text{{bytes/block}} = \max_{{\text{{groups}}}} \sum_{{\text{{layers}}}} \text{{page}}"
                         if largest else r"\text{bytes/block} = \text{the release's packed block}")
                        + rf" = {_n(rank.bytes_per_block)}\,\text{{B}}"))
        else:
            # One group of layers whose pages differ (vLLM's UniformTypeKVCacheSpecs: a draft model's layers beside the
            # target's, GLM-5's DSA layers with and without an indexer key): the block is the sum of the layers' pages,
            # kvplan.plan._uniform_type_group. "96 x 16,384 B = 1,441,792 B" (Llama-3.1-70B TP 4 + Llama-3.2-1B) was
            # false: 80 x 16,384 + 16 x 8,192 = 1,441,792 = 90,112 B/token x 16 tokens.
            by_token = rank.kv_bytes_per_token * plan.block_size == rank.bytes_per_block
            out.append((f"Bytes per block (one group whose layers' pages differ, largest {page:,} B: their sum)",
                        rf"\text{{bytes/block}} = \sum_{{\text{{{size} layers}}}} \text{{page}}"
                        + (rf" = \text{{bytes/token}} \times \text{{block size}}"
                           rf" = {_n(rank.kv_bytes_per_token)} \times {plan.block_size}\,\text{{B}}" if by_token else "")
                        + rf" = {_n(rank.bytes_per_block)}\,\text{{B}}"))
    if plan.load_oom_rank is not None or rank.kv_pool_bytes <= 0:
        # no pool is sized: "floor(0 / 5,242,880) = 0" and "tokens = 0" read as a measured zero (Llama-3.1-70B on one
        # H100, whose weights do not even load); say what the engine does instead
        why = (r"\text{not reached: the weights of one GPU do not load}" if plan.load_oom_rank is not None else
               rf"\text{{pool}} = {_n(rank.kv_pool_bytes)}\,\text{{B}} \le 0")
        out.append((f"KV {u}s, concurrency and tokens: none (no KV pool is sized)",
                    why + rf"\;\Rightarrow\; \text{{no KV {u}s, no concurrency, no KV cache tokens}}"))
        return out + _bytes_per_token(groups, rank)
    out.append((f"KV {u}s", rf"\text{{num\_{u}s}} = \left\lfloor \frac{{\text{{pool}}}}{{\text{{bytes/{u}}}}}"
                rf"\right\rfloor = \left\lfloor \frac{{{_n(max(rank.kv_pool_bytes, 0))}}}{{{_n(rank.bytes_per_block)}}}"
                rf"\right\rfloor = {_n(rank.num_blocks)}"))
    out.append(_tokens_formula(plan))
    return out + _bytes_per_token(groups, rank)


def _bytes_per_token(groups, rank) -> list[tuple[str, str]]:
    """The 'KV bytes per token on a rank' formula (none for a rank without a per-token KV figure)."""
    out: list[tuple[str, str]] = []
    kinds = {g.kind for g in groups}
    if rank.kv_bytes_per_token and kinds and kinds <= {"mla", "mla_dsa"}:
        # MLA keeps one latent a token and layer, whole on every rank: "H_kv (d_k + d_v) b, H_kv = 1" read as one K and
        # one V head (DeepSeek-V3 on SGLang: 62 x (512 + 64) x 2 B = 71,424 B, no V at all)
        out.append(("KV bytes per token on a rank (MLA: one latent a token and layer, not split by TP)",
                    rf"\text{{bytes/token}} = \sum_{{\text{{layers}}}} (d_c + d_{{rope}})\, b"
                    + (r" + \text{indexer key}" if "mla_dsa" in kinds else "")
                    + rf" = {_n(rank.kv_bytes_per_token)}\,\text{{B}}"))
    elif rank.kv_bytes_per_token:
        out.append(("KV bytes per token on a rank",
                    rf"\text{{bytes/token}} = \sum_{{\text{{layers}}}} H_{{kv}} (d_k + d_v)\, b"
                    rf" = {_n(rank.kv_bytes_per_token)}\,\text{{B}}"
                    rf" \quad (H_{{kv}} = {rank.kv_heads}\ \text{{per rank}})"))
    return out


def tokens_rule(plan: Plan) -> str:
    """Which count the plan's 'KV cache tokens' is, as the engine logs it (the release lines differ):

    "concurrency": int(num_blocks / blocks per request x max_model_len) (vLLM 0.20.1+ and custom);
    "groups": num_blocks // KV groups x smallest block size x DCP (vLLM 0.10 - 0.20.0 _report_kv_cache_config);
    "blocks": num_blocks x block size (SGLang's pages, vLLM V0's 'num_gpu_blocks x block_size').
    Read off the plan's own numbers, so it always matches what the plan reports; e.g. 28,171 blocks of 8,192
    per request at 131,072 tokens -> int(28,171 / 8,192 x 131,072) = 450,736 (concurrency) = 28,171 x 16 (blocks)."""
    groups = plan.kv_groups
    profile = VLLM_PROFILES.get(plan.engine_version) if plan.engine == "vllm" else None
    if profile is not None and profile.engine_core == "V0":  # 'num_gpu_blocks x block_size' (vllm_v0.capacity)
        return "blocks"
    if plan.engine != "sglang" and plan.blocks_per_request and \
            plan.kv_cache_tokens == int(plan.num_blocks / plan.blocks_per_request * plan.max_model_len):
        return "concurrency"
    if plan.kv_cache_tokens == plan.num_blocks * plan.block_size:
        return "blocks"
    if groups:
        smallest = min(g.block_size or plan.block_size for g in groups)
        dcp = int(plan.layout.get("decode_context_parallel_size", 1))
        if plan.kv_cache_tokens == plan.num_blocks // len(groups) * smallest * dcp:
            return "groups"
    return "blocks"


TOKENS_WORDS = {"concurrency": "max concurrency x max_model_len (KV blocks / blocks per request x context)",
                "groups": "KV blocks / KV groups x block size",
                "blocks": "KV blocks x block size"}


def _tokens_formula(plan: Plan) -> tuple[str, str]:
    conc = _n(plan.max_concurrency)
    blocks, per_request, length = _n(plan.num_blocks), _n(plan.blocks_per_request), _n(plan.max_model_len)
    tokens = _n(plan.kv_cache_tokens)
    rule = tokens_rule(plan)
    if rule == "concurrency":
        return ("Concurrency and tokens", rf"\text{{concurrency}} = \frac{{\text{{num\_blocks}}}}"
                rf"{{\text{{blocks per request}}}} = \frac{{{blocks}}}{{{per_request}}} = {conc}\qquad"
                rf"\text{{tokens}} = \left\lfloor \frac{{{blocks}}}{{{per_request}}} \times {length} \right\rfloor"
                rf" = {tokens}")
    if rule == "groups":  # vLLM 0.10 - 0.20.0: tokens per group of the pool; concurrency still per request
        groups = plan.kv_groups
        smallest = min(g.block_size or plan.block_size for g in groups)
        dcp = int(plan.layout.get("decode_context_parallel_size", 1))
        times_dcp = rf" \times {dcp}" if dcp > 1 else ""
        return ("Concurrency and tokens", rf"\text{{concurrency}} = \frac{{\text{{num\_blocks}}}}"
                rf"{{\text{{blocks per request}}}} = \frac{{{blocks}}}{{{per_request}}} = {conc}\qquad"
                rf"\text{{tokens}} = \left\lfloor \frac{{{blocks}}}{{{len(groups)}\ \text{{groups}}}} \right\rfloor"
                rf" \times {_n(smallest)}{times_dcp} = {tokens}")
    u = unit(plan)  # SGLang's word: pages of --page-size tokens
    return ("Tokens and concurrency", rf"\text{{tokens}} = \text{{num\_{u}s}} \times \text{{{u} size}}"
            rf" = {blocks} \times {_n(plan.block_size)} = {tokens}\qquad"
            rf"\text{{concurrency}} = \frac{{\text{{tokens}}}}{{L}}"
            rf" = \frac{{{tokens}}}{{{length}}} = {conc}")


def _pool(plan: Plan, rank: RankPlan) -> str:
    device = rank.device_bytes
    if plan.engine == "custom":
        runtime, headroom = _term(rank, "runtime workspace") or 0, _term(rank, "headroom") or 0
        return (rf"\begin{{aligned}}\text{{pool}} &= \text{{device}} - \text{{weights}} - \text{{runtime}}"
                rf" - \text{{headroom}}\\ &= {_g(device)} - {_g(rank.weights_bytes)} - {_g(runtime)} - {_g(headroom)}"
                rf" = {_g(rank.kv_pool_bytes)}\end{{aligned}}")
    if plan.engine == "sglang":
        context = _term(rank, "CUDA context") or 0
        left = _term(rank, "left free") or 0
        overhead = _term(rank, "loading overhead") or 0  # kvplan.sglang: in SGLang's "mem usage" beside the weights
        # a hybrid's MambaPool comes out of the rest before the KV pool (kvplan.sglang.mamba_pool)
        mamba, mm = _term(rank, "Mamba state pool"), _term(rank, "multimodal embedding-cache reserve")
        subtracted = [("left free", left), ("weights", rank.weights_bytes), ("overhead", overhead)]
        subtracted += ([("mm reserve", mm)] if mm else []) + ([("Mamba pool", mamba)] if mamba is not None else [])
        # any other term the plan subtracts (an MTP draft's vocab copies, resident while the pool is sized): left out,
        # DeepSeek-V3 TP 8 with MTP read (139.81 - 1.44) - 15.77 - 80.84 - 0.18 = 41.14 GiB, which is 41.58
        subtracted += [(_pool_word(t.name), t.bytes) for t in rank.terms
                       if t.applied and not t.name.startswith(_SGLANG_NAMED)]
        # two lines, as the vLLM pool: on one line the numbers ran past the page at 1400 px (and were cut); more terms
        # than four after "(device - context)" take two lines each (_subtraction)
        words, numbers = _subtraction(subtracted, most=4)
        return (rf"\begin{{aligned}}\text{{pool}} &= (\text{{device}} - \text{{context}}){words}"
                rf"\\ &= ({_g(device)} - {_g(context)}){numbers} = {_g(rank.kv_pool_bytes)}\end{{aligned}}")
    outside = _term(rank, "outside the budget") or 0
    fixed = _term(rank, "KV cache")
    if fixed is not None:
        return rf"\text{{pool}} = \text{{kv\_cache\_memory\_bytes}} = {_g(fixed)}"
    # Every term the release subtracts (kvplan.plan: requested - weights - activations - non-torch - the V2 model
    # runner's sampler state - the CUDA-graph estimate where the release takes it), and only those: the V2 sampler
    # state was left out (vLLM 0.25+: 0.52 GiB for an 8B, so the shown subtraction missed the pool by that much), and
    # a CUDA-graph estimate the release does not subtract (V2 through 0.28.0) showed as "- 0.00 GiB".
    subtracted = [(_pool_word(t.name), t.bytes) for t in rank.terms
                  if t.applied and not t.name.startswith(("device memory", "outside the budget"))]
    requested = device - outside
    # more than five terms (GLM-5 on vLLM: the DSA indexer workspace is a sixth) ran past the page at 1400 px (KaTeX
    # 1,026 px wide in a 940 px column): then the words and the numbers each take two lines
    # Long words split the same way (qa8: vllm-gaudi's five terms, "dummy KV block" ... "reserved for KV cache dummy
    # block", 95 characters of words, cut the line at "reserve" at 1400 px): past POOL_LINE_CHARS of words
    words, numbers = _subtraction(subtracted)
    # vllm-gaudi: u is a fraction of the memory free after loading (kvplan.vllm_gaudi), not of the device
    rule = (r"\text{device} - (1 - u) \times \text{free}" if _term(rank, "reserved for HPUGraphs") is not None
            else r"\lceil \text{device} \times u \rceil")
    return (rf"\begin{{aligned}}\text{{requested}} &= {rule} = {_g(requested)}\\"
            rf"\text{{pool}} &= \text{{requested}}{words}\\ &= {_g(requested)}{numbers} = {_g(rank.kv_pool_bytes)}"
            rf"\end{{aligned}}")


def _subtraction(terms: list[tuple[str, int]], most: int = 5) -> tuple[str, str]:
    r"""The pool formula's " - word" run and its " - number" run (bytes as GiB), each broken onto a second line
    (``\\ &\quad``) at its middle term when there are more than ``most`` terms or their words pass POOL_LINE_CHARS.
    SGLang's pool takes ``most`` 4 (its "(device - context)" leads the line): Qwen3.5-27B with MTP on an H200
    subtracts left free, weights, overhead, mm reserve, Mamba pool, draft vocab copies and the Mamba draft-token state
    reserve, 7 terms, so ceil(7 / 2) = 4 on the first line and 3 on the second (one line was 1,209 px of KaTeX in the
    940 px column at 1400 px: it scrolled sideways)."""
    long = sum(len(w) + 3 for w, _ in terms) > POOL_LINE_CHARS
    cut = len(terms) if len(terms) <= most and not long else -(-len(terms) // 2)
    words = "".join((r"\\ &\quad" if i == cut else "") + rf" - \text{{{w}}}" for i, (w, _) in enumerate(terms))
    numbers = "".join((r"\\ &\quad" if i == cut else "") + f" - {_g(b)}" for i, (_, b) in enumerate(terms))
    return words, numbers


# The pool formula's words (each " - word") that fit one line of the 940 px column at 1400 px: the vLLM 0.33 line
# "requested - weights - activations - non-torch - V2 sampler state - CUDA graphs" (66) fits, vllm-gaudi's 110 did not
POOL_LINE_CHARS = 80
# A budget term's name (kvplan.plan) -> its word in the pool formula; any other term by its name before "(".
_POOL_WORDS = (("weights", "weights"), ("activation peak", "activations"), ("non-torch", "non-torch"),
               ("CUDA graphs", "CUDA graphs"), ("V2 sampler state", "V2 sampler state"),
               ("MTP draft's embed_tokens", "draft vocab copies"), ("EAGLE3 head's own embed_tokens", "draft embedding"),
               ("the cold compile's embedding copy", "held compile copy"))
# The SGLang pool formula's own terms (kvplan.sglang's budget names); any other applied term is subtracted after them
_SGLANG_NAMED = ("device memory", "CUDA context", "left free", "weights", "loading overhead", "Mamba state pool",
                 "multimodal embedding-cache reserve")


def _pool_word(name: str) -> str:
    word = next((w for prefix, w in _POOL_WORDS if name.startswith(prefix)), name.split(" (")[0].strip())
    return re.sub(r"[^A-Za-z0-9 .,/+-]", "", word) or "term"


def as_markdown(formulas: list[tuple[str, str]]) -> str:
    """(title, LaTeX) pairs as one Markdown text: a grey title, then the formula as display math.

    One element instead of a caption and an ``st.latex`` per formula (each element costs every
    rerun). Titles are kvplan's own text; the LaTeX carries only numbers read from the plan.
    """
    return "\n\n".join(f":gray[{title}]\n\n$$\n{latex}\n$$" for title, latex in formulas)
