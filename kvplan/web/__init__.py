"""The Streamlit app's layer: the only part of kvplan that imports streamlit and plotly.

- ``state``: the plan's inputs <-> a shareable link (pure; no streamlit).
- ``hub``: fetch one config.json from the Hugging Face Hub or a mirror (huggingface_hub).
- ``checkpoint`` / ``checkpoint_view``: weights from safetensors headers (local folder or Hub), per rank.
- ``cached``: the kvplan calls pages make, behind ``st.cache_resource``.
- ``widgets``: the link-backed state, the shared sidebar, the page links and the share box.
- ``shell``: the app frame ``app.py`` runs (and the guard each page starts with).
- ``figures`` / ``formulas``: pure builders of plotly figures and LaTeX from kvplan results.
- ``views``: Streamlit render helpers and the tables they show.
- ``commands``: the Import page's command line (vllm serve / vllm.entrypoints / sglang.launch_server).
"""

# The heavy modules are imported here, once, while this package's import lock is held. On a fresh server
# many sessions start at once; script threads importing pandas / plotly / numpy in different orders (a
# page's st.dataframe in one, kvplan.web.figures in another) can otherwise be handed a partially
# initialised module: "AttributeError: partially initialized module 'pandas' has no attribute 'Series'".
# Every page and app.py imports kvplan.web first, so every session waits here, holding no other lock.
import numpy  # noqa: E402, F401
import pandas  # noqa: E402, F401
import plotly.graph_objects  # noqa: E402, F401
import streamlit  # noqa: E402, F401
