"""The third audit of the web app (an ML platform engineer who reads vLLM's start-up log line by line): the
Budget's pool formula subtracts what the release subtracts (the V2 sampler state was missing, so the shown
numbers did not add up to the pool), the engine's own start-up lines are on the Budget and Import pages,
captions name the engine's release line (not a bare "engine vllm"), SGLang figures are not called vLLM's,
SGLang's paging has bytes, and a refused local checkpoint is never called the planned one."""

from kvplan.units import GiB
from kvplan.web import formulas, views
from tests.app_util import kvplan_plan, plain, run_app

LOG_TITLE = "What vLLM 0.33 logs at start-up"


def _pool_words(latex: str) -> list[str]:
    """The terms the pool formula subtracts, in order: '\\text{pool} &= \\text{requested} - \\text{a} - ...\\\\'."""
    line = latex.split(r"\text{pool} &= \text{requested}")[1].split(r"\\")[0]
    return [w.split("}")[0] for w in line.split(r" - \text{")[1:]]


def test_the_pool_formula_subtracts_the_v2_sampler_state_and_adds_up():
    # Llama-3.1-8B on an H100, vLLM 0.33 (V2 model runner): 72.85 - 14.99 - 0.98 - 0.25 - 0.52 - 0.71 = 55.41 GiB.
    # Before: "- 0.25 - 0.71 = 55.41" with the 0.52 GiB V2 sampler state (558,170,112 B) left out: 0.51 GiB short.
    p = kvplan_plan("llama-3.1-8b")
    latex = formulas.budget_formulas(p)[0][1]
    assert _pool_words(latex) == ["weights", "activations", "non-torch", "V2 sampler state", "CUDA graphs"]
    assert r"- 0.52\,\text{GiB} - 0.71\,\text{GiB} = 55.41\,\text{GiB}" in latex
    rank = p.ranks[0]
    subtracted = [t.bytes for t in rank.terms if t.applied and not t.name.startswith(("device", "outside"))]
    outside = next(t.bytes for t in rank.terms if t.name.startswith("outside the budget"))
    assert rank.device_bytes - outside - sum(subtracted) == rank.kv_pool_bytes == 59_492_526_864
    assert next(t.bytes for t in rank.terms if t.name.startswith("V2 sampler state")) == 558_170_112


def test_a_cuda_graph_estimate_the_release_does_not_subtract_is_not_in_the_formula():
    # vLLM 0.23 (V2 for Llama, no graph estimate through 0.28.0): 72.85 - 14.99 - 0.98 - 0.25 = 56.64 GiB; the
    # graphs (0.71 GiB, "not subtracted" in the table) were shown as "- 0.00 GiB".
    latex = formulas.budget_formulas(kvplan_plan("llama-3.1-8b", vllm_version="0.23"))[0][1]
    assert _pool_words(latex) == ["weights", "activations", "non-torch"]
    assert r"- 0.25\,\text{GiB} = 56.64\,\text{GiB}" in latex and "0.00" not in latex


def test_budget_shows_the_start_up_log_with_its_release_and_model_runner():
    at = run_app({"v": "1"})
    assert LOG_TITLE in [s.value for s in at.subheader]
    log = at.code[0].value.splitlines()
    # 55.41 GiB / (32 layers x 65,536 B) = 28,368 blocks; 28,368 / 8,192 blocks per request x 131,072 = 453,888
    assert log == ["Model loading took 14.99 GiB", "Estimated CUDA graph memory: 0.71 GiB total",
                   "Available KV cache memory: 55.41 GiB",
                   "GPU KV cache size: 453,888 tokens, Maximum concurrency for 131,072 tokens per request: 3.46x",
                   "num_gpu_blocks is: 28368"]
    assert any("the V2 GPU model runner" in c.value for c in at.caption)
    # the caption over the metrics names the release, not a bare "engine vllm"
    assert "vLLM 0.33, context 131,072 tokens" in plain(at.caption[0].value)


def test_a_release_before_the_v2_runner_says_v1_and_its_caption_says_v0():
    at = run_app({"v": "1", "vv": "0.22"})  # 0.22.0 runs V2 for Qwen3 only: Llama stays on V1
    assert any("the V1 GPU model runner" in c.value for c in at.caption)
    at = run_app({"v": "1", "vv": "0.7"})
    assert "vLLM 0.7 (V0 engine), context" in plain(at.caption[0].value)
    assert "What vLLM 0.7 (V0 engine) logs at start-up" in [s.value for s in at.subheader]
    assert not any("model runner" in c.value for c in at.caption)  # V0 has no V1 / V2 runner


def test_a_failed_start_log_ends_with_the_engines_error():
    # Gemma-3-27B text-only on one H100 at 131,072 tokens: 17.98 GiB of KV needed, 17.62 GiB available
    at = run_app({"v": "1", "m": "gemma-3-27b-it", "lmo": "1"})
    log = at.code[0].value.splitlines()
    assert log[2] == "Available KV cache memory: 17.62 GiB"
    assert log[-1].startswith("ValueError: To serve at least one request with the models's max seq len (131072)")


