"""DeepSeek-V4's SGLang KV pools: SGLang's own sizing rule (``DSV4PoolConfigurator``), keyed by release line.

Read in the PyPI wheels of sglang 0.5.10, 0.5.10.post1, 0.5.11, 0.5.12 - 0.5.23 (``pip download sglang==X --no-deps``,
2026-12-01): ``models/deepseek_v4.py`` (``EntryClass = [DeepseekV4ForCausalLM]``), ``mem_cache/deepseek_v4_memory_pool.py``
(``DeepSeekV4TokenToKVPool``, ``DeepSeekV4SingleKVPool``, ``DeepSeekV4IndexerPool``), ``mem_cache/deepseek_v4_compress_state.py``
(``CompressStatePool``), ``model_executor/pool_configurator.py`` (``DSV4PoolConfigurator``), the DSV4 defaults
(``arg_groups/deepseek_v4_hook.py``; ``arg_groups/overrides.py`` / ``model_overrides/deepseek_v4.py`` from 0.5.15).

Arrival: 0.5.10, 0.5.10.post1 and 0.5.11 hold no ``models/deepseek_v4.py``; 0.5.12 is the first release that serves
DeepseekV4ForCausalLM (``SGLANG_DSV4_FIRST_RELEASE``).

The pools (CUDA, the defaults): every layer keeps a sliding-window (SWA) pool of 584 B a token
(``DeepSeekV4SingleKVPool``: 448 fp8 NoPE + 64 x 2 B bf16 RoPE + 448 / 64 = 7 B of scales + 1 B pad, whatever
``--kv-cache-dtype`` says: SGLang asserts fp8_e4m3 or bfloat16 and sizes 584 B either way), sized swa_ratio x the full
pool; a CSA layer (compress ratio 4) a compressed pool of full / 4 entries of 584 B and an indexer pool of full / 4
entries of 128 + 128 / 128 x 4 = 132 B; an HCA layer (ratio 128) full / 128 entries of 584 B; the compressors keep
fp32 states (``SGLANG_DSV4_COMPRESS_STATE_DTYPE`` float32): a CSA layer a ring of 8 rows a 128-token SWA page of
2 x 2 x 512 x 4 = 8192 B (attention) plus 2 x 2 x 128 x 4 = 2048 B (indexer), an HCA layer a ring of 128 rows of
2 x 512 x 4 = 4096 B. SGLang prices one "full token" as the sum over pools (``_get_bytes_per_full_token``, a float)::

    bpft = r x 584 x L + 584 / 4 x L4 + 584 / 128 x L128 + 132 / 4 x L4
           + r x (8 / W) x 8192 x L4 + [line "state_per_token"] r x (128 / W) x 4096 x L128 + r x (8 / W) x 2048 x L4

(r = --swa-full-tokens-ratio, 0.1 by default for DSV4; W = the config's sliding window, 128; L, L4, L128: this PP
stage's layers, its CSA and its HCA layers) and sizes::

    full_token = int((available - c128_fixed) / bpft) // page x page          page = 256 on CUDA (forced)
    c128_fixed = [line "c128_fixed"] ceil((slots x 128 + 129) / 128) x 128 x 4096 x L128,
                 slots = --max-running-requests // dp + 1 (DSV4 sets max_running_requests 256 when not given)

``available`` is the generic rest (``kvplan.sglang``: free memory after the weights less pre-load x (1 -
mem_fraction_static)). max_total_num_tokens = full_token; swa = int(full x r) // page x page; c4 = full // 4;
c128 = full // 128.

Release lines (``DSV4_LINE_RULES``):

==========  ================================================================================================
line        rule
==========  ================================================================================================
0.4.0-0.5.8 refused: no DeepseekV4ForCausalLM (first in 0.5.12)
0.5.10      refused: 0.5.10 - 0.5.11 cannot load it; 0.5.12 counts every entry of compress_ratios (44 for
            V4-Flash: the MTP layer's too) in L, 0.5.13 this stage's layers: two rules in one line
0.5.14      "state_per_token": the HCA state ring priced per token (swa_ratio x 128 / W x 4096 B an HCA layer)
0.5.15 -    "c128_fixed": the HCA state ring is request-scoped: a fixed c128_fixed taken off available first
0.5.20
0.5.21      "page_padded" (0.5.21 - 0.5.23): as "c128_fixed", but every paged pool is priced by its page's bytes
            (FlashMLA's V4 layout pads a page to a multiple of 576 B) and the CSA state ring by the 256-token page
==========  ================================================================================================

The "page_padded" rule (``_get_bytes_per_swa_token`` / ``_compressed_bytes_per_full_token`` /
``_get_paged_kv_bytes_per_token``, ``kv_layout.py`` ``KVLayout.V4.page_bytes``; SGLANG_DSV4_KV_LAYOUT "v4" by
default, dsv4 attention backend "flashmla")::

    paged(P)      = ceil(P x 584 / 576) x 576 / P       P = 256 (SWA), 256 / 4 = 64 (CSA), 256 / 128 = 2 (HCA)
                  = 585 (SWA, CSA), 864 (HCA) B a token
    bpswa         = paged(256) x L + 8 / 256 x (8192 + 2048) x L4       bytes one SWA slot costs
    bpft          = r x bpswa + (paged(64) / 4 + 132 / 4) x L4 + paged(2) / 128 x L128

(the CSA state ring is addressed by the 256-token page: c4_state = swa // 256 x 8, half 0.5.20's swa // 128 x 8).
DeepSeek-V4 stays on the ratio: 0.5.21+ size the SWA pool by a per-request cap ("DSV4 SWA sizing: mode=cap",
compute_swa_request_cap) only when no --swa-full-tokens-ratio is set, and model_overrides/deepseek_v4.py declares 0.1
for every DeepseekV4ForCausalLM that is not DeepSeek-V4.1 (model_type "deepseek_v41") before kv_cache_hook.py
records whether the ratio was set (handle_cache_compatibility runs after handle_model_specific_adjustments in
arg_groups/pipeline.py), so V4-Flash / V4-Pro log "mode=ratio (explicit)" with or without the flag; the cap is
V4.1's: its rule is swa_request_cap_tokens (checked against a real V4.1 log), but kvplan refuses V4.1 plans on SGLang
(families/deepseek_v41.py plan_refusal: its ratio-1 / 2 pools, shared kv-source caches and fixed c2 states are not
modelled). Worked number, V4-Flash, r 0.1: bpswa = 585 x 43 + 0.03125 x 10240 x 21 = 31,875 B;
bpft = 3187.5 + 179.25 x 21 + 6.75 x 20 = 7086.75 B (0.5.20: 7705.45); V4-Pro (61, 30, 31): 4528.5 + 5377.5 +
209.25 = 10,115.25 B.

Worked number, DeepSeek-V4-Flash (43 layers: 2 SWA-only, 21 CSA, 20 HCA), line 0.5.20, r 0.1:
bpft = 2511.2 + 3066 + 91.25 + 693 + 1075.2 + 0 + 268.8 = 7705.45 B (logged "bytes_per_full_token=7705.45", below);
c128_fixed at 256 running requests: ceil((257 x 128 + 129) / 128) x 128 = 33,152 rows x 4096 B x 20 = 2,715,811,840 B.

Pinned logs (search-index files; tests/test_sglang_dsv4.py): V4-Flash on 4 Ascend NPUs, 2026-08-10
("bytes_per_full_token=7705.45, available_bytes=1.57 GB, c128_state_fixed=0.07 GB, full_token=209280": 4 running
requests, page 128), file 57615238133; V4-Pro on 8 x MI355X, sglang 0.5.15.post1, --swa-full-tokens-ratio 0.15, DP
attention 8, --max-running-requests 512, 2026-07-24 ("bytes_per_full_token=13735.04, available_bytes=118.93 GB,
c128_state_fixed=1.01 GB, full_token=9217792"), file 62139008554; V4-Flash, 2026-05-15 ("DSv4 memory calculation:
bytes_per_full_token=15955.85": the 0.5.12 rule, 44 entries and the HCA ring per token), file 55027354440.

Speculative decoding (read 2026-12-03 in the 0.5.14 - 0.5.23 wheels: DSV4PoolConfigurator, deepseek_v4_memory_pool.py
get_compress_state_ring_size, kv_cache_configurator.py, models/deepseek_v4_nextn.py, arg_groups/deepseek_v4_hook.py).
SGLang serves DeepSeek-V4 with --speculative-algorithm EAGLE --speculative-eagle-topk 1 (the hook asserts EAGLE or
DSPARK and top-k == 1 before the speculative hook resolves NEXTN or fills the top-k default: NEXTN, or no top-k, fails) on the checkpoint's MTP layer (DeepseekV4ForCausalLMNextN: one sliding-window
decoder layer, compress ratio 0; its own embed_tokens / lm_head, whole under DP attention / split over TP, are resident
while the pool is sized and replaced by the target's after). With any algorithm (is_speculative; 0.5.21+: draft tokens
> 0) the configurator prices (``speculative=True`` below)::

    rings        = 16 rows a CSA ring, 256 an HCA ring (8 / 128 without)
    bpft_spec    = bpft(rings) x (L + 1) / L            L = this stage's layers: the draft worker's reserve
    c128_fixed   = ceil((slots x 256 + 257) / 128) x 128 x 4096 x L128

--speculative-num-steps S gives D = S + 1 draft tokens (top-k 1 resets --speculative-num-draft-tokens to it); no rule
reads D but 0.5.18+'s _assert_ring_serves_draft_tokens (D <= 16 - 8 + 2 = 10 with a CSA layer: refused above). The
draft worker's own DeepSeekV4TokenToKVPool takes the target's full / SWA sizes with its compressed pools and states
zeroed: one sliding-window layer of swa tokens, inside the reserve (the rest of the reserve stays free).
max_running_requests stays DSV4's 256 (set before the speculative hook's 48). Worked number, V4-Flash, 0.5.20, r 0.1:
(2511.2 + 3066 + 91.25 + 693 + 2150.4 + 537.6) x 44 / 43 = 9049.45 x 44 / 43 = 9259.90 B (a DSpark V4-Flash figure,
search-index file 59794631809, 2026-08-20, reads "bytes_per_full_token=9259.90"); 0.5.21: (0.1 x 38,595 + 3764.25 +
135) x 44 / 43 = 7939.19 B; HCA rings at 256 requests 66,176 x 4096 x 20 = 5,421,137,920 B.
Refused (by field): NGRAM / EAGLE3 / STANDALONE (SGLang asserts EAGLE / DSPARK), DSPARK (not modelled), MTP under PP
(each stage inflates by its own layers; the draft's placement not read), D > 10 on 0.5.18+ (SGLang asserts).
Not modelled (opt-in): adaptive speculation (max_speculative_num_draft_tokens), online c128 compression with MTP.
A --page-size other than 256 is overridden (noted). On ROCm the indexer is priced at fp8 (132 B; 0.5.20's opt-in
fp4 indexer and the unified-KV Triton backend, both off by default, are not modelled). Not modelled on the 0.5.21
line either (all opt-in): --dsv4-attn-backend trtllm (a 512 B uniform-fp8 entry, no page padding),
SGLANG_DSV4_KV_LAYOUT=v41 on SM 10.x, SGLANG_DSV4_COMPRESS_STATE_DTYPE=bfloat16. DeepSeek-V4.1 (model_type
"deepseek_v41", the per-request SWA cap's user) is parsed but not planned on SGLang, see above.
"""

