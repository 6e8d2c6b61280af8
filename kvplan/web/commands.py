"""The Import page's command line: which launcher it is, and the settings it plans with.

Accepted: ``vllm serve MODEL ...``, ``python -m vllm.entrypoints.openai.api_server ...``, a
``docker run ... vllm/vllm-openai ...`` line, ``python -m sglang.launch_server ...`` or ``sglang serve
...`` (SGLang's flags, python/sglang/srt/server_args.py, are read as their vLLM equivalents, with the
SGLang engine profile), or a line of flags alone
(starting with ``-``), each after environment assignments (``VAR=x``, ``env VAR=x``, ``export VAR=x &&``;
``VLLM_USE_V1=0`` plans vLLM's V0 engine). Anything else (``rm -rf /``) is refused as not a serving command: its first
word is never taken for a model name.
"""

import re
import shlex
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict

from kvplan.errors import PlanInputError
from kvplan.sglang import SGLANG_AITER_HONOR_ENV, SGLANG_ENV_TRUE, sglang_profile_for_release
from kvplan.vllm_args import MAX_COMMAND_CHARS, VllmArgs, docker_env, fraction, launch_env, parse_vllm_command

_PYTHON = re.compile(r"^(.*/)?python[0-9.]*$")
# SGLang flag -> the vLLM flag kvplan reads (python/sglang/srt/server_args.py names; --tp is an alias of --tp-size).
SGLANG_FLAGS = {"--model-path": None, "--model": None, "--tp-size": "--tensor-parallel-size",
                "--tensor-parallel-size": "--tensor-parallel-size", "--tp": "--tensor-parallel-size",
                "--pp-size": "--pipeline-parallel-size", "--pipeline-parallel-size": "--pipeline-parallel-size",
                "--dp-size": "--data-parallel-size", "--data-parallel-size": "--data-parallel-size",
                "--dp": "--data-parallel-size",
                "--context-length": "--max-model-len", "--kv-cache-dtype": "--kv-cache-dtype",
                "--page-size": "--block-size", "--max-running-requests": "--max-num-seqs",
                "--quantization": "--quantization", "--dtype": "--dtype",
                "--chunked-prefill-size": "--max-num-batched-tokens"}  # -1 (chunking off): not planned
SGLANG_SWITCHES = {"--enable-ep-moe": "--enable-expert-parallel", "--enable-dp-attention": None,
                   "--disable-cuda-graph": "--enforce-eager"}
# --enable-ep-moe (server_args.py, read in the sglang 0.4.6 - 0.5.6 wheels, 2026-12-03): a store_true switch setting
# ep_size = tp_size through 0.5.2 ("(Deprecated)" in its help from 0.5.0rc0); 0.5.3 - 0.5.4 keep it as a
# DeprecatedAction that raises "Please set `--ep-size` to the same value as `--tp-size` instead."; 0.5.5 has no such
# flag (argparse: unrecognized arguments). _sglang_as_vllm reads it as --ep-size TP and says so.
ENABLE_EP_MOE_NOTE = ("--enable-ep-moe: planned as --ep-size equal to --tp-size (experts whole over the TP group), as "
                      "SGLang through 0.5.2 reads it; SGLang 0.5.3 - 0.5.4 refuse it (deprecated: \"set --ep-size to "
                      "the same value as --tp-size\") and 0.5.5 and later have no such flag: write --ep-size N there")
# With --enable-dp-attention, --dp / --dp-size / --data-parallel-size is the attention-DP size (dp_attention_size).
SGLANG_DP = ("--dp", "--dp-size", "--data-parallel-size")
SGLANG_EP = {"--ep-size", "--expert-parallel-size", "--ep"}
# SGLang flags kvplan reads but does not plan (EngineConfig has no field for them): flag -> (arity "V" one value /
# "M" one or more, why). server_args.py _handle_gpu_memory_settings sizes its CUDA-graph reserve (hence the default
# --mem-fraction-static) with cuda_graph_max_bs; kvplan.sglang.default_settings plans SGLang's default for the GPU.
SGLANG_READ_NOT_PLANNED = {
    "--cuda-graph-max-bs": ("V", ("SGLang's CUDA-graph reserve (and so its default --mem-fraction-static) follows the "
                                 "largest captured batch; kvplan plans SGLang's default for this GPU")),
    "--cuda-graph-bs": ("M", ("SGLang's CUDA-graph reserve follows the captured batch sizes; kvplan plans SGLang's "
                             "default for this GPU")),
}
# SGLang switches with no effect on memory (they change scheduling or logging, not the pool or the reserve).
# (--disable-radix-cache is not one: a hybrid's MambaPool then keeps one state slot a request, sized by
# --max-running-requests or a fixed count; kvplan.sglang.mamba_pool. It is carried as EngineConfig.enable_prefix_caching.)
SGLANG_NO_MEMORY_SWITCHES = {"--enable-metrics", "--enable-cache-report", "--log-requests",
                             "--enable-tokenizer-batch-encode"}
