"""SGLang plans in SGLang's words: the draft selector's help names SGLang's --speculative-draft-model-path and its own
token-to-KV pool (vLLM's names --speculative-config and the KV groups), and the Paging page's caption for DeepSeek-V4,
whose cache no group pages as the page draws, names SGLang's DSV4 pools (kvplan.sglang_dsv4: SWA, compressed and
indexer pools, one "full token" over them) where vLLM's names its KV groups."""

from tests.app_util import plain, run_app

EAGLE3 = {"v": "1", "m": "gpt-oss-120b", "g": "H200", "spec": "eagle3", "nspec": "3", "dft": "eagle3-gpt-oss-120b"}
DRAFT_LM = {"v": "1", "m": "llama-3.1-8b", "spec": "draft_model", "dft": "llama-3.2-1b"}


def draft_help(params: dict) -> str:
    at = run_app(params)
    at.session_state["kv.knobs"] = True
    at.run()
    assert not at.exception
    return at.selectbox(key="w.drafter").proto.help


def test_the_draft_head_help_names_the_engines_flag_and_cache():
    sglang, vllm = draft_help({**EAGLE3, "e": "sglang"}), draft_help(EAGLE3)
    assert sglang.startswith("--speculative-draft-model-path (EAGLE3): the heads kvplan/presets/DRAFTERS.json ships")
    assert "keeps its own token-to-KV pool" in sglang
    # EAGLE (1) on SGLang: no shipped head, the CLI named (qa15)
    assert sglang.endswith("EAGLE (1): kvplan ships no head; plan one from its config.json with the CLI (kvplan plan "
                           "... --draft-config PATH)")
    assert "--speculative-config" not in sglang and "KV groups" not in sglang
    assert vllm.startswith("--speculative-config model (eagle / eagle3): the heads")
    assert "its attention layers join the KV groups" in vllm and "SGLang" not in vllm


def test_the_draft_model_help_names_the_engines_flag_and_cache():
    sglang, vllm = draft_help({**DRAFT_LM, "e": "sglang"}), draft_help(DRAFT_LM)
    assert sglang.startswith("--speculative-draft-model-path (STANDALONE): presets of this model's vocabulary")
    assert "prices its layers as target layers into each token's cell" in sglang and "KV groups" not in sglang
    assert vllm.startswith("--speculative-config model (draft_model): presets") and "join the KV groups" in vllm


def paging_captions(params: dict) -> list[str]:
    at = run_app(params, page="pages/paging.py")
    # the default block size: the plan's own page (DeepSeek-V4: 256 tokens on either engine)
    assert not at.exception
    return [plain(c.value) for c in at.caption]


def test_deepseek_v4_paging_caption_names_sglangs_pools_and_vllms_kv_groups():
    v4 = {"v": "1", "m": "deepseek-v4-flash", "g": "H200", "tp": "4"}
    sglang = [c for c in paging_captions({**v4, "e": "sglang"}) if "Budget page" in c]
    # 2 SWA-only + 21 CSA + 20 HCA layers = 43, each with its SWA pool (kvplan.sglang_dsv4)
    assert len(sglang) == 1 and "SGLang keeps DeepSeek-V4's cache in its DSV4 pools, not in KV groups: every one of " \
        "the 43 layers' sliding-window (SWA) pool" in sglang[0], sglang
    assert "KV groups (" not in sglang[0]
    vllm = [c for c in paging_captions(v4) if "KV groups" in c]
    # vLLM's hybrid allocator (kvplan.vllm_dsv4): 1 MLA group + 4 sliding-window groups
    assert len(vllm) == 1 and "The plan has 5 KV groups (1 mla, 4 sliding_attention)" in vllm[0], vllm
    assert "SGLang" not in vllm[0] and "DSV4 pools" not in vllm[0]
