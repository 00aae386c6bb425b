"""perfmodel explorer: `streamlit run app.py` (the pages live in perfmodel/explorer/)."""

import streamlit as st

st.set_page_config(page_title="perfmodel explorer", page_icon=":bar_chart:", layout="wide")

from perfmodel.explorer import main  # noqa: E402 (Streamlit wants its page set up before anything else)

main()