MAMBA_SSM_DTYPES = ("float32", "bfloat16", "float16")  # server_args.py --mamba-ssm-dtype choices
PREFILL_BACKENDS = ("breakable", "tc_piecewise", "disabled")  # --cuda-graph-backend-prefill (0.5.14+) choices
# --speculative-algorithm -> EngineConfig.speculative_method (server_args.py choices EAGLE, EAGLE3, NEXTN, STANDALONE,
# NGRAM, 0.5.10; read upper-cased from 0.5.14, speculative/spec_info.py from_string). NEXTN is EAGLE (NEXTN -> EAGLE),
# and EAGLE without --speculative-draft-model-path on a DeepSeek-V3 / GLM MoE checkpoint drafts with its own MTP layers
# (the model path is the draft path): kvplan's "mtp". EAGLE3 with --speculative-draft-model-path a head kvplan ships
# (kvplan/presets/DRAFTERS.json): "eagle3" with that drafter; STANDALONE with a draft LM kvplan has a preset of:
# "draft_model" (vLLM's name) with that preset. EAGLE with a draft checkpoint of its own (not a NextN export of the MTP
# layers): refused by the core (kvplan.sglang.speculative_refusal).
SGLANG_SPECULATIVE_ALGORITHMS = {"NEXTN": "mtp", "EAGLE": "mtp", "EAGLE3": "eagle3", "STANDALONE": "standalone",
                                 "NGRAM": "ngram"}
SGLANG_DRAFT_PATH = "--speculative-draft-model-path"
# The abbreviations argparse (allow_abbrev) takes for them, as early SGLang DeepSeek MTP examples wrote them
# ("--speculative-algo NEXTN --speculative-draft SGLang/DeepSeek-V3-NextN", sglang 0.4.3 era)
SGLANG_SPECULATIVE_ABBREV = {"--speculative-algo": "--speculative-algorithm", "--speculative-draft": SGLANG_DRAFT_PATH}
# SGLang's own choice of --speculative-num-steps / --speculative-eagle-topk / --speculative-num-draft-tokens for the
# DeepSeek / GLM MoE architectures when none is given (arg_groups/speculative_hook.py _auto_choose_speculative_params,
# 0.5.20: (3, 1, 4); docs/basic_usage/deepseek_v3.md: "The default configuration for DeepSeek models is
# --speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4").
SGLANG_DEFAULT_NUM_STEPS = 3
# No --speculative-num-steps: the note the Import table reads to label the steps SGLang's default. NGRAM's default is
# derived (arg_groups/speculative_hook.py _handle_ngram, 0.5.20+: num_steps = num_draft_tokens // eagle_topk, topk =
# --speculative-ngram-max-bfs-breadth 10, draft tokens 12 unless given: 1 step), not the MTP families' 3; its pool
# does not depend on it (nothing drafted is cached).
SGLANG_STEPS_DEFAULT_NOTE = "--speculative-num-steps not given: SGLang's default"
# Read and checked (server_args.py: type=int). From 0.5.14 SGLang's KV pools do not depend on them (the draft's layers
# share the target's token slots; only the request table, outside the KV budget, is num_draft_tokens wider); the draft
# tokens D SGLang runs with size a hybrid's MambaPool reserve (kvplan.sglang.mamba_pool), carried as
# Command.speculative_num_draft_tokens where SGLang keeps it (arg_groups/speculative_hook.py _handle_eagle_family,
# 0.5.14 - 0.5.23: top-k 1 resets it to --speculative-num-steps + 1, which the core derives itself; NGRAM keeps it, 12
# unless given).
SGLANG_SPECULATIVE_READ = ("--speculative-eagle-topk", "--speculative-num-draft-tokens")
SPECULATIVE_READ_NOTE = ("read, not planned: from SGLang 0.5.14 the KV pool does not depend on it (the draft's layers "
                         "share the target's token slots; the request table it widens is outside the KV budget)")
DRAFT_TOKENS_NOTE = ("planned for a hybrid's MambaPool only (one state slot a draft token per running request, "
                     "SGLang 0.5.14+); the KV pool does not depend on it")
DRAFT_TOKENS_RESET_NOTE = ("SGLang resets it to --speculative-num-steps + 1 = {d} under --speculative-eagle-topk 1 "
                           "(arg_groups/speculative_hook.py), and kvplan plans {d}")
# The MambaPool's strategy flags (--mamba-scheduler-strategy, 0.5.7+; --mamba-radix-cache-strategy, its later name):
# kvplan.sglang models only each line's own default (SglangProfile.hybrid_extra_buffer), not an explicit choice.
SGLANG_MAMBA_STRATEGY = {"--mamba-scheduler-strategy", "--mamba-radix-cache-strategy"}
MAMBA_STRATEGY_NOTE = ("not planned: kvplan plans the SGLang line's own strategy for a hybrid (no_buffer, 3 state "
                       "slots a running request, through 0.5.13; extra_buffer, 5, from 0.5.14), not one given on "
                       "the command line, so the max_running_requests cap the MambaPool sets may differ")
