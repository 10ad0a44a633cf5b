"""Error signatures: the few lines of a paste that identify a failure.

Users paste anything from a one-line error to a 200-line multi-rank log, often
wrapped in a Chinese question.  Retrieval works far better on the signal (the
final exception and its message, CUDA/NCCL/compiler errors, warnings, the
library components the traceback went through) than on the whole paste, and
volatile values (sizes, ranks, paths, hosts, step counts) must be masked the
same way in queries and in articles' error blocks so that both meet on one
template.  Pure stdlib ``re``; every pattern is linear-time on the capped input.
"""

from __future__ import annotations

from .model import MAX_TEXT, Signature, TEXT_BUDGET
from .mask import mask
from .classify import is_error_line, without_absent_fields
from .extractor import _Extractor
from .scan import _extract, as_printed, extract
from .calls import GENERIC_LINE, focus, frame_calls

__all__ = ["Signature", "as_printed", "extract", "mask", "is_error_line", "focus", "frame_calls", "GENERIC_LINE",
           "without_absent_fields"]
