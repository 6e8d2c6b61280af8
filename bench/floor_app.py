"""The framework's floor: a bare one-widget Streamlit page (``bench/page_floor.py`` serves it beside the app).

``?n=N`` adds N-2 captions (N elements in all): the floor for a page of N elements, which is what
Streamlit itself charges per element (each one is its own message to the browser).
"""

import streamlit as st

x = st.number_input("TP", min_value=1, max_value=4096, value=1, step=1, key="x")
st.write(f"value: {x}")
for i in range(max(int(st.query_params.get("n", "2")) - 2, 0)):
    st.caption(f"line {i}: {x}")
