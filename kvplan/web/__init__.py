"""The Streamlit app's layer: the only part of kvplan that imports streamlit and plotly.

- ``state``: the plan's inputs <-> a shareable link (pure; no streamlit).
- ``hub``: fetch one config.json from the Hugging Face Hub or a mirror (urllib only).
- ``cached``: the kvplan calls pages make, behind ``st.cache_data``.
- ``widgets``: the link-backed state, the shared sidebar, the page links and the share box.
- ``shell``: the app frame ``app.py`` runs (and the guard each page starts with).
- ``figures`` / ``formulas``: pure builders of plotly figures and LaTeX from kvplan results.
- ``views``: Streamlit render helpers and the tables they show.
"""
