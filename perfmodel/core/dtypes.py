"""Data types: storage size per element (with block-scale overhead) and names.

Bytes are floats (4-bit = 0.5 B), never integer-divided bits. Microscaling (OCP MX)
formats store one 8-bit E8M0 scale per 32-element block: +8/32 = 0.25 bit per element.
NVFP4 stores one FP8 (E4M3) scale per 16 elements: +0.5 bit per element.

Does not: know which hardware supports which type (spec sheets say that).
"""

from __future__ import annotations

from enum import Enum

from perfmodel.core.units import BITS_PER_BYTE


class DType(str, Enum):
    FP32 = "fp32"
    TF32 = "tf32"
    BF16 = "bf16"
    FP16 = "fp16"
    FP8 = "fp8"
    MXFP8 = "mxfp8"
    MXFP6 = "mxfp6"
    MXFP4 = "mxfp4"
    FP4 = "fp4"
    INT8 = "int8"
    INT4 = "int4"

    @classmethod
    def parse(cls, name: "str | DType") -> "DType":
        if isinstance(name, DType):
            return name
        key = str(name).strip().lower().replace("-", "").replace("_", "")
        aliases = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "nvfp4": "fp4", "e4m3": "fp8", "e5m2": "fp8",
                   "fp8e4m3": "fp8", "fp8e5m2": "fp8", "cfp8": "fp8"}
        key = aliases.get(key, key)
        try:
            return cls(key)
        except ValueError:
            known = ", ".join(d.value for d in cls)
            raise ValueError(f"unknown data type {name!r}; known: {known}") from None


# Payload bits per element, and scale-block (bits of scale, elements per block).
_PAYLOAD_BITS = {
    DType.FP32: 32, DType.TF32: 32, DType.BF16: 16, DType.FP16: 16, DType.FP8: 8, DType.MXFP8: 8,
    DType.MXFP6: 6, DType.MXFP4: 4, DType.FP4: 4, DType.INT8: 8, DType.INT4: 4,
}
# (scale bits, block elements): OCP MX spec v1.0 (E8M0 scale per 32); NVIDIA NVFP4 (E4M3 per 16).
SCALE_BLOCK = {
    DType.MXFP8: (8, 32), DType.MXFP6: (8, 32), DType.MXFP4: (8, 32), DType.FP4: (8, 16),
}


def _as_dtype(dtype) -> DType:
    """A DType as it is (the enum's constructor costs ~0.5 us; one configuration asks a dozen times)."""
    return dtype if isinstance(dtype, DType) else DType(dtype)


def payload_bits(dtype: DType) -> float:
    """Bits of one element's value, without block scales."""
    return float(_PAYLOAD_BITS[_as_dtype(dtype)])


def scale_overhead_bits(dtype: DType) -> float:
    """Average scale bits per element for block-scaled formats (0 for others)."""
    scale_bits, block = SCALE_BLOCK.get(_as_dtype(dtype), (0, 1))
    return scale_bits / block


def _bytes_per_element(dtype: DType) -> float:
    return (payload_bits(dtype) + scale_overhead_bits(dtype)) / BITS_PER_BYTE


_BYTES = {d: _bytes_per_element(d) for d in _PAYLOAD_BITS}  # the formula below, once per type


def bytes_per_element(dtype: DType) -> float:
    """Stored bytes per element including block-scale overhead, e.g. mxfp4 -> 4.25/8 = 0.53125."""
    return _BYTES[_as_dtype(dtype)]


def is_microscaled(dtype: DType) -> bool:
    return _as_dtype(dtype) in SCALE_BLOCK