from kvplan.errors import PlanInputError
from kvplan.sglang import swa_tokens
from kvplan.units import GiB, cdiv

SGLANG_DSV4_FIRST_RELEASE = "0.5.12"
DSV4_PAGE_TOKENS = 256  # arg_groups: "Use dsv4 attention backend ..., setting page_size to 256" (CUDA / ROCm)
DSV4_SWA_FULL_TOKENS_RATIO = 0.1  # swa_full_tokens_ratio when not given (0.5.12 - 0.5.23)
DSV4_MAX_RUNNING_REQUESTS = 256  # max_running_requests when not given (deepseek_v4_hook.py, 0.5.12 - 0.5.23)
DSV4_SWA_WINDOW = 128  # the config's sliding_window (window_size), the 0.5.20 c4_state divisor (swa_page_size)
DSV4_C4_RING_ROWS = 8  # get_compress_state_ring_size(4) without speculative decoding
DSV4_C128_RING_ROWS = 128  # get_compress_state_ring_size(128) without speculative decoding (offline compress)
# With speculative decoding (mem_cache/deepseek_v4_memory_pool.py get_compress_state_ring_size, 0.5.14 - 0.5.23 wheels,
# read 2026-12-03: is_speculative, from 0.5.21 num_draft_tokens > 0): 16 rows a CSA ring, 256 an HCA ring.
DSV4_C4_RING_ROWS_SPEC = 16
DSV4_C128_RING_ROWS_SPEC = 256
# DSV4PoolConfigurator.__init__ (0.5.14 - 0.5.23): "draft_layers = 1", bytes_per_full_token *= (L + 1) / L.
DSV4_DRAFT_LAYERS = 1
# _assert_ring_serves_draft_tokens (0.5.18 - 0.5.23): max_speculative_num_draft_tokens <= get_compress_state_write_pad
# = ring - window + 2, window 2 x 4 = 8 (CSA) / 128 (HCA): 16 - 8 + 2 = 10 with a CSA layer (HCA: 256 - 128 + 2 = 130).
DSV4_SPEC_MAX_DRAFT_TOKENS = 10
_DRAFT_ASSERT_LINES = ("0.5.18", "0.5.20", "0.5.21")
DSV4_STATE_BYTES = 4  # SGLANG_DSV4_COMPRESS_STATE_DTYPE default "float32"
DSV4_KV_DTYPES = ("auto", "fp8", "fp8_e4m3", "bfloat16", "bf16")  # SGLang asserts fp8_e4m3 / bfloat16 ("auto" -> fp8)

