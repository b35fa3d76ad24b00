"""The CUDA autocast lists as torch's own header declares them, for chapter 6's table beside the CPU's behaviour.

Every torch wheel installs the C++ header ATen/autocast_mode.h. Its macro AT_FORALL_LOWER_PRECISION_FP lists the
operations the CUDA backend runs in the low dtype; AT_FORALL_FP32 and AT_FORALL_FP32_SET_OPT_DTYPE list those it
runs in float32. Reading the header needs no GPU.
"""
from __future__ import annotations

import os
import re

_MACROS = (("LOWER_PRECISION_FP", "lower"), ("FP32", "fp32"), ("FP32_SET_OPT_DTYPE", "fp32"))
"""(the macro's name after AT_FORALL_, the policy of the operations it lists)"""


def autocast_header() -> str:
    """The path of the installed torch's ATen/autocast_mode.h (it may be missing from a stripped install)."""
    import torch

    return os.path.join(os.path.dirname(torch.__file__), "include", "ATen", "autocast_mode.h")


def cuda_autocast_lists(header: str | None = None) -> dict[str, str]:
    """Operation name -> "lower" or "fp32", as the header's CUDA lists say; {} when the header is not installed."""
    path = header or autocast_header()
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as file:
        text = file.read()
    lists: dict[str, str] = {}
    for macro, policy in _MACROS:
        found = re.search(rf"#define AT_FORALL_{macro}\(_\)(.*?)\n\n", text, re.S)
        if found:
            lists.update(dict.fromkeys(re.findall(r"_\((\w+)", found.group(1)), policy))
    return lists