def test_weights_larger_than_the_gpu_log_no_figures():
    # Llama-3.1-405B on one H100: 755.99 GiB of weights on a 79.19 GiB GPU never get to "Model loading took"
    at = run_app({"v": "1", "m": "llama-3.1-405b"})
    assert not at.code
    assert any(c.value.startswith("No start-up figures: the weights of one GPU (755.99 GiB) are more than its "
                                  "memory (79.19 GiB)") for c in at.caption)


def test_an_sglang_plan_logs_sglangs_lines_and_names_its_release():
    at = run_app({"v": "1", "m": "llama-3.1-70b", "tp": "4", "e": "sglang"})
    assert "What SGLang 0.5.20 logs at start-up" in [s.value for s in at.subheader]
    assert "KV Cache is allocated. dtype: torch.bfloat16, #tokens: 401621" in at.code[0].value
    assert "SGLang 0.5.20, context 131,072 tokens" in plain(at.caption[0].value)


def test_import_shows_the_commands_start_up_log():
    at = run_app({"v": "1", "cmd": "vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 32768",
                  "ig": "H100-SXM"}, "pages/import.py")
    assert LOG_TITLE in [s.value for s in at.subheader]
    assert "Maximum concurrency for 32,768 tokens per request" in at.code[0].value


def test_parallelism_and_gpus_name_the_release_line():
    at = run_app({"v": "1", "m": "llama-3.1-70b", "tp": "4", "e": "sglang"}, "pages/parallelism.py")
    assert "context 131,072 tokens, SGLang 0.5.20." in plain(at.caption[0].value)
    at = run_app({"v": "1", "vv": "0.23"}, "pages/gpus.py")
    assert "(llama-3.1-8b, vLLM 0.23)" in plain(at.caption[0].value)


def test_sglang_layout_headings_do_not_call_its_figures_vllms():
    helps = {c.key: c.help for c in views.layout_columns("sglang")}
    assert "SGLang" in helps["max concurrency per replica"] and "vLLM" not in helps["max concurrency per replica"]
    assert "vLLM" not in helps["KV blocks"]
    assert views.layout_columns("vllm") is views.LAYOUT_COLUMNS
    at = run_app({"v": "1", "m": "llama-3.1-70b", "tp": "4", "e": "sglang"}, "pages/parallelism.py")
    table = next(h.proto.body for h in at.get("html") if "kv-table" in h.proto.body and "layout" in h.proto.body)
    assert "SGLang&#x27;s &#x27;#tokens&#x27;" in table and "vLLM&#x27;s num_gpu_blocks" not in table


def test_sglang_paging_has_bytes():
    # Llama-3.1-70B at TP 4 on SGLang: 80 layers x (K + V) x 2 KV heads per rank x 128 x 2 B = 81,920 B per token
    # (page size 1); the 8 default sequences take 1,092 tokens = 89,456,640 B = 85.31 MiB, no slot empty.
    # Before: "blocks of 1 tokens; bytes are shown only at that size", and no bytes.
    at = run_app({"v": "1", "m": "llama-3.1-70b", "tp": "4", "e": "sglang"}, "pages/paging.py")
    assert at.caption[0].value == "At 81,920 B per block (tightest rank of the plan): 85.31 MiB allocated, 0 B of it " \
                                  "in empty slots."
    assert 1_092 * 81_920 / 2**20 == 85.3125
    # a vLLM hybrid grows --block-size 16 to its state page (Qwen3.5-27B: 784): the Paging page pages at 16, and says
    # that the plan's bytes are per 784-token block
    at = run_app({"v": "1", "m": "qwen3.5-27b", "bs": "16"}, "pages/paging.py")
    assert "The plan pages KV in blocks of 784 tokens (this page: 16); bytes are shown only at the plan's size." in \
        [c.value for c in at.caption]


def test_a_refused_local_folder_is_not_called_the_planned_weights(tmp_path, monkeypatch):
    monkeypatch.setenv("KVPLAN_CHECKPOINT_ROOT", str(tmp_path))
    at = run_app({"v": "1", "ckd": "../../etc"}, "pages/model.py")
    said = [plain(c.value) for c in at.caption]
    assert not any(s.startswith("The plan budgets the weights of the local folder") for s in said), said
    assert any(s.startswith("The plan budgets computed weights (kvplan's shard sums), not the local folder ../../etc: "
                            "its safetensors headers cannot be read") for s in said), said
    assert any("Refused: Local checkpoint folder (ckd)" in plain(e.value) for e in at.error)


def test_gib_of_the_formula_numbers():  # the hand numbers above, in GiB (2^30 B)
    assert f"{59_492_526_864 / GiB:.2f}" == "55.41" and f"{558_170_112 / GiB:.2f}" == "0.52"