_NO_CLASS = ("0.4.0", "0.4.5.post3", "0.4.6", "0.4.8", "0.5.3", "0.5.4.post1", "0.5.6", "0.5.7", "0.5.8")
DSV4_LINE_RULES = {"0.5.14": "state_per_token", "0.5.15": "c128_fixed", "0.5.17": "c128_fixed",
                   "0.5.18": "c128_fixed", "0.5.20": "c128_fixed", "0.5.21": "page_padded"}
# The lines whose ServerArgs default swa_full_tokens_ratio to None (an explicit 0.8 is kept: swa_ratio).
_RATIO_NONE_LINES = ("0.5.20", "0.5.21")
# kernels/ops/attention/dsv4/kv_layout.py KVLayout.V4 (0.5.21 - 0.5.23 wheels): 576 B data (448 fp8 + 64 x 2 B bf16) +
# 8 B of scales a token; a page is padded to a multiple of page_align = 576 B (the reader's TMA row stride).
DSV4_V4_PAGE_ALIGN = 576


def swa_ratio(version: str, given: float | None) -> float:
    """The --swa-full-tokens-ratio DeepSeek-V4 runs at: the same server arg as the hybrid SWA models', which SGLang
    replaces by 0.1 for DSV4 where it is at its default. 0.5.12 - 0.5.19 (deepseek_v4_hook.py, arg_groups/overrides.py,
    model_overrides/deepseek_v4.py) test ``swa_full_tokens_ratio == ServerArgs.swa_full_tokens_ratio`` (0.8), so an
    explicit 0.8 becomes 0.1 as well; 0.5.20 - 0.5.23 default the field to None and test ``is None``, so an explicit
    value is kept (0.5.21+ the same). Worked number: given 0.8 -> 0.1 on the 0.5.18 line, 0.8 on the 0.5.20 / 0.5.21
    lines; given 0.15 -> 0.15."""
    if given is None or (given == 0.8 and version not in _RATIO_NONE_LINES):
        return DSV4_SWA_FULL_TOKENS_RATIO
    return given


