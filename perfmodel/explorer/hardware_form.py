"""The explorer's custom-hardware form: rates, HBM, links, power and price entered from a catalogue system's
values, written as a chip and a system file (report.custom_hardware, checked by the catalogue's loaders) and
chosen as the sidebar's hardware; the files can be downloaded for `--hardware FILE` on the command line.

Does not: compute model quantities.
"""

from __future__ import annotations

import dataclasses

import streamlit as st

from perfmodel.report import custom_hardware, uploads
from perfmodel.report import url_state as us


def take_pending() -> None:
    """A machine the form made on the last run becomes the sidebar's hardware (before its selectbox exists)."""
    ref = st.session_state.pop("_pending_system", None)
    if ref:
        st.session_state["system"] = ref


def form(systems: list[str]) -> None:
    """The form, in the sidebar's 'Bring your own' expander (module doc)."""
    st.markdown("**Or describe a machine** (from a catalogue system's values)")
    base = st.selectbox("Start from", systems, key="hwf_base")
    start = custom_hardware.Form.of(base)
    with st.form("hwf", border=False):
        k = f"hwf_{base}_"  # the fields restart from the chosen system's values
        name = st.text_input("Name", value=start.name, key=k + "name")
        bf16 = st.number_input("BF16 dense (TFLOP/s)", min_value=1.0, value=start.bf16_tflops, key=k + "bf16")
        fp8 = st.number_input("FP8 dense (TFLOP/s; 0: none)", min_value=0.0, value=start.fp8_tflops, key=k + "fp8")
        hbm = st.number_input("HBM (GiB per chip)", min_value=1.0, value=start.hbm_gib, key=k + "hbm")
        bw = st.number_input("HBM bandwidth (TB/s)", min_value=0.01, value=start.hbm_tb_per_s, key=k + "bw")
        links = st.number_input("Scale-up link bandwidth (x the base's)", min_value=0.01, value=1.0, key=k + "links")
        tdp = st.number_input("TDP (W per chip; 0: none)", min_value=0.0, value=start.tdp_w, key=k + "tdp")
        price = st.number_input("Price (USD per node-hour; 0: none)", min_value=0.0,
                                value=start.price_usd_per_node_hour, key=k + "price")
        if not st.form_submit_button("Use this machine"):
            return
    entered = dataclasses.replace(start, name=name.strip(), bf16_tflops=bf16, fp8_tflops=fp8, hbm_gib=hbm,
                                  hbm_tb_per_s=bw, link_factor=links, tdp_w=tdp, price_usd_per_node_hour=price)
    try:
        ref = custom_hardware.write(entered, uploads.folder())
    except (ValueError, KeyError) as exc:
        st.error(us.one_line(exc))
        return
    st.session_state["_pending_system"] = ref
    st.rerun()
