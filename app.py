"""perfmodel explorer: `streamlit run app.py` (the pages live in perfmodel/explorer/)."""

import sys

try:
    import streamlit as st
except ImportError:  # the 'app' extra: one line, not a traceback
    from perfmodel.core.extras import message

    sys.exit(f"perfmodel explorer: {message('streamlit')}")

st.set_page_config(page_title="perfmodel explorer", page_icon=":bar_chart:", layout="wide")

from perfmodel.explorer import main  # noqa: E402 (Streamlit wants its page set up before anything else)

main()