def ring_rows(speculative: bool) -> tuple[int, int]:
    """(CSA, HCA) compressor-state ring rows a request slot (get_compress_state_ring_size): (8, 128), speculating
    (16, 256)."""
    return (DSV4_C4_RING_ROWS_SPEC, DSV4_C128_RING_ROWS_SPEC) if speculative else (DSV4_C4_RING_ROWS,
                                                                                  DSV4_C128_RING_ROWS)


def dsv4_refusal(version: str, kv_cache_dtype: str, speculative: str, draft_tokens: int = 0, pp: int = 1,
                 csa_layers: bool = True) -> tuple[str, str] | None:
    """(field, message) when kvplan cannot plan DeepSeek-V4 on this SGLang line as SGLang sizes it, else None.
    ``speculative``: kvplan's method ("mtp" is SGLang's EAGLE on the checkpoint's MTP layer); ``draft_tokens`` D =
    --speculative-num-draft-tokens as SGLang runs it (steps + 1 under top-k 1); ``pp`` the pipeline stages;
    ``csa_layers``: the model has a compress-ratio-4 layer (the 10-token ring bound applies)."""
    if version in _NO_CLASS:
        return ("sglang_version", (f"SGLang {version} cannot load 'deepseek_v4': its wheels hold no "
                f"DeepseekV4ForCausalLM (models/deepseek_v4.py); the first SGLang release that serves it is "
                f"{SGLANG_DSV4_FIRST_RELEASE}. Pick 0.5.14 or newer"))
    if version not in DSV4_LINE_RULES:
        return ("sglang_version", (f"SGLang {version} line (0.5.10 - 0.5.13): 0.5.10 - 0.5.11 cannot load 'deepseek_v4' "
                f"(DeepseekV4ForCausalLM arrives in {SGLANG_DSV4_FIRST_RELEASE}); 0.5.12 counts every compress_ratios "
                "entry (the MTP layer's too) in its DSV4 pool, 0.5.13 only the served layers: two rules in one line, "
                "not modelled. Pick 0.5.14 or newer"))
    if speculative not in ("none", "mtp"):  # SGLang's flag, as every other SGLang speculative refusal names it
        return ("--speculative-algorithm", (
            f"{speculative!r} on DeepSeek-V4: SGLang refuses it (apply_deepseek_v4_defaults asserts "
            "--speculative-algorithm EAGLE, with --speculative-eagle-topk 1, or DSPARK from 0.5.17; deepseek_v4_hook.py "
            "0.5.14 - 0.5.23). kvplan plans EAGLE on the checkpoint's MTP layer; DSPARK is not modelled"))
    if speculative == "mtp" and pp > 1:
        return ("--speculative-algorithm", (
            "DeepSeek-V4 MTP under pipeline parallelism on SGLang: each stage's DSV4PoolConfigurator inflates its own "
            "bytes_per_full_token by (its layers + 1) / its layers while the draft runs on one stage; kvplan did not "
            "read how the draft's pool is placed there: not modelled. Plan it with --pp-size 1"))
    if (speculative == "mtp" and csa_layers and version in _DRAFT_ASSERT_LINES
            and draft_tokens > DSV4_SPEC_MAX_DRAFT_TOKENS):
        return ("--speculative-num-draft-tokens", (
            f"{draft_tokens} draft tokens on DeepSeek-V4: SGLang {version}+ refuses to start (_assert_ring_serves_"
            f"draft_tokens: a 16-row CSA compressor-state ring serves at most 16 - 8 + 2 = "
            f"{DSV4_SPEC_MAX_DRAFT_TOKENS} draft tokens). Use --speculative-num-steps "
            f"{DSV4_SPEC_MAX_DRAFT_TOKENS - 1} or fewer"))
    if kv_cache_dtype not in DSV4_KV_DTYPES:
        return ("kv_cache_dtype", (f"SGLang serves DeepSeek-V4 with --kv-cache-dtype fp8_e4m3 or bfloat16 only (it "
                f"asserts so); {kv_cache_dtype!r} is refused"))
    return None


