"""Known libraries: which path parts, logger names and file names name a component."""

from __future__ import annotations

import re


# Top-level dirs that mark the package part of a path outside site-packages
# (editable installs, source trees, glog file names like torch/distributed/...).
_PATH_ROOTS = frozenset(
    """torch torchvision torchaudio deepspeed transformers accelerate peft trl vllm
    flash_attn xformers triton bitsandbytes apex megatron llamafactory swift
    lightning pytorch_lightning sglang lmdeploy colossalai fairscale diffusers
    unsloth auto_gptq awq optimum tensorrt_llm safetensors huggingface_hub
    tokenizers sentence_transformers aten c10 mmcv verl openrlhf""".split()
)
# Libraries whose logger names / exception modules count as components.
_LIBS = _PATH_ROOTS | frozenset(
    "datasets ray numpy jax tensorflow keras onnxruntime nvidia timm".split()
)
# Components that nearly every traceback passes through; they rank last.
_GENERIC_COMPONENTS = (
    "torch.nn.modules",
    "torch._tensor",
    "torch.autograd",
    "torch.utils._contextlib",
    "torch._dynamo.eval_frame",
    "torch._compile",
    "torch.utils.checkpoint",
    "accelerate.utils.operations",
    "starlette",
    "uvicorn",
    "fastapi",
    "anyio",
    "click",
    "typer",
    "fire",
    "hydra",
    "_pytest",
    "pluggy",
    "torch.multiprocessing.spawn",
    "torch.distributed.elastic",
)
# Single file names printed by C++/DeepSpeed log prefixes -> component.
_FILE_COMPONENTS = {
    "ProcessGroupNCCL.cpp": "torch.distributed",
    "ProcessGroupNCCL.hpp": "torch.distributed",
    "NCCLUtils.hpp": "torch.distributed",
    "NCCLUtils.cpp": "torch.distributed",
    "TCPStore.cpp": "torch.distributed",
    "TCPStoreLibUvBackend.cpp": "torch.distributed",
    "socket.cpp": "torch.distributed",
    "ProcessGroupGloo.cpp": "torch.distributed",
    "stage3.py": "deepspeed.runtime.zero",
    "stage_1_and_2.py": "deepspeed.runtime.zero",
    "partition_parameters.py": "deepspeed.runtime.zero",
    "parameter_offload.py": "deepspeed.runtime.zero",
    "partitioned_param_coordinator.py": "deepspeed.runtime.zero",
    "builder.py": "deepspeed.ops",
    "launch.py": "deepspeed.launcher",
    "runner.py": "deepspeed.launcher",
}
# Exceptions that only say "a child failed"; the child's own error is the signal.
_POINTS_ELSEWHERE = re.compile(
    r"(?i)see (?:the )?(?:root cause|stack trace|inner exception|error|logs?)s? (?:\(?above\)?|for details)"
    r"|(?:root cause|stack trace) \(?above\)?|\(see above\)|look up to see its traceback"
)
"""A message that only points at another error ("See root cause above", "see stack trace (above) for the
root cause", transformers' "Failed to import … because of the following error (look up to see its traceback)"):
the exception that says it wraps the real one, like ChildFailedError."""

_WRAPPERS = frozenset(
    {
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError",
        "ChildFailedError",
        "subprocess.CalledProcessError",
        "CalledProcessError",
    }
)


_GENERIC_CALLS = frozenset(
    """<module> <lambda> <listcomp> <dictcomp> <genexpr> main _main run __call__ _call_impl _wrapped_call_impl
    forward wrapper inner _fn fn decorate_context wrapped new_func launch _run_module_as_main _run_code
    __init__ record_function wrapper_func _wrap func call _func invoke""".split())
"""Functions every traceback passes through (`forward`, `_call_impl`, `<module>`): they say nothing about what failed."""