# --enable-multi-layer-eagle (0.5.14+ speculative args; on by itself for MiMo-V2 / Step-3.5 with EAGLE, 0.5.20
# arg_groups/model_overrides/mimo_v2.py, overrides.py): MultiLayerEagleDraftWorker keeps a draft runner a step, each
# with its own KV pool (speculative/multi_layer_eagle_worker_v2.py draft_runner_list; sgl-project/sglang issue #31588:
# "after seven draft pools"), where kvplan plans one: carried into Command.unplanned, warned as not planned.
MULTI_LAYER_EAGLE = "--enable-multi-layer-eagle"
MULTI_LAYER_EAGLE_NOTE = ("not planned: SGLang's multi-layer EAGLE keeps a draft runner per draft step, each with "
                          "its own KV pool (multi_layer_eagle_worker_v2.py); kvplan plans one draft pool, so the "
                          "KV pool here is too large by the other steps' draft pools")
# Prefill (piecewise) CUDA-graph switches -> EngineConfig.piecewise_cuda_graph (server_args.py: --enable- 0.5.3.post2 -
# 0.5.9 (0.5.10+ keeps it as a no-op), --disable- / --enforce- 0.5.10+, --disable-prefill-cuda-graph 0.5.14+).
# SGLang switches kvplan plans: flag -> (Command field, the value it sets); kvplan.vllm_args._SWITCH_FLAGS's shape.
SGLANG_SWITCH_FIELDS: dict[str, tuple[str, Any]] = {
    "--disable-radix-cache": ("disable_radix_cache", True),
    "--disable-hybrid-swa-memory": ("disable_hybrid_swa_memory", True),
    "--enable-piecewise-cuda-graph": ("piecewise_cuda_graph", "enable"),
    "--enforce-piecewise-cuda-graph": ("piecewise_cuda_graph", "enforce"),
    "--disable-piecewise-cuda-graph": ("piecewise_cuda_graph", "disable"),
    "--disable-prefill-cuda-graph": ("piecewise_cuda_graph", "disable"),
}