# compute_swa_request_cap (pool_configurator.py, 0.5.21 / 0.5.23 wheels read 2026-12-02): SGLANG_SWA_EVICTION_INTERVAL's
# default (environ.py EnvInt(128)) and the prefix tails kept per running request when radix caching is on
# (_resolve_swa_prefix_tails: 4 x requested_max_running_requests_per_worker, that is
# 4 x max(1, max_running_requests // attn_dp)).
SWA_EVICTION_INTERVAL = 128
SWA_PREFIX_TAILS_PER_REQUEST = 4


# apply_deepseek_v4_defaults (arg_groups/deepseek_v4_hook.py, 0.5.14 - 0.5.23) asserts the speculative flags as typed,
# before the speculative hook reads NEXTN as EAGLE or fills --speculative-eagle-topk's default (None until then):
# SGLang's own assert messages, DeepseekV4ForCausalLM being the model_arch they name
DSV4_ALGORITHM_ASSERT = "Only EAGLE speculative algorithm is supported for DeepseekV4ForCausalLM"
DSV4_TOPK_ASSERT = "Only EAGLE speculative algorithm with topk == 1 is supported for DeepseekV4ForCausalLM"
DSV4_SPEC_FIX = "--speculative-algorithm EAGLE --speculative-eagle-topk 1"


def launch_refusal(algorithm: str | None, eagle_topk: int | None,
                   topk_typed: bool = True) -> tuple[str, str] | None:
    """(flag, message) when an SGLang launch line for DeepSeek-V4 does not start for its speculative flags as typed,
    else None. ``algorithm``: --speculative-algorithm as typed (None: not given, no speculation, nothing asserted);
    ``eagle_topk``: --speculative-eagle-topk as typed (None: not given); ``topk_typed`` False where the input has no
    such flag (kvplan's CLI plans top-k 1), so only the algorithm's spelling is checked.
    Rule (deepseek_v4_hook.py): algorithm == "EAGLE" (NEXTN, its alias everywhere else, fails here) and top-k == 1
    (not given fails too: the default is filled later). Worked example: ("NEXTN", 1) -> ("--speculative-algorithm",
    "... Only EAGLE speculative algorithm is supported ..."); ("EAGLE", None) -> ("--speculative-eagle-topk", ...);
    ("EAGLE", 1) -> None."""
    if algorithm is None:
        return None
    fix = f"Launch it as {DSV4_SPEC_FIX}"
    if algorithm.upper() == "NEXTN":
        return ("--speculative-algorithm", (
            f"NEXTN on DeepSeek-V4: SGLang does not start (AssertionError: {DSV4_ALGORITHM_ASSERT}; "
            "apply_deepseek_v4_defaults checks the name as typed, before NEXTN is read as EAGLE). " + fix))
    if topk_typed and eagle_topk != 1:
        typed = "not given" if eagle_topk is None else f"{eagle_topk}"
        return ("--speculative-eagle-topk", (
            f"{typed} on DeepSeek-V4: SGLang does not start (AssertionError: {DSV4_TOPK_ASSERT}; "
            "apply_deepseek_v4_defaults checks it before the speculative hook fills its default). " + fix))
    return None


def swa_request_cap_tokens(running_per_worker: int, chunked_prefill_size: int, window: int = DSV4_SWA_WINDOW,
                           page: int = DSV4_PAGE_TOKENS, prefix_tails: int | None = None, radix_cache: bool = True,
                           draft_tokens: int = 0, spec_steps: int = 1, overlap: bool = True) -> tuple[int, int]:
    """(swa_tokens, prefix_tails) of SGLang's cap mode ("DSV4 SWA sizing: mode=cap", 0.5.21+), the sliding-window
    pool DSV4PoolConfigurator reserves when no --swa-full-tokens-ratio is set, which on 0.5.21 - 0.5.23 is
    DeepSeek-V4.1 only (V4 gets 0.1, see the module docstring). kvplan refuses V4.1 plans on SGLang (families/deepseek_v41.py
    plan_refusal), so no plan calls this yet: it is the cap's own rule, checked against a real V4.1 log.

    Inputs: running_per_worker = max(1, --max-running-requests // attention DP); chunked_prefill_size in tokens (> 0:
    cap mode needs chunked prefill); window W the config's sliding_window; page the DSV4 page (256); prefix_tails
    --swa-prefix-tails, else 0 without radix cache, else 4 x running; draft_tokens --speculative-num-draft-tokens (0:
    no speculative decoding), spec_steps --speculative-num-steps, EAGLE top-k 1 only; overlap False with
    --disable-overlap-schedule (refused with speculative decoding: spec-v1's per-request allocation is not modelled).
    Formula (compute_swa_request_cap + _resolve_swa_cap_tokens), tokens::

        per_request = W + 128 x max(draft, 1) + page + decode_alloc     decode_alloc = page, or 2 x max(steps, draft)
        cap         = per_request x running + (2 if overlap else 1) x chunked_prefill_size + page
        swa_tokens  = ceil(cap + prefix_tails x (W + page), page)

    Worked number, the real V4.1-Flash log (3 x GB10, 0.5.2x dev image: --max-running-requests 4,
    --chunked-prefill-size 1024, DSpark with 6 draft tokens, 1 step, overlap on): per_request = 128 + 768 + 256 + 12 =
    1,164; cap = 4,656 + 2,048 + 256 = 6,960; tails 16 x 384 = 6,144; 13,104 -> 13,312 tokens ("swa_tokens=13312,
    request_cap+headroom=13312, prefix_tails=16"). Not modelled: PD-disaggregation decode (its extra slots), encoder
    replay (tails scaled by the draft layers), EAGLE top-k > 1."""
    if chunked_prefill_size <= 0:
        raise PlanInputError("chunked_prefill_size", "SGLang's SWA cap mode needs chunked prefill (> 0); without it "
                             "SGLang keeps ratio sizing")
    if draft_tokens and not overlap:
        raise PlanInputError("speculative_method", "the SWA cap with speculative decoding and "
                             "--disable-overlap-schedule (spec-v1's per-request allocation) is not modelled")
    running = max(1, running_per_worker)  # SGLang's floor, for the cap and the tails alike
    if prefix_tails is None:
        prefix_tails = SWA_PREFIX_TAILS_PER_REQUEST * running if radix_cache else 0
    decode_alloc = 2 * max(spec_steps, draft_tokens) if draft_tokens else page
    per_request = window + SWA_EVICTION_INTERVAL * max(draft_tokens, 1) + page + decode_alloc
    cap = per_request * running + (2 if overlap else 1) * chunked_prefill_size + page
    return cdiv(cap + prefix_tails * (window + page), page) * page, prefix_tails


