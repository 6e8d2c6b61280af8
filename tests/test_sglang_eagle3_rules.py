"""SGLang's rules for a separate draft (--speculative-algorithm EAGLE3 / STANDALONE with --speculative-draft-model-path),
read in the sglang 0.5.14 / 0.5.20 / 0.5.23 wheels (2026-12; kvplan.sglang eagle_cell_bytes_per_token and neighbours),
and what is still refused naming the flag (the plan itself: tests/test_sglang_eagle3_plan.py)."""

import pytest

from kvplan.errors import PlanInputError
from kvplan.sglang import (eagle3_resident_copy_bytes, eagle_cell_bytes_per_token, eagle_draft_layers,
                           speculative_refusal)


def test_cell_scaled_by_draft_layers_truncated_as_the_engine_does():
    # Llama-3.1-8B bf16: 32 layers x 8 KV heads x 128 x 2 (K, V) x 2 B = 131,072 B; + 1 EAGLE3 layer:
    # int(131,072 x (1 + 1/32)) = 131,072 x 1.03125 = 135,168 (exact in binary)
    assert eagle_cell_bytes_per_token(131_072, 32, 1) == 135_168
    # Llama-3.2-1B as a STANDALONE draft (16 layers): int(131,072 x 1.5) = 196,608, twice the draft's own
    # 16 x 8 x 64 x 2 x 2 = 32,768 B a token (SGLang assumes a draft layer costs a target layer)
    assert eagle_cell_bytes_per_token(131_072, 32, 16) == 196_608
    # 47 layers of 4,096 B + 1: 192,512 x (1 + 1/47) is 196,607.99.. in floating point -> int() gives 196,607,
    # one byte under the exact 48 x 4,096 = 196,608 (the engine's int(cell x (1 + d / L)))
    assert eagle_cell_bytes_per_token(47 * 4096, 47, 1) == 196_607
    assert eagle_cell_bytes_per_token(131_072, 32, 0) == 131_072  # no draft layers: the target's cell


def test_draft_layer_count_from_its_config():
    assert eagle_draft_layers({"num_hidden_layers": 1}) == 1  # an EAGLE3 head
    assert eagle_draft_layers({"num_hidden_layers": 61, "num_nextn_predict_layers": 1}) == 1  # nextn first
    assert eagle_draft_layers({"num_hidden_layers": 16}) == 16  # Llama-3.2-1B STANDALONE
    with pytest.raises(PlanInputError) as exc:
        eagle_draft_layers({"num_hidden_layers": "one"})
    assert exc.value.field == "draft_config.num_hidden_layers"
    with pytest.raises(PlanInputError):
        eagle_draft_layers({})


def test_eagle3_head_vocab_copies_resident_while_the_pool_is_sized():
    # Llama-3.1-8B's EAGLE3 head (vocab 128,256 = 2,004 x 64, h 4,096, draft_vocab_size 32,000): its own embed_tokens
    # only: 128,256 x 4,096 x 2 = 1,050,673,152 B at TP 1; at TP 2: 64,128 x 4,096 x 2 = 525,336,576 B
    assert eagle3_resident_copy_bytes(128_256, 4096, 1, has_draft_vocab=True) == 1_050_673_152
    assert eagle3_resident_copy_bytes(128_256, 4096, 2, has_draft_vocab=True) == 525_336_576
    # no draft_vocab_size: a full-vocab lm_head too (load_lm_head_from_target), 2 x 1,050,673,152
    assert eagle3_resident_copy_bytes(128_256, 4096, 1, has_draft_vocab=False) == 2_101_346_304
    # Qwen3 vocab 151,936 = 2,374 x 64 at TP 4: 37,984 x 4,096 x 2 = 311,164,928 B
    assert eagle3_resident_copy_bytes(151_936, 4096, 4, has_draft_vocab=True) == 311_164_928


def test_the_docs_eagle3_command_names_a_head_kvplan_has_no_config_for():
    # sgl-project/sglang docs/advanced_features/speculative_decoding.ipynb (commit 0e13a7409b795620fc55ed9d3530219ca742cab1),
    # "EAGLE-3 Decoding" cell, verbatim: its head (jamesliu1/...) is not one kvplan ships, so the draft path is refused
    # naming the heads it ships; the same line with a shipped head is planned (tests/test_sglang_eagle3_plan.py)
    from kvplan.web.commands import parse_command

    line = ("python3 -m sglang.launch_server --model meta-llama/Llama-3.1-8B-Instruct  --speculative-algorithm "
            "EAGLE3 --speculative-draft-model-path jamesliu1/sglang-EAGLE3-Llama-3.1-Instruct-8B "
            "--speculative-num-steps 5 --speculative-eagle-topk 8 --speculative-num-draft-tokens 32 "
            "--mem-fraction 0.6 --cuda-graph-max-bs 2 --dtype float16")
    with pytest.raises(PlanInputError) as exc:
        parse_command(line)
    assert exc.value.field == "--speculative-draft-model-path"
    assert "lmsys/sglang-EAGLE3-LLaMA3.1-Instruct-8B" in exc.value.message
    cmd = parse_command(line.replace("jamesliu1/sglang-EAGLE3-Llama-3.1-Instruct-8B",
                                     "lmsys/sglang-EAGLE3-LLaMA3.1-Instruct-8B"))
    assert (cmd.speculative_method, cmd.num_speculative_tokens, cmd.drafter) == ("eagle3", 5, "eagle3-llama3.1-8b")
    field, message = speculative_refusal("0.5.20", "draft_model", 2)  # STANDALONE under DP attention: SGLang refuses it
    assert field == "--speculative-algorithm" and "STANDALONE" in message