class Command(BaseModel):
    """What a pasted command line plans with."""

    model_config = ConfigDict(frozen=True)
    launcher: str  # "vllm" | "sglang" | "flags"
    args: VllmArgs
    engine: str  # kvplan engine profile: "vllm" or "sglang"
    mem_fraction_static: float | None = None  # SGLang's --mem-fraction-static
    # SGLang --enable-dp-attention: its --dp N is then N attention-DP groups inside the TP group (EngineConfig
    # dp_attention_size), not N replicas; --moe-dense-tp-size (EngineConfig moe_dense_tp_size).
    dp_attention_size: int = 1
    moe_dense_tp_size: int | None = None
    max_total_tokens: int | None = None  # SGLang --max-total-tokens: caps the KV pool (EngineConfig max_total_tokens)
    piecewise_cuda_graph: str | None = None  # SGLang's prefill CUDA-graph switches (EngineConfig piecewise_cuda_graph)
    sglang_version: str | None = None  # the SGLang profile an lmsysorg/sglang:vX.Y.Z image tag names
    # a hybrid's MambaPool (EngineConfig fields of the same names) and --disable-radix-cache (EngineConfig
    # enable_prefix_caching False: one state slot a request)
    mamba_full_memory_ratio: float | None = None
    max_mamba_cache_size: int | None = None
    mamba_ssm_dtype: str | None = None
    # the hybrid SWA pools (EngineConfig fields of the same names): --swa-full-tokens-ratio, --disable-hybrid-swa-memory
    swa_full_tokens_ratio: float | None = None
    disable_hybrid_swa_memory: bool = False
    disable_radix_cache: bool = False
    # --speculative-algorithm (EngineConfig speculative_method: "mtp" for NEXTN / EAGLE on the MTP layers, "ngram",
    # "eagle3" ...: the core refuses what it does not plan) and --speculative-num-steps (num_speculative_tokens)
    speculative_method: str = "none"
    num_speculative_tokens: int | None = None
    # --speculative-num-draft-tokens where SGLang keeps it (None: its own, kvplan.sglang.speculative_draft_tokens)
    speculative_num_draft_tokens: int | None = None
    # --speculative-algorithm and --speculative-eagle-topk as typed (upper-cased; None: not given): DeepSeek-V4's hook
    # asserts both before SGLang reads NEXTN as EAGLE (kvplan.sglang_dsv4.launch_refusal, views.imported_state)
    speculative_algorithm: str | None = None
    speculative_eagle_topk: int | None = None
    # EAGLE3's --speculative-draft-model-path: a DRAFTERS.json head name (kvplan.drafter.drafter_for_model)
    drafter: str | None = None
    # SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION set before the command (EngineConfig field of the same name)
    sglang_aiter_honor_explicit_mem_fraction: bool = False
    # flags (with their values) that change memory and that the app does not plan (the MambaPool strategy flags,
    # --speculative-* flags kvplan does not read, --chunked-prefill-size -1)
    unplanned: tuple[str, ...] = ()
    # the flags of an SGLang line handed to vLLM's parser as typed (not SGLang flags kvplan reads): a vLLM-only
    # spelling (--max-num-seqs, --gpu-memory-utilization) is named, views.unplanned_flags
    vllm_spelled: tuple[str, ...] = ()

    def engine_fields(self) -> dict:
        """The SGLang-only EngineConfig fields this line sets (empty for vLLM lines)."""
        out: dict = {"dp_attention_size": self.dp_attention_size} if self.dp_attention_size > 1 else {}
        for name in ("moe_dense_tp_size", "max_total_tokens", "piecewise_cuda_graph", "mamba_full_memory_ratio",
                     "max_mamba_cache_size", "mamba_ssm_dtype", "swa_full_tokens_ratio"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        if self.disable_hybrid_swa_memory:
            out["disable_hybrid_swa_memory"] = True
        if self.disable_radix_cache:
            out["enable_prefix_caching"] = False
        if self.sglang_aiter_honor_explicit_mem_fraction:
            out["sglang_aiter_honor_explicit_mem_fraction"] = True
        return out


def _split(command: str) -> list[str]:
    if len(command) > MAX_COMMAND_CHARS:
        raise PlanInputError("command", f"longer than {MAX_COMMAND_CHARS:,} characters")
    try:
        return shlex.split(re.sub(r"\\\r?\n", " ", command), comments=True)
    except ValueError as exc:
        raise PlanInputError("command", f"cannot split it as a shell command: {exc}") from None


def launcher(tokens: list[str]) -> tuple[str, int]:
    """('vllm' | 'sglang' | 'flags', index of the first token after the launcher). Raises
    PlanInputError naming the first word when the line launches neither engine."""
    _, i = launch_env(tokens)  # VAR=x, env VAR=x, export VAR=x && ...
    rest = tokens[i:]
    if not rest:
        raise PlanInputError("command", "empty: paste a `vllm serve MODEL ...` line")
    if rest[0].startswith("-"):
        return "flags", i
    if rest[0] == "docker":
        for j, tok in enumerate(rest):
            if tok.split(":")[0].endswith("vllm/vllm-openai"):
                return "vllm", i + j + 1
            if tok.split(":")[0].endswith("lmsysorg/sglang"):
                return _after_python(rest, j + 1, i)
    if rest[0].split("/")[-1] in ("vllm", "sglang") and len(rest) > 1 and rest[1] == "serve":
        return rest[0].split("/")[-1], i + 2
    if _PYTHON.match(rest[0]):
        return _after_python(rest, 1, i)
    raise PlanInputError("command", f"{rest[0][:40]!r} is not a serving command: paste a `vllm serve MODEL ...`, "
                                    "`python -m vllm.entrypoints.openai.api_server ...` or "
                                    "`python -m sglang.launch_server ...` line (or only its flags)")


def _after_python(rest: list[str], j: int, offset: int) -> tuple[str, int]:
    if j + 1 < len(rest) and rest[j] == "-m":
        module = rest[j + 1]
        if module.startswith("vllm.entrypoints"):
            return "vllm", offset + j + 2
        if module == "sglang.launch_server":
            return "sglang", offset + j + 2
    if j < len(rest) and _PYTHON.match(rest[j]):  # docker run IMAGE python3 -m ...
        return _after_python(rest, j + 1, offset)
    shown = " ".join(rest[: j + 2])[:60]
    raise PlanInputError("command", f"{shown!r} runs neither vllm.entrypoints nor sglang.launch_server")


def parse_command(command: str) -> Command:
    """The settings a serving command line plans with (see the module docstring)."""
    tokens = _split(command)
    kind, start = launcher(tokens)
    body = tokens[start:]
    if kind == "sglang":
        dp_attention = any(t.split("=")[0].replace("_", "-") == "--enable-dp-attention" for t in body)
        flags, mfs, extra = _sglang_as_vllm(body, dp_attention)
        typed = extra.pop("typed", {})
        try:
            args = parse_vllm_command(shlex.join(flags))
        except PlanInputError as exc:  # named as the line typed it: "--tp-size: ...", not --tensor-parallel-size
            raise sglang_refusal(exc, typed) from None
        notes, ignored = extra.pop("notes", ()), extra.pop("ignored", ())
        if notes or ignored:
            args = args.model_copy(update={"notes": args.notes + notes, "ignored": args.ignored + ignored})
        for tok in tokens[:start]:  # docker run lmsysorg/sglang:v0.5.6.post2-cu129 ...: that release's profile
            image, _, tag = tok.partition(":")
            if image.endswith("lmsysorg/sglang") and (m := re.match(r"v?(\d+\.\d+\.\d+(?:\.post\d+)?)", tag)):
                extra["sglang_version"] = sglang_profile_for_release(m.group(1))
        if (ep := extra.pop("ep_size", None)) is not None and ep[1] != args.tensor_parallel_size:
            raise PlanInputError(ep[0], f"{ep[1]} with --tp-size {args.tensor_parallel_size}: kvplan plans SGLang's "
                                 "expert parallelism over the whole TP group only (--ep-size 1, or equal to "
                                 "--tp-size); SGLang splits a narrower one into MoE DP groups (--ep-size x moe DP = "
                                 "--tp-size), which kvplan does not model")
        _sglang_env(launch_env(tokens)[0] | docker_env(tokens[:start]), mfs, extra)
        if extra.get("env_notes"):
            args = args.model_copy(update={"notes": args.notes + extra.pop("env_notes")})
        return Command(launcher=kind, args=args, engine="sglang", mem_fraction_static=mfs, **extra)
    # the launcher's tokens go along: its environment (VLLM_USE_V1=0, the sampler) and image tag are read from them
    return Command(launcher=kind, args=parse_vllm_command(shlex.join(body), prefix=tokens[:start]), engine="vllm")


def sglang_refusal(exc: PlanInputError, typed: dict[str, str]) -> PlanInputError:
    """vLLM's parser's refusal of an SGLang line's flag, naming the flag the line typed (``typed``: vLLM flag -> the
    SGLang flag it was read from, as ``_sglang_as_vllm`` records it), in the field and in the message.
    Worked example: ``--tp-size 0`` (read as --tensor-parallel-size 0) -> "--tp-size: must be from 1 to 4096, got 0"
    (it read "--tensor-parallel-size: ...": a flag the pasted line never had)."""
    field = typed.get(exc.field, exc.field)
    message = exc.message
    for vllm_flag, sglang_flag in typed.items():
        message = re.sub(re.escape(vllm_flag) + r"(?![\w-])", sglang_flag, message)
    return PlanInputError(field, message)


def sglang_spelling() -> dict[str, str]:
    """vLLM's flag -> SGLang's own, for the settings SGLang spells otherwise (SGLANG_FLAGS / SGLANG_SWITCHES read
    backwards): {"--max-model-len": "--context-length", "--max-num-seqs": "--max-running-requests", ...}."""
    own = {**SGLANG_FLAGS, **SGLANG_SWITCHES}
    return {vllm: sglang for sglang, vllm in reversed(own.items()) if vllm and vllm not in own}


def _sglang_env(env: dict[str, str], mfs: float | None, extra: dict) -> None:
    """The SGLang env assignments before the command kvplan reads: SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION (0.5.20+,
    environ.py EnvBool: true / 1 / yes / y in any case; anything else keeps False) -> the EngineConfig field; with
    --mem-fraction-static it keeps ROCm's aiter backend from scaling the fraction by 0.85 (kvplan.sglang.aiter_haircut).
    Apply carries it (PlanState field of the same name, link key 'aiter')."""
    if SGLANG_AITER_HONOR_ENV not in env:
        return
    value = env[SGLANG_AITER_HONOR_ENV]
    on = value.strip().lower() in SGLANG_ENV_TRUE
    extra["sglang_aiter_honor_explicit_mem_fraction"] = on
    why = ("on: with --mem-fraction-static SGLang 0.5.20+ keeps it as given on ROCm's aiter backend (no x 0.85)"
           if on and mfs is not None else
           "on, but no --mem-fraction-static: SGLang still scales its default by 0.85 on ROCm's aiter backend" if on
           else "not true / 1 / yes / y: SGLang reads it as False")
    extra["env_notes"] = (f"{SGLANG_AITER_HONOR_ENV}={value}: {why}",)


def _positive_int(name: str, value: str, top: int = 4096) -> int:
    try:
        n = int(value)
    except ValueError:
        raise PlanInputError(name, f"{value[:20]!r} is not a whole number") from None
    if not 1 <= n <= top:
        raise PlanInputError(name, f"{n}: must be from 1 to {top:,}")
    return n


def _ratio_value(name: str, value: str, top: float, why: str = "") -> float:
    """A float flag's value above 0 and at most ``top`` (NaN and inf refused too), else PlanInputError naming it."""
    try:
        ratio = float(value)
    except ValueError:
        raise PlanInputError(name, f"{value[:20]!r} is not a number") from None
    if not 0 < ratio <= top:  # also NaN / inf
        raise PlanInputError(name, f"{value[:20]}: must be above 0 and at most {top:g}{why}")
    return ratio


def _one_of(name: str, value: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise PlanInputError(name, f"{value[:20]!r}: one of {', '.join(choices)}")
    return value


# SGLang flags of one value kvplan reads into Command fields: flag -> (field, read(flag, value) -> the field's value,
# refusing a bad one naming the flag); kvplan.vllm_args._VALUE_FLAGS's shape. A missing value is refused ("needs a
# value"). read None: carried as given into Command.unplanned (the MambaPool strategy flags: MAMBA_STRATEGY_NOTE).
SGLANG_VALUE_FLAGS: dict[str, tuple[str, Callable[[str, str], Any] | None]] = {
    "--mem-fraction-static": ("mem_fraction_static", fraction),
    # the hybrid SWA pools: (0, 1] as SGLang checks it (server_args.py / kv_cache_hook.py: "--swa-full-tokens-ratio
    # should be in range (0, 1.0]")
    "--swa-full-tokens-ratio": ("swa_full_tokens_ratio",
                                lambda f, v: _ratio_value(f, v, 1, " (SGLang's range (0, 1.0])")),
    # a hybrid's MambaPool (server_args.py 0.5.4+; EngineConfig fields of the same names and bounds,
    # kvplan.sglang.mamba_pool; SGLang: type=float / int, --mamba-ssm-dtype choices MAMBA_SSM_DTYPES)
    "--mamba-full-memory-ratio": ("mamba_full_memory_ratio", lambda f, v: _ratio_value(f, v, 1000)),
    "--max-mamba-cache-size": ("max_mamba_cache_size", lambda f, v: _positive_int(f, v, 10_000_000)),
    "--mamba-ssm-dtype": ("mamba_ssm_dtype", lambda f, v: _one_of(f, v, MAMBA_SSM_DTYPES)),
    **{flag: ("unplanned", None) for flag in sorted(SGLANG_MAMBA_STRATEGY)},
    # 0.5.14+: breakable / tc_piecewise -> enforce, disabled -> disable (explicit: no auto-disable)
    "--cuda-graph-backend-prefill": ("piecewise_cuda_graph", lambda f, v: "disable" if _one_of(
        f, v, PREFILL_BACKENDS) == "disabled" else "enforce"),
    "--moe-dense-tp-size": ("moe_dense_tp_size", _positive_int),
    "--max-total-tokens": ("max_total_tokens", lambda f, v: _positive_int(f, v, 10**12)),  # server_args.py: type=int
}
SGLANG_DP_ATTENTION = ("dp_attention_size", _positive_int)  # SGLANG_DP's entry with --enable-dp-attention


def _sglang_as_vllm(tokens: list[str], dp_attention: bool = False) -> tuple[list[str], float | None, dict]:
    """vLLM-equivalent flags, --mem-fraction-static, and the SGLang-only fields (SGLANG_SWITCH_FIELDS,
    SGLANG_VALUE_FLAGS: dp_attention_size, moe_dense_tp_size, max_total_tokens, the MambaPool's flags,
    --disable-radix-cache, ...; the speculative method and steps; ``unplanned``: the --speculative-* flags kvplan does
    not read, and the MambaPool strategy flags, which kvplan does not plan; ``typed``: each vLLM flag written -> the
    SGLang flag it was read from). With --enable-dp-attention, --dp /
    --dp-size is the attention-DP size inside the TP group (server_args.py: tp_size % dp_size == 0), not a count of
    replicas."""
    out: list[str] = []
    typed: dict[str, str] = {}  # vLLM flag -> the SGLang flag it was read from (sglang_refusal names the latter)
    extra: dict = {"typed": typed}
    speculative: dict[str, str] = {}
    i = 0

    def take(name: str, eq: str, inline: str, needed: bool = True) -> str | None:
        """The flag's value: inline (``--flag=V``) or the next word, whatever it is; None at the line's end
        (refused when ``needed``)."""
        nonlocal i
        if eq:
            return inline
        value = tokens[i] if i < len(tokens) else None
        i += 1
        if value is None and needed:
            raise PlanInputError(name, "needs a value")
        return value

    while i < len(tokens):
        tok = tokens[i]
        i += 1
        name, eq, inline = tok.partition("=")
        name = "--" + name[2:].replace("_", "-") if name.startswith("--") else name
        if name in SGLANG_SWITCHES:
            if SGLANG_SWITCHES[name]:
                out.append(SGLANG_SWITCHES[name])
                typed[SGLANG_SWITCHES[name]] = name
            if name == "--enable-ep-moe":
                extra["notes"] = extra.get("notes", ()) + (ENABLE_EP_MOE_NOTE,)
        elif name in SGLANG_SWITCH_FIELDS:
            field, on = SGLANG_SWITCH_FIELDS[name]
            extra[field] = on
        elif name == MULTI_LAYER_EAGLE:  # changes the draft's pools: named, not planned (views.unplanned_flags)
            extra["unplanned"] = extra.get("unplanned", ()) + (tok,)
        elif name in SGLANG_VALUE_FLAGS or (dp_attention and name in SGLANG_DP):
            field, read = SGLANG_VALUE_FLAGS.get(name, SGLANG_DP_ATTENTION)
            value = take(name, eq, inline)
            if read is None:
                extra["unplanned"] = extra.get("unplanned", ()) + (tok if eq else f"{tok} {value}",)
            else:
                extra[field] = read(name, value)
        elif name in SGLANG_NO_MEMORY_SWITCHES:
            extra["ignored"] = extra.get("ignored", ()) + (tok,)
        elif name in SGLANG_READ_NOT_PLANNED:
            arity, why = SGLANG_READ_NOT_PLANNED[name]
            words = [inline] if eq else []
            while not eq and i < len(tokens) and not tokens[i].startswith("-") and (arity == "M" or not words):
                words.append(tokens[i])
                i += 1
            if not words:
                raise PlanInputError(name, f"needs {'one or more whole numbers' if arity == 'M' else 'a whole number'}"
                                           f": write it as {name} N")
            for word in words:
                _positive_int(name, word, 1_000_000)  # server_args.py: type=int
            shown = tok if eq else f"{tok} {' '.join(words)}"
            extra["notes"] = extra.get("notes", ()) + (f"{shown}: read, not planned: {why}",)
        elif name in SGLANG_EP:  # an expert-parallel width above 1: experts placed whole (vLLM's switch)
            width = _positive_int(name, take(name, eq, inline) or "", 4096)  # server_args.py: type=int
            if width > 1:
                out.append("--enable-expert-parallel")
                extra["ep_size"] = (name, width)
        elif name.startswith("--speculative"):  # --speculative-algorithm NEXTN / EAGLE, --speculative-num-steps, ...
            value = inline if eq else (tokens[i] if i < len(tokens) and not tokens[i].startswith("-") else None)
            if not eq and value is not None:
                i += 1
            name = SGLANG_SPECULATIVE_ABBREV.get(name, name)
            if name in ("--speculative-algorithm", "--speculative-num-steps", SGLANG_DRAFT_PATH,
                        *SGLANG_SPECULATIVE_READ):
                if value is None:
                    raise PlanInputError(name, "needs a value")
                speculative[name] = value
            else:
                extra["unplanned"] = extra.get("unplanned", ()) + (tok if value is None or eq else f"{tok} {value}",)
        elif name == "--chunked-prefill-size" and (inline if eq else (tokens[i] if i < len(tokens) else "")) == "-1":
            take(name, eq, inline)
            extra["unplanned"] = extra.get("unplanned", ()) + (f"{name} -1",)
        elif name in SGLANG_FLAGS:
            value = take(name, eq, inline)
            if SGLANG_FLAGS[name] is None:
                out.insert(0, value)  # the model: vLLM's positional argument
                extra["model_path"] = value
            else:
                out += [SGLANG_FLAGS[name], value]
                typed[SGLANG_FLAGS[name]] = name
        else:
            out.append(tok)  # vLLM's parser lists it as unknown (or reads a flag both engines share)
            if name.startswith("--"):
                extra["vllm_spelled"] = extra.get("vllm_spelled", ()) + (name,)
    extra |= _sglang_speculative(speculative, extra, extra.pop("model_path", None))
    return out, extra.pop("mem_fraction_static", None), extra


def _sglang_speculative(flags: dict[str, str], extra: dict, model: str | None = None) -> dict:
    """speculative_method / num_speculative_tokens from an SGLang line's --speculative-* flags (``flags``: flag ->
    value), with notes for the ones read and not planned. No --speculative-algorithm: SGLang runs no speculative
    decoding and the other flags do nothing (said so). An algorithm SGLang has no such name for is refused; one kvplan
    does not plan is carried, and the core refuses it naming the flag (kvplan.sglang.speculative_refusal)."""
    if not flags:
        return {}
    numbers = {name: _positive_int(name, flags[name], 1_000_000) for name in ("--speculative-num-steps",
                                                                               *SGLANG_SPECULATIVE_READ) if name in flags}
    algorithm = flags.get("--speculative-algorithm")
    notes = list(extra.get("notes", ()))
    if algorithm is None:
        notes += [f"{name} {value}: no effect: SGLang runs no speculative decoding without --speculative-algorithm"
                  for name, value in flags.items()]
        return {"notes": tuple(notes)}
    method = SGLANG_SPECULATIVE_ALGORITHMS.get(algorithm.upper())
    if method is None:  # DFLASH, DSPARK, FROZEN_KV_MTP (0.5.20+), a plugin's, or no SGLang name at all
        raise PlanInputError("--speculative-algorithm", f"{algorithm[:20]!r}: not modelled: kvplan plans SGLang's "
                             "NEXTN / EAGLE on the checkpoint's own MTP layers and NGRAM")
    draft = flags.get(SGLANG_DRAFT_PATH)
    # the target's own checkpoint as its draft: SGLang serves its MTP layers (configs/model_config.py renames a draft
    # DeepseekV3ForCausalLM / Glm4MoeForCausalLM ... to its NextN class), as without the flag
    own = draft is not None and model is not None and draft.rstrip("/").lower() == model.rstrip("/").lower()
    if algorithm.upper() == "EAGLE" and draft is not None and "nextn" not in draft.lower() and not own:
        method = "eagle"  # a draft checkpoint of its own: refused by the core, naming the flag
    drafter = None
    if method == "standalone":  # vLLM's draft_model: a draft LM kvplan has a preset of (kvplan.draft_model)
        from kvplan.draft_model import draft_preset_name

        if draft is None:
            raise PlanInputError(SGLANG_DRAFT_PATH, "STANDALONE needs its draft model: give "
                                 f"{SGLANG_DRAFT_PATH} (a preset kvplan ships, e.g. meta-llama/Llama-3.2-1B-Instruct)")
        preset = draft_preset_name(draft)
        if preset is None:
            raise PlanInputError(SGLANG_DRAFT_PATH, f"{draft[:120]!r}: kvplan ships no preset for this draft model "
                                 "(a preset name or its HF repo, e.g. meta-llama/Llama-3.2-1B-Instruct); plan its "
                                 "config.json with the CLI (kvplan plan ... --engine sglang --speculative-algorithm "
                                 "STANDALONE --draft-config PATH)")
        method, drafter = "draft_model", preset
    if method == "eagle3":  # its head: one kvplan ships (DRAFTERS.json), by name or HF repo
        from kvplan.drafter import drafter_for_model, drafter_manifest

        known = ", ".join(r for e in drafter_manifest() if e["method"] == "eagle3" for r in e["hf_repos"][:1])
        if draft is None:
            raise PlanInputError(SGLANG_DRAFT_PATH, f"EAGLE3 needs its draft head: give {SGLANG_DRAFT_PATH} (kvplan "
                                 f"ships {known})")
        entry = drafter_for_model(draft)
        if entry is None or entry["method"] != "eagle3":
            raise PlanInputError(SGLANG_DRAFT_PATH, f"{draft[:120]!r}: kvplan ships no config for this EAGLE3 head "
                                 f"(it ships {known}); plan its config.json with the CLI (kvplan plan ... --engine "
                                 "sglang --speculative-config '{\"method\": \"eagle3\", ...}' --draft-config PATH)")
        drafter = entry["name"]
    steps = numbers.get("--speculative-num-steps")
    if steps is not None and steps > 64:
        raise PlanInputError("--speculative-num-steps", f"{steps}: kvplan plans 1 to 64 draft steps")
    if draft is not None and method == "mtp":
        notes.append(f"{SGLANG_DRAFT_PATH} {draft}: " + ("the target's own checkpoint: its MTP layers planned" if own else
                     "the exported NextN (MTP) layer: planned as the checkpoint's own MTP layers (the same weights and "
                     "KV)"))
    # D as SGLang resolves it: EAGLE / NEXTN with top-k 1 (given) take steps + 1, which the core derives (None); without
    # --speculative-num-steps SGLang picks (3, 1, 4) itself (steps + 1 again); otherwise the flag as given
    topk, given = numbers.get("--speculative-eagle-topk"), numbers.get("--speculative-num-draft-tokens")
    derived = method not in ("ngram", "standalone", "draft_model") and (topk == 1 or steps is None)
    draft_tokens = None if derived else given
    if "--speculative-eagle-topk" in flags:
        notes.append(f"--speculative-eagle-topk {flags['--speculative-eagle-topk']}: {SPECULATIVE_READ_NOTE}")
    if given is not None:
        reset = derived and steps is not None and given != steps + 1
        notes.append(f"--speculative-num-draft-tokens {flags['--speculative-num-draft-tokens']}: " + (
            DRAFT_TOKENS_RESET_NOTE.format(d=steps + 1) if reset else DRAFT_TOKENS_NOTE))
    if steps is None:
        notes.append(f"{SGLANG_STEPS_DEFAULT_NOTE} " + (
            "(--speculative-num-draft-tokens // --speculative-ngram-max-bfs-breadth: 12 // 10 = 1 with SGLang's "
            "defaults); NGRAM's pool does not depend on it" if method == "ngram" else
            "(5 for a LlamaForCausalLM target with EAGLE3, else 3: _auto_choose_speculative_params)"))
    default = SGLANG_DEFAULT_NUM_STEPS
    if drafter and method == "eagle3":  # a Llama target: SGLang's (5, 4, 8) (kvplan.sglang.auto_speculative_params)
        from kvplan.presets import preset_config
        from kvplan.sglang import auto_speculative_params

        archs = preset_config(entry["target"]).get("architectures") or [None]  # the head's DRAFTERS.json entry
        default = auto_speculative_params(method, archs[0])[0]
    out = {"speculative_method": method, "num_speculative_tokens": steps or default, "notes": tuple(notes),
           "speculative_algorithm": algorithm.upper(), "speculative_eagle_topk": topk}
    out |= {"speculative_num_draft_tokens": draft_tokens} if draft_tokens else {}
    return out | ({"drafter": drafter} if drafter else {})