def cap_sizing_line(swa: int, prefix_tails: int) -> str:
    """SGLang's cap-mode line (pool_configurator.py _compute_dsv4_sizes), swa = swa_request_cap_tokens()[0] (the pool
    is the page-aligned cap itself). Worked example: (13312, 16) -> "DSV4 SWA sizing: mode=cap, swa_tokens=13312,
    request_cap+headroom=13312, prefix_tails=16"."""
    return f"DSV4 SWA sizing: mode=cap, swa_tokens={swa}, request_cap+headroom={swa}, prefix_tails={prefix_tails}"


def bytes_per_full_token(rule: str, layers: int, csa_layers: int, hca_layers: int, nope_dim: int = 448,
                         rope_dim: int = 64, index_dim: int = 128, window: int = 128,
                         swa_ratio: float = DSV4_SWA_FULL_TOKENS_RATIO, speculative: bool = False) -> float:
    """SGLang's bytes a "full token" costs over every DSV4 pool (``_get_bytes_per_full_token``), a float, summed in
    SGLang's own order so that int(available / bpft) is SGLang's. Inputs: the stage's layers, CSA (ratio 4) and HCA
    (ratio 128) layers; head dims (NoPE 448 + RoPE 64 = 512, indexer 128); the sliding window W (SWA page) in tokens.
    Formula in the module docstring. Worked number: V4-Flash (43, 21, 20), "c128_fixed" -> 7705.45 B, "page_padded" ->
    7086.75 B; V4-Pro (61, 30, 31) at swa_ratio 0.15 -> 13735.04 B ("c128_fixed"). ``speculative``: the rings of 16 /
    256 rows (ring_rows), then the whole sum x (L + 1) / L for the draft worker: V4-Flash "c128_fixed" -> (2511.2 +
    3066 + 91.25 + 693 + 2150.4 + 537.6) x 44 / 43 = 9049.45 x 44 / 43 = 9259.90 B."""
    c4_rows, c128_rows = ring_rows(speculative)
    kv_bytes = nope_dim + rope_dim * 2 + 8
    indexer_bytes = index_dim + index_dim // 128 * 4
    head = nope_dim + rope_dim
    c4_state_bytes = 2 * 2 * head * DSV4_STATE_BYTES
    c128_state_bytes = 2 * 1 * head * DSV4_STATE_BYTES
    c4_indexer_state_bytes = 2 * 2 * index_dim * DSV4_STATE_BYTES
    c4_state_ratio = c4_rows / window
    c128_state_ratio = c128_rows / window if rule == "state_per_token" else 0
    c4_frac = 1 / 4
    # DSV4PoolConfigurator: bytes_per_full_token *= (target + draft) / target, after the sum (1.0: not speculating)
    infl = (layers + DSV4_DRAFT_LAYERS) / layers if speculative else 1.0
    if rule == "page_padded":
        bpswa = bytes_per_swa_token(layers, csa_layers, nope_dim, rope_dim, index_dim, speculative)
        compressed = 0  # sum() over stage_owner_layers in SGLang's order: ratio 4, then 128
        if csa_layers:
            compressed += (c4_frac * paged_kv_bytes_per_token(DSV4_PAGE_TOKENS // 4, kv_bytes)
                           + 1 / 4 * indexer_bytes) * csa_layers
        if hca_layers:
            compressed += 1 / 128 * paged_kv_bytes_per_token(DSV4_PAGE_TOKENS // 128, kv_bytes) * hca_layers
        bpft = swa_ratio * bpswa + compressed
        return bpft * infl if speculative else bpft
    bpft = (swa_ratio * kv_bytes * layers
            + c4_frac * kv_bytes * csa_layers
            + 1 / 128 * kv_bytes * hca_layers
            + 1 / 4 * indexer_bytes * csa_layers
            + swa_ratio * c4_state_ratio * c4_state_bytes * csa_layers
            + swa_ratio * c128_state_ratio * c128_state_bytes * hca_layers  # 0 on "c128_fixed" (a fixed ring)
            + swa_ratio * c4_state_ratio * c4_indexer_state_bytes * csa_layers)
    return bpft * infl if speculative else bpft


def paged_kv_bytes_per_token(page_tokens: int, kv_bytes: int = 584) -> float:
    """Bytes a token of one DSV4 KV pool costs once its page is padded (0.5.21+ ``_get_paged_kv_bytes_per_token``:
    ``KVLayout.V4.page_bytes(P) / P``): ceil(P x kv_bytes / 576) x 576 / P, P the pool's page in its own entries (256
    SWA, 64 CSA, 2 HCA at SGLang's page 256). Worked numbers: 256 -> 149,760 / 256 = 585.0 B; 64 -> 37,440 / 64 =
    585.0 B; 2 -> 1,728 / 2 = 864.0 B."""
    return cdiv(page_tokens * kv_bytes, DSV4_V4_PAGE_ALIGN) * DSV4_V4_PAGE_ALIGN / page_tokens


def bytes_per_swa_token(layers: int, csa_layers: int, nope_dim: int = 448, rope_dim: int = 64,
                        index_dim: int = 128, speculative: bool = False) -> float:
    """Bytes one SWA slot costs across a stage (0.5.21+ ``_get_bytes_per_swa_token``): the padded SWA entry on every
    layer plus the CSA compressor states, priced per SWA slot as the ring's 8 rows per 256-token page:
    paged(256) x L + 8 / 256 x (2 x 2 x 512 x 4 + 2 x 2 x 128 x 4) x L4. Worked number: V4-Flash (43, 21) ->
    585 x 43 + 0.03125 x 10240 x 21 = 25,155 + 6,720 = 31,875.0 B; ``speculative`` (16-row rings, before the
    (L + 1) / L inflation bytes_per_full_token applies): 25,155 + 0.0625 x 10240 x 21 = 38,595.0 B."""
    kv_bytes = nope_dim + rope_dim * 2 + 8
    head = nope_dim + rope_dim
    c4_state_bytes = 2 * 2 * head * DSV4_STATE_BYTES
    c4_indexer_state_bytes = 2 * 2 * index_dim * DSV4_STATE_BYTES
    c4_state_ratio = ring_rows(speculative)[0] / DSV4_PAGE_TOKENS
    return (paged_kv_bytes_per_token(DSV4_PAGE_TOKENS, kv_bytes) * layers
            + c4_state_ratio * (c4_state_bytes + c4_indexer_state_bytes) * csa_layers)


def c128_state_fixed_bytes(rule: str, hca_layers: int, running_per_worker: int, head_dim: int = 512,
                           speculative: bool = False) -> int:
    """The HCA compressors' request-scoped fp32 state rings (``_get_c128_state_fixed_bytes``, line "c128_fixed"):
    rows = ceil((slots x ring + ring + 1) / 128) x 128, slots = running + 1, ring 128 (256 speculating); bytes = rows
    x 2 x head_dim x 4 x L128. Worked number: 256 running requests, 20 HCA layers: 33,152 x 4096 x 20 = 2,715,811,840 B
    (speculating: ceil((257 x 256 + 257) / 128) x 128 = 66,176 rows x 4096 x 20 = 5,421,137,920 B); 0 on
    "state_per_token"."""
    if rule not in ("c128_fixed", "page_padded") or not hca_layers:
        return 0
    ring = ring_rows(speculative)[1]
    rows = cdiv((running_per_worker + 1) * ring + ring + 1, 128) * 128
    return rows * 2 * head_dim * DSV4_STATE_BYTES * hca_layers


def full_tokens(available_bytes: int, bpft: float, fixed_bytes: int, page: int = DSV4_PAGE_TOKENS) -> int:
    """max_total_num_tokens: int(max(available - fixed, 0) / bpft) floored to the page. Worked number (the MI355X
    V4-Pro log): available 118.93 GiB, fixed 1.01 GiB, bpft 13735.04 -> about 9,217,792 tokens."""
    return int(max(available_bytes - fixed_bytes, 0) / bpft) // page * page


def stage_counts(layers) -> tuple[int, int, int]:
    """(all, CSA, HCA) layers of a stage's distinct (layer, count) list (compress_rate 4 / 128)."""
    total = sum(n for _, n in layers)
    csa = sum(n for layer, n in layers if getattr(layer.cache, "compress_rate", 0) == 4)
    hca = sum(n for layer, n in layers if getattr(layer.cache, "compress_rate", 0) == 128)
    return total, csa, hca


def stage_pool(version: str, layers, available_bytes: int, running_per_worker: int,
               page: int = DSV4_PAGE_TOKENS, ratio: float = DSV4_SWA_FULL_TOKENS_RATIO,
               speculative: bool = False) -> tuple[float, int, int]:
    """(bpft, c128_fixed bytes, full tokens) of one stage on SGLang ``version`` (a DSV4_LINE_RULES line); ``ratio``:
    the effective --swa-full-tokens-ratio (swa_ratio); ``layers`` the target's own (not the MTP layer: SGLang slices
    compress_ratios to the stage); ``speculative``: an EAGLE draft worker beside it (its rings and inflation)."""
    rule = DSV4_LINE_RULES.get(version)
    if rule is None:
        raise PlanInputError("sglang_version", f"SGLang {version}: no DeepSeek-V4 pool rule")
    total, csa, hca = stage_counts(layers)
    cache = next(layer.cache for layer, _ in layers)
    rope = cache.qk_rope_head_dim
    index_dim = next((layer.cache.index_head_dim for layer, _ in layers if layer.cache.index_head_dim), 128)
    bpft = bytes_per_full_token(rule, total, csa, hca, cache.head_dim - rope, rope, index_dim, cache.sliding_window,
                                ratio, speculative)
    fixed = c128_state_fixed_bytes(rule, hca, running_per_worker, cache.head_dim, speculative)
    return bpft, fixed, full_tokens(available_bytes, bpft, fixed, page)


def log_lines(bpft: float, available_bytes: int, fixed: int, tokens: int, rule: str,
              ratio: float = DSV4_SWA_FULL_TOKENS_RATIO, version: str = "", speculative: bool = False) -> list[str]:
    """SGLang's own DSV4 lines (pool_configurator.py), in place of the generic "KV Cache is allocated" one. On
    "page_padded" (0.5.21 - 0.5.23) in their order and words: "DSV4 SWA sizing" (_compute_dsv4_sizes; V4 is always
    "ratio (explicit)", see the module docstring), "DSV4 memory calculation" (with the unified / DSpark flags and the
    fixed pools, all 0 here but c128_state_fixed), "DSV4 pool sizes" (c4_state = swa // 256 x 8; c128_state 0: it is
    finalized later). Worked example (V4-Flash, 1,000,192 full tokens, r 0.1): "DSV4 SWA sizing: mode=ratio
    (explicit), swa_tokens=99840, swa_full_tokens_ratio=0.1" and "DSV4 pool sizes: full=1000192, swa=99840,
    c4=250048, c128=7814, c4_state=3120, c128_state=0". ``version`` "0.5.20": that wheel's wording (the unified flags,
    swa_ring_fixed / c4_state_fixed, c4_state = swa // 128 x 8 by the sliding window); older lines print the shorter
    lines of the pinned 0.5.15.post1 log. ``speculative``: c4_state by the 16-row ring (0.5.20: swa // 128 x 16)."""
    swa = swa_tokens(tokens, ratio, DSV4_PAGE_TOKENS)
    c4_rows = ring_rows(speculative)[0]
    if rule == "page_padded":
        return [f"DSV4 SWA sizing: mode=ratio (explicit), swa_tokens={swa}, swa_full_tokens_ratio={ratio}",
                "DSV4 memory calculation: unified=False, unified_fp8=False, dspark_draft_bf16=False, "
                f"bytes_per_full_token={bpft:.2f}, available_bytes={available_bytes / GiB:.2f} GB, "
                f"c128_state_fixed={fixed / GiB:.2f} GB, c2_state_fixed=0.00 GB, swa_fixed=0.00 GB, "
                f"swa_ring_fixed=0.00 GB, c4_state_fixed=0.00 GB, full_token={tokens}",
                f"DSV4 pool sizes: full={tokens}, swa={swa}, c4={tokens // 4}, c128={tokens // 128}, "
                f"c4_state={swa // DSV4_PAGE_TOKENS * c4_rows}, c128_state=0"]
    if version == "0.5.20":
        return ["DSV4 memory calculation: unified=False, unified_fp8=False, "
                f"bytes_per_full_token={bpft:.2f}, available_bytes={available_bytes / GiB:.2f} GB, "
                f"c128_state_fixed={fixed / GiB:.2f} GB, swa_ring_fixed=0.00 GB, c4_state_fixed=0.00 GB, "
                f"full_token={tokens}",
                f"DSV4 pool sizes: full={tokens}, swa={swa}, c4={tokens // 4}, c128={tokens // 128}, "
                f"c4_state={swa // DSV4_SWA_WINDOW * c4_rows}, c128_state=0"]
    calc = (f"DSV4 memory calculation: bytes_per_full_token={bpft:.2f}, available_bytes={available_bytes / GiB:.2f} GB, "
            + (f"c128_state_fixed={fixed / GiB:.2f} GB, " if rule == "c128_fixed" else "") + f"full_token={tokens}")
    return [calc, f"DSV4 pool sizes: full={tokens}, swa={swa}, c4={tokens // 4}, c128={tokens // 128}"]
