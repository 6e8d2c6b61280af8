"""The framework's floor: a bare one-widget Streamlit page (``bench/page_floor.py`` serves it beside the app)."""

import streamlit as st

x = st.number_input("TP", min_value=1, max_value=4096, value=1, step=1, key="x")
st.write(f"value: {x}")
