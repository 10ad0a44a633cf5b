"""Tests for kb.signature: real-shaped pastes and property tests.

Each paste is written in the shape the tool really prints (prefixes, frames,
progress bars, env dumps included) so the extractor is tested on what users
actually paste, not on clean one-liners.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kb.signature.scan as sig_mod  # the driver of one pass: its shortcuts are switched off below
from kb.signature import Signature, _extract, as_printed, extract, focus, is_error_line, mask

# ---------------------------------------------------------------------------
# Pastes
# ---------------------------------------------------------------------------

OOM_NEW = """\
{'loss': 1.3125, 'grad_norm': 0.84765625, 'learning_rate': 1.9e-05, 'epoch': 0.12}
 12%|█▏        | 120/1000 [05:31<40:29,  2.76s/it]
Traceback (most recent call last):
  File "/home/alice/LLaMA-Factory/src/train.py", line 28, in <module>
    main()
  File "/home/alice/LLaMA-Factory/src/train.py", line 19, in main
    run_exp()
  File "/opt/conda/lib/python3.10/site-packages/transformers/trainer.py", line 1859, in train
    return inner_training_loop(
  File "/opt/conda/lib/python3.10/site-packages/transformers/trainer.py", line 3161, in training_step
    self.accelerator.backward(loss)
  File "/opt/conda/lib/python3.10/site-packages/accelerate/accelerator.py", line 2126, in backward
    self.deepspeed_engine_wrapped.backward(loss, **kwargs)
  File "/opt/conda/lib/python3.10/site-packages/deepspeed/runtime/engine.py", line 1976, in backward
    self.optimizer.backward(loss, retain_graph=retain_graph)
  File "/opt/conda/lib/python3.10/site-packages/deepspeed/runtime/zero/stage3.py", line 2213, in backward
    self.loss_scaler.backward(loss.float(), retain_graph=retain_graph)
  File "/opt/conda/lib/python3.10/site-packages/torch/_tensor.py", line 522, in backward
    torch.autograd.backward(
  File "/opt/conda/lib/python3.10/site-packages/torch/autograd/__init__.py", line 266, in backward
    Variable._execution_engine.run_backward(  # Calls into the C++ engine to run the backward pass
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.39 GiB. GPU 0 has a total capacity of 79.32 GiB of which 1.95 GiB is free. Process 2731 has 77.36 GiB memory in use. Of the allocated memory 73.29 GiB is allocated by PyTorch, and 1.60 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)
"""

OOM_OTHER_NUMBERS = """\
Traceback (most recent call last):
  File "/data/bob/sft.py", line 7, in <module>
    trainer.train()
  File "/usr/local/lib/python3.11/dist-packages/torch/autograd/__init__.py", line 289, in backward
    _engine_run_backward(
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB. GPU 3 has a total capacity of 23.65 GiB of which 301.06 MiB is free. Process 99812 has 23.34 GiB memory in use. Of the allocated memory 21.90 GiB is allocated by PyTorch, and 1.04 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)
"""

OOM_OLD = """\
Traceback (most recent call last):
  File "finetune.py", line 301, in <module>
    train()
  File "/root/miniconda3/envs/llm/lib/python3.9/site-packages/torch/nn/modules/module.py", line 1501, in _call_impl
    return forward_call(*args, **kwargs)
  File "/root/miniconda3/envs/llm/lib/python3.9/site-packages/transformers/models/llama/modeling_llama.py", line 231, in forward
    attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)
torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 79.15 GiB total capacity; 76.61 GiB already allocated; 9.25 MiB free; 77.88 GiB reserved in total by PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF
"""

NCCL_WATCHDOG = """\
[rank3]:[E1122 10:41:57.482316713 ProcessGroupNCCL.cpp:607] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=18204, OpType=ALLREDUCE, NumelIn=262144, NumelOut=262144, Timeout(ms)=600000) ran for 600012 milliseconds before timing out.
[rank5]:[E1122 10:41:57.482591204 ProcessGroupNCCL.cpp:607] [Rank 5] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=18204, OpType=ALLREDUCE, NumelIn=262144, NumelOut=262144, Timeout(ms)=600000) ran for 600047 milliseconds before timing out.
[rank3]:[E1122 10:41:57.483002918 ProcessGroupNCCL.cpp:1664] [PG 0 (default_pg) Rank 3] Exception (either an error or timeout) detected by watchdog at work: 18204, last enqueued NCCL work: 18204, last completed NCCL work: 18203.
[rank3]:[E1122 10:41:57.483044127 ProcessGroupNCCL.cpp:1709] [PG 0 (default_pg) Rank 3] Timeout at NCCL work: 18204, last enqueued NCCL work: 18204, last completed NCCL work: 18203.
[rank3]:[E1122 10:41:57.483061325 ProcessGroupNCCL.cpp:621] [Rank 3] Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.
[rank3]:[E1122 10:41:57.483072117 ProcessGroupNCCL.cpp:627] [Rank 3] To avoid data inconsistency, we are taking the entire process down.
[rank3]:[E1122 10:41:57.484810042 ProcessGroupNCCL.cpp:1515] [PG 0 (default_pg) Rank 3] Process group watchdog thread terminated with exception: [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=18204, OpType=ALLREDUCE, NumelIn=262144, NumelOut=262144, Timeout(ms)=600000) ran for 600012 milliseconds before timing out.
Exception raised from checkTimeout at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:609 (most recent call first):
frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f8b2a9c1446 in /usr/local/lib/python3.10/dist-packages/torch/lib/libc10.so)
frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long, std::ratio<1l, 1000l> > >) + 0x1d2 (0x7f8b2bcbd772 in /usr/local/lib/python3.10/dist-packages/torch/lib/libtorch_cuda.so)
frame #2: c10d::ProcessGroupNCCL::watchdogHandler() + 0x233 (0x7f8b2bcc41b3 in /usr/local/lib/python3.10/dist-packages/torch/lib/libtorch_cuda.so)

terminate called after throwing an instance of 'c10::DistBackendError'
  what():  [PG 0 (default_pg) Rank 3] Process group watchdog thread terminated with exception: [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=18204, OpType=ALLREDUCE, NumelIn=262144, NumelOut=262144, Timeout(ms)=600000) ran for 600012 milliseconds before timing out.
Exception raised from checkTimeout at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:609 (most recent call first):
frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f8b2a9c1446 in /usr/local/lib/python3.10/dist-packages/torch/lib/libc10.so)
"""

TORCHRUN_SIGKILL = """\
W1122 09:12:01.339000 140229 torch/distributed/run.py:779]
W1122 09:12:01.339000 140229 torch/distributed/run.py:779] *****************************************
W1122 09:12:01.339000 140229 torch/distributed/run.py:779] Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your system being overloaded, please further tune the variable for optimal performance in your application as needed.
W1122 09:12:01.339000 140229 torch/distributed/run.py:779] *****************************************
Loading checkpoint shards: 100%|██████████| 4/4 [00:09<00:00,  2.31s/it]
W1122 09:14:44.125000 140229 torch/distributed/elastic/multiprocessing/api.py:858] Sending process 140301 closing signal SIGTERM
E1122 09:14:44.589000 140229 torch/distributed/elastic/multiprocessing/api.py:833] failed (exitcode: -9) local_rank: 1 (pid: 140302) of binary: /usr/bin/python3
Traceback (most recent call last):
  File "/usr/local/bin/torchrun", line 8, in <module>
    sys.exit(main())
  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/elastic/multiprocessing/errors/__init__.py", line 348, in wrapper
    return f(*args, **kwargs)
  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/run.py", line 901, in main
    run(args)
  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/launcher/api.py", line 263, in launch_agent
    raise ChildFailedError(
torch.distributed.elastic.multiprocessing.errors.ChildFailedError: 
========================================================
train.py FAILED
--------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
--------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2024-11-22_09:14:44
  host      : gpu-a100-03
  rank      : 1 (local_rank: 1)
  exitcode  : -9 (pid: 140302)
  error_file: <N/A>
  traceback : Signal 9 (SIGKILL) received by PID 140302
========================================================
"""

TORCHRUN_WITH_RANK_ERROR = """\
[rank1]: Traceback (most recent call last):
[rank1]:   File "/workspace/pretrain.py", line 212, in <module>
[rank1]:     main()
[rank1]:   File "/workspace/pretrain.py", line 150, in main
[rank1]:     dist.barrier()
[rank1]:   File "/usr/local/lib/python3.10/dist-packages/torch/distributed/c10d_logger.py", line 83, in wrapper
[rank1]:     return func(*args, **kwargs)
[rank1]:   File "/usr/local/lib/python3.10/dist-packages/torch/distributed/distributed_c10d.py", line 4159, in barrier
[rank1]:     work = group.barrier(opts=opts)
[rank1]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:317, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5
[rank1]: ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.
[rank1]: Last error:
[rank1]: socketStartConnect: Connect to 10.0.0.12<35711> failed : Software caused connection abort
E1122 11:02:13.001000 139861 torch/distributed/elastic/multiprocessing/api.py:833] failed (exitcode: 1) local_rank: 1 (pid: 4122) of binary: /usr/bin/python
Traceback (most recent call last):
  File "/usr/local/bin/torchrun", line 8, in <module>
    sys.exit(main())
  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/launcher/api.py", line 263, in launch_agent
    raise ChildFailedError(
torch.distributed.elastic.multiprocessing.errors.ChildFailedError: 
============================================================
pretrain.py FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2024-11-22_11:02:13
  host      : node-17.cluster.local
  rank      : 1 (local_rank: 1)
  exitcode  : 1 (pid: 4122)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
"""

TORCHRUN_ERROR_FILE = """\
torch.distributed.elastic.multiprocessing.errors.ChildFailedError: 
============================================================
run_clm.py FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2024-03-02_18:22:40
  host      : worker-0
  rank      : 0 (local_rank: 0)
  exitcode  : 1 (pid: 2201)
  error_file: /tmp/torchelastic_k2x8q1/none_3mdl0b/attempt_0/0/error.json
  traceback : Traceback (most recent call last):
    File "/opt/conda/lib/python3.10/site-packages/torch/distributed/elastic/multiprocessing/errors/__init__.py", line 346, in wrapper
      return f(*args, **kwargs)
    File "/workspace/run_clm.py", line 610, in main
      model = AutoModelForCausalLM.from_pretrained(model_args.model_name_or_path)
    File "/opt/conda/lib/python3.10/site-packages/transformers/modeling_utils.py", line 3375, in from_pretrained
      raise EnvironmentError(
  OSError: /models/llama-7b does not appear to have a file named pytorch_model.bin, tf_model.h5, model.ckpt or flax_model.msgpack.
============================================================
"""

DS_CPU_ADAM_BUILD = """\
[2024-11-22 10:05:11,420] [INFO] [real_accelerator.py:203:get_accelerator] Setting ds_accelerator to cuda (auto detect)
Using /root/.cache/torch_extensions/py310_cu121 as PyTorch extensions root...
Detected CUDA files, patching ldflags
Emitting ninja build file /root/.cache/torch_extensions/py310_cu121/cpu_adam/build.ninja...
Building extension module cpu_adam...
Allowing ninja to set a default number of workers... (overridable by setting the environment variable MAX_JOBS=N)
[1/3] c++ -MMD -MF cpu_adam.o.d -DTORCH_EXTENSION_NAME=cpu_adam -DTORCH_API_INCLUDE_EXTENSION_H -DPYBIND11_COMPILER_TYPE=\\"_gcc\\" -I/opt/conda/lib/python3.10/site-packages/deepspeed/ops/csrc/includes -isystem /opt/conda/lib/python3.10/site-packages/torch/include -isystem /usr/local/cuda/include -D_GLIBCXX_USE_CXX11_ABI=0 -fPIC -std=c++17 -O3 -g -Wno-reorder -L/usr/local/cuda/lib64 -lcudart -lcublas -march=native -fopenmp -D__AVX512__ -D__ENABLE_CUDA__ -DBF16_AVAILABLE -c /opt/conda/lib/python3.10/site-packages/deepspeed/ops/csrc/adam/cpu_adam.cpp -o cpu_adam.o
FAILED: cpu_adam.o
c++ -MMD -MF cpu_adam.o.d -DTORCH_EXTENSION_NAME=cpu_adam -c /opt/conda/lib/python3.10/site-packages/deepspeed/ops/csrc/adam/cpu_adam.cpp -o cpu_adam.o
In file included from /opt/conda/lib/python3.10/site-packages/deepspeed/ops/csrc/adam/cpu_adam.cpp:6:
/opt/conda/lib/python3.10/site-packages/deepspeed/ops/csrc/includes/cpu_adam.h:12:10: fatal error: cublas_v2.h: No such file or directory
   12 | #include <cublas_v2.h>
      |          ^~~~~~~~~~~~~
compilation terminated.
ninja: build stopped: subcommand failed.
Traceback (most recent call last):
  File "/opt/conda/lib/python3.10/site-packages/torch/utils/cpp_extension.py", line 2100, in _run_ninja_build
    subprocess.run(
  File "/opt/conda/lib/python3.10/subprocess.py", line 526, in run
    raise CalledProcessError(retcode, process.args,
subprocess.CalledProcessError: Command '['ninja', '-v']' returned non-zero exit status 1.

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/workspace/train.py", line 45, in <module>
    model_engine, optimizer, _, _ = deepspeed.initialize(args=args, model=model, model_parameters=model.parameters())
  File "/opt/conda/lib/python3.10/site-packages/deepspeed/__init__.py", line 181, in initialize
    engine = DeepSpeedEngine(args=args,
  File "/opt/conda/lib/python3.10/site-packages/deepspeed/runtime/engine.py", line 1308, in _configure_basic_optimizer
    optimizer = DeepSpeedCPUAdam(model_parameters,
  File "/opt/conda/lib/python3.10/site-packages/deepspeed/ops/adam/cpu_adam.py", line 94, in __init__
    self.ds_opt_adam = CPUAdamBuilder().load()
  File "/opt/conda/lib/python3.10/site-packages/deepspeed/ops/op_builder/builder.py", line 479, in load
    return self.jit_load(verbose)
  File "/opt/conda/lib/python3.10/site-packages/deepspeed/ops/op_builder/builder.py", line 523, in jit_load
    op_module = load(name=self.name,
  File "/opt/conda/lib/python3.10/site-packages/torch/utils/cpp_extension.py", line 1308, in load
    return _jit_compile(
  File "/opt/conda/lib/python3.10/site-packages/torch/utils/cpp_extension.py", line 2116, in _run_ninja_build
    raise RuntimeError(message) from e
RuntimeError: Error building extension 'cpu_adam'
Exception ignored in: <function DeepSpeedCPUAdam.__del__ at 0x7f1c2b3d4e50>
Traceback (most recent call last):
  File "/opt/conda/lib/python3.10/site-packages/deepspeed/ops/adam/cpu_adam.py", line 102, in __del__
    self.ds_opt_adam.destroy_adam(self.opt_id)
AttributeError: 'DeepSpeedCPUAdam' object has no attribute 'ds_opt_adam'
"""

FLASH_ATTN_PIP = """\
$ pip install flash-attn --no-build-isolation
Collecting flash-attn
  Downloading flash_attn-2.5.8.tar.gz (2.5 MB)
     ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━ 2.5/2.5 MB 11.9 MB/s eta 0:00:00
  Preparing metadata (setup.py) ... done
Requirement already satisfied: torch in /opt/conda/lib/python3.10/site-packages (from flash-attn) (2.3.0)
Requirement already satisfied: einops in /opt/conda/lib/python3.10/site-packages (from flash-attn) (0.8.0)
Building wheels for collected packages: flash-attn
  Building wheel for flash-attn (setup.py) ... error
  error: subprocess-exited-with-error

  × python setup.py bdist_wheel did not run successfully.
  │ exit code: 1
  ╰─> [176 lines of output]
      fatal: not a git repository (or any of the parent directories): .git


      torch.__version__  = 2.3.0+cu121


      running bdist_wheel
      Guessing wheel URL:  https://github.com/Dao-AILab/flash-attention/releases/download/v2.5.8/flash_attn-2.5.8+cu122torch2.3cxx11abiFALSE-cp310-cp310-linux_x86_64.whl
      running build
      running build_ext
      [1/49] /usr/local/cuda/bin/nvcc  -I/tmp/pip-install-8x7k2j1q/flash-attn_2c0f1b9d7d3b4c5e/csrc/flash_attn -I/opt/conda/lib/python3.10/site-packages/torch/include -c -c /tmp/pip-install-8x7k2j1q/flash-attn_2c0f1b9d7d3b4c5e/csrc/flash_attn/src/flash_bwd_hdim128_fp16_sm80.cu -o /tmp/pip-install-8x7k2j1q/flash-attn_2c0f1b9d7d3b4c5e/build/temp.linux-x86_64-cpython-310/csrc/flash_attn/src/flash_bwd_hdim128_fp16_sm80.o -O3 -std=c++17 --use_fast_math -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 --threads 4
      FAILED: /tmp/pip-install-8x7k2j1q/flash-attn_2c0f1b9d7d3b4c5e/build/temp.linux-x86_64-cpython-310/csrc/flash_attn/src/flash_bwd_hdim128_fp16_sm80.o
      nvcc fatal   : Unsupported gpu architecture 'compute_90'
      ninja: build stopped: subcommand failed.
      Traceback (most recent call last):
        File "/tmp/pip-install-8x7k2j1q/flash-attn_2c0f1b9d7d3b4c5e/setup.py", line 311, in <module>
          setup(
        File "/opt/conda/lib/python3.10/site-packages/torch/utils/cpp_extension.py", line 2112, in _run_ninja_build
          raise RuntimeError(message) from e
      RuntimeError: Error compiling objects for extension
      [end of output]

  note: This error originates from a subprocess, and is likely not a problem with pip.
  ERROR: Failed building wheel for flash-attn
  Running setup.py clean for flash-attn
Failed to build flash-attn
ERROR: Could not build wheels for flash-attn, which is required to install pyproject.toml-based projects
"""

PYTHON_H = """\
  Building wheel for deepspeed (setup.py) ... error
  error: subprocess-exited-with-error

  × python setup.py bdist_wheel did not run successfully.
  │ exit code: 1
  ╰─> [48 lines of output]
      running build_ext
      building 'deepspeed.ops.adam.cpu_adam_op' extension
      gcc -pthread -B /opt/conda/compiler_compat -Wno-unused-result -fPIC -I/usr/include/python3.10 -c csrc/adam/cpu_adam.cpp -o build/temp.linux-x86_64-cpython-310/csrc/adam/cpu_adam.o
      In file included from /opt/conda/lib/python3.10/site-packages/torch/include/torch/csrc/Device.h:4,
      /opt/conda/lib/python3.10/site-packages/torch/include/torch/csrc/python_headers.h:12:10: fatal error: Python.h: No such file or directory
         12 | #include <Python.h>
            |          ^~~~~~~~~~
      compilation terminated.
      error: command '/usr/bin/gcc' failed with exit code 1
      [end of output]

  note: This error originates from a subprocess, and is likely not a problem with pip.
  ERROR: Failed building wheel for deepspeed
"""

BNB_SETUP = """\
===================================BUG REPORT===================================
Welcome to bitsandbytes. For bug reports, please run

python -m bitsandbytes

 and submit this information together with your error trace to: https://github.com/TimDettmers/bitsandbytes/issues
================================================================================
bin /opt/conda/lib/python3.10/site-packages/bitsandbytes/libbitsandbytes_cuda118.so
/opt/conda/lib/python3.10/site-packages/bitsandbytes/cuda_setup/main.py:149: UserWarning: /opt/conda did not contain ['libcudart.so', 'libcudart.so.11.0', 'libcudart.so.12.0'] as expected! Searching further paths...
  warn(msg)
CUDA_SETUP: WARNING! libcudart.so not found in any environmental path. Searching in backup paths...
CUDA SETUP: CUDA runtime path found: /usr/local/cuda/lib64/libcudart.so.11.0
CUDA SETUP: Highest compute capability among GPUs detected: 8.0
CUDA SETUP: Detected CUDA version 118
CUDA SETUP: Required library version not found: libbitsandbytes_cuda118.so. Maybe you need to compile it from source?
CUDA SETUP: Defaulting to libbitsandbytes_cpu.so...

================================================ERROR=====================================
CUDA SETUP: CUDA detection failed! Possible reasons:
1. You need to manually override the PyTorch CUDA version. Please see: "https://github.com/TimDettmers/bitsandbytes/blob/main/how_to_use_nonpytorch_cuda.md
2. CUDA driver not installed
3. CUDA not installed
4. You have multiple conflicting CUDA libraries
================================================================================

CUDA SETUP: Setup Failed!
Traceback (most recent call last):
  File "/workspace/qlora.py", line 12, in <module>
    import bitsandbytes as bnb
  File "/opt/conda/lib/python3.10/site-packages/bitsandbytes/__init__.py", line 6, in <module>
    from . import cuda_setup, utils, research
  File "/opt/conda/lib/python3.10/site-packages/bitsandbytes/cextension.py", line 20, in <module>
    raise RuntimeError('''
RuntimeError: 
        CUDA Setup failed despite GPU being available. Please run the following command to get more information:

        python -m bitsandbytes

        Inspect the output of the command and see if you can locate CUDA libraries. You might need to add them
        to your LD_LIBRARY_PATH. If you suggest a fix via a PR, please provide it.
"""

VLLM_KV_CACHE = """\
INFO 11-22 10:01:02 llm_engine.py:237] Initializing an LLM engine (v0.6.3.post1) with config: model='/models/Qwen2-72B-Instruct', speculative_config=None, tokenizer='/models/Qwen2-72B-Instruct', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, trust_remote_code=True, dtype=torch.bfloat16, max_seq_len=32768, download_dir=None, load_format=LoadFormat.AUTO, tensor_parallel_size=4, pipeline_parallel_size=1, disable_custom_all_reduce=False, quantization=None, enforce_eager=False, kv_cache_dtype=auto, seed=0, served_model_name=/models/Qwen2-72B-Instruct
INFO 11-22 10:01:09 model_runner.py:1056] Starting to load model /models/Qwen2-72B-Instruct...
Loading safetensors checkpoint shards:   0% Completed | 0/37 [00:00<?, ?it/s]
Loading safetensors checkpoint shards: 100% Completed | 37/37 [01:12<00:00,  1.95s/it]
INFO 11-22 10:02:21 model_runner.py:1067] Loading model weights took 33.9991 GB
INFO 11-22 10:02:29 distributed_gpu_executor.py:57] # GPU blocks: 1584, # CPU blocks: 3276
INFO 11-22 10:02:29 distributed_gpu_executor.py:61] Maximum concurrency for 32768 tokens per request: 0.77x
[rank0]: Traceback (most recent call last):
[rank0]:   File "/usr/local/bin/vllm", line 8, in <module>
[rank0]:     sys.exit(main())
[rank0]:   File "/usr/local/lib/python3.10/dist-packages/vllm/engine/llm_engine.py", line 349, in __init__
[rank0]:     self._initialize_kv_caches()
[rank0]:   File "/usr/local/lib/python3.10/dist-packages/vllm/engine/llm_engine.py", line 497, in _initialize_kv_caches
[rank0]:     self.model_executor.initialize_cache(num_gpu_blocks, num_cpu_blocks)
[rank0]:   File "/usr/local/lib/python3.10/dist-packages/vllm/worker/worker.py", line 263, in initialize_cache
[rank0]:     raise_if_cache_size_invalid(num_gpu_blocks,
[rank0]:   File "/usr/local/lib/python3.10/dist-packages/vllm/worker/worker.py", line 493, in raise_if_cache_size_invalid
[rank0]:     raise ValueError(
[rank0]: ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be stored in KV cache (25344). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.
"""

DEVICE_ASSERT = """\
../aten/src/ATen/native/cuda/Indexing.cu:1289: indexSelectLargeIndex: block: [267,0,0], thread: [0,0,0] Assertion `srcIndex < srcSelectDimSize` failed.
../aten/src/ATen/native/cuda/Indexing.cu:1289: indexSelectLargeIndex: block: [267,0,0], thread: [1,0,0] Assertion `srcIndex < srcSelectDimSize` failed.
../aten/src/ATen/native/cuda/Indexing.cu:1289: indexSelectLargeIndex: block: [267,0,0], thread: [2,0,0] Assertion `srcIndex < srcSelectDimSize` failed.
../aten/src/ATen/native/cuda/Indexing.cu:1289: indexSelectLargeIndex: block: [31,0,0], thread: [127,0,0] Assertion `srcIndex < srcSelectDimSize` failed.
Traceback (most recent call last):
  File "/home/user/projects/ner/train.py", line 77, in <module>
    outputs = model(**batch)
  File "/home/user/.local/lib/python3.8/site-packages/torch/nn/modules/module.py", line 1194, in _call_impl
    return forward_call(*input, **kwargs)
  File "/home/user/.local/lib/python3.8/site-packages/transformers/models/bert/modeling_bert.py", line 1013, in forward
    embedding_output = self.embeddings(
  File "/home/user/.local/lib/python3.8/site-packages/torch/nn/functional.py", line 2210, in embedding
    return torch.embedding(weight, input, padding_idx, scale_grad_by_freq, sparse)
RuntimeError: CUDA error: device-side assert triggered
CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
For debugging consider passing CUDA_LAUNCH_BLOCKING=1.
Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.
"""

MULTI_RANK = """\
[rank1]: Traceback (most recent call last):
[rank0]: Traceback (most recent call last):
[rank1]:   File "/mnt/exp/train_sft.py", line 96, in <module>
[rank0]:   File "/mnt/exp/train_sft.py", line 96, in <module>
[rank1]:     trainer.train()
[rank0]:     trainer.train()
[rank1]:   File "/usr/local/lib/python3.10/dist-packages/transformers/trainer.py", line 2052, in train
[rank0]:   File "/usr/local/lib/python3.10/dist-packages/transformers/trainer.py", line 2052, in train
[rank1]:     return inner_training_loop(
[rank0]:     return inner_training_loop(
[rank1]:   File "/usr/local/lib/python3.10/dist-packages/torch/nn/parallel/distributed.py", line 1589, in _run_ddp_forward
[rank0]:   File "/usr/local/lib/python3.10/dist-packages/torch/nn/parallel/distributed.py", line 1589, in _run_ddp_forward
[rank1]:     return self.module(*inputs, **kwargs)  # type: ignore[index]
[rank0]:     return self.module(*inputs, **kwargs)  # type: ignore[index]
[rank1]: RuntimeError: Expected to mark a variable ready only once. This error is caused by one of the following reasons: 1) Use of a module parameter outside the `forward` function. 2) Reused parameters in multiple reentrant backward passes.
[rank0]: RuntimeError: Expected to mark a variable ready only once. This error is caused by one of the following reasons: 1) Use of a module parameter outside the `forward` function. 2) Reused parameters in multiple reentrant backward passes.
W1122 10:14:03.118000 2291 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 2362 closing signal SIGTERM
E1122 10:14:03.503000 2291 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: 1) local_rank: 1 (pid: 2363) of binary: /usr/bin/python3
"""

CHINESE_QUESTION = """\
大佬们好，我用 LLaMA-Factory 做 Qwen2-7B 的 LoRA 微调，一启动就报下面的错，显卡是 4090，请问怎么解决？
Traceback (most recent call last):
  File "/root/LLaMA-Factory/src/llamafactory/launcher.py", line 23, in <module>
    launch()
  File "/root/miniconda3/lib/python3.10/site-packages/transformers/modeling_utils.py", line 3940, in from_pretrained
    model = cls(config, *model_args, **model_kwargs)
  File "/root/miniconda3/lib/python3.10/site-packages/transformers/modeling_utils.py", line 1471, in _autoset_attn_implementation
    cls._check_and_enable_flash_attn_2(
  File "/root/miniconda3/lib/python3.10/site-packages/transformers/modeling_utils.py", line 1573, in _check_and_enable_flash_attn_2
    raise ImportError(f"{preface} the package flash_attn seems to be not installed. {install_message}")
ImportError: FlashAttention2 has been toggled on, but it cannot be used due to the following error: the package flash_attn seems to be not installed. Please refer to the documentation of https://huggingface.co/docs/transformers/perf_infer_gpu_one#flashattention-2 to install Flash Attention 2.
谢谢！
"""

CHAINED = """\
Traceback (most recent call last):
  File "/usr/local/lib/python3.10/dist-packages/urllib3/connection.py", line 198, in _new_conn
    sock = connection.create_connection(
  File "/usr/local/lib/python3.10/dist-packages/urllib3/util/connection.py", line 73, in create_connection
    sock.connect(sa)
TimeoutError: [Errno 110] Connection timed out

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/usr/local/lib/python3.10/dist-packages/requests/adapters.py", line 667, in send
    resp = conn.urlopen(
urllib3.exceptions.ConnectTimeoutError: (<urllib3.connection.HTTPSConnection object at 0x7f5e3c1b2d10>, 'Connection to huggingface.co timed out. (connect timeout=10)')

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/workspace/infer.py", line 5, in <module>
    tok = AutoTokenizer.from_pretrained("meta-llama/Llama-2-7b-hf")
  File "/usr/local/lib/python3.10/dist-packages/transformers/utils/hub.py", line 441, in cached_file
    raise EnvironmentError(
OSError: We couldn't connect to 'https://huggingface.co' to load this file, couldn't find it in the cached files and it looks like meta-llama/Llama-2-7b-hf is not the path to a directory containing a file named config.json.
Checkout your internet connection or see how to run the library in offline mode at 'https://huggingface.co/docs/transformers/installation#offline-mode'.
"""

USER_WARNING = """\
/usr/local/lib/python3.10/dist-packages/torch/utils/checkpoint.py:464: UserWarning: torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. In version 2.4 we will raise an exception if use_reentrant is not passed. use_reentrant=False is recommended, but if you need to preserve the current default behavior, you can pass use_reentrant=True. Refer to docs for more details on the differences between the two variants.
  warnings.warn(
/usr/local/lib/python3.10/dist-packages/torch/utils/checkpoint.py:464: UserWarning: torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. In version 2.4 we will raise an exception if use_reentrant is not passed. use_reentrant=False is recommended, but if you need to preserve the current default behavior, you can pass use_reentrant=True. Refer to docs for more details on the differences between the two variants.
  warnings.warn(
{'loss': 2.0412, 'grad_norm': 1.203125, 'learning_rate': 4.8e-05, 'epoch': 0.01}
  1%|          | 10/1000 [00:21<35:12,  2.13s/it]
"""

FUTURE_WARNING = """\
/opt/conda/lib/python3.11/site-packages/transformers/tokenization_utils_base.py:1601: FutureWarning: `clean_up_tokenization_spaces` was not set. It will be set to `True` by default. This behavior will be depracted in transformers v4.45, and will be then set to `False` by default. For more details check this issue: https://github.com/huggingface/transformers/issues/31884
  warnings.warn(
"""

NVCC_ARCH = """\
Installing apex from source for the fused Adam kernel:
building 'fused_adam_cuda' extension
/usr/local/cuda-11.3/bin/nvcc -I/usr/local/lib/python3.8/dist-packages/torch/include -I/usr/local/cuda-11.3/include -c csrc/fused_adam_cuda_kernel.cu -o build/temp.linux-x86_64-3.8/csrc/fused_adam_cuda_kernel.o -D__CUDA_NO_HALF_OPERATORS__ -gencode arch=compute_90,code=sm_90 -O3 --use_fast_math
nvcc fatal   : Unsupported gpu architecture 'compute_90'
error: command '/usr/local/cuda-11.3/bin/nvcc' failed with exit code 1
"""

UNDEFINED_SYMBOL = """\
Traceback (most recent call last):
  File "/workspace/serve.py", line 3, in <module>
    from flash_attn import flash_attn_func
  File "/usr/local/lib/python3.10/dist-packages/flash_attn/__init__.py", line 3, in <module>
    from flash_attn.flash_attn_interface import (
  File "/usr/local/lib/python3.10/dist-packages/flash_attn/flash_attn_interface.py", line 10, in <module>
    import flash_attn_2_cuda as flash_attn_cuda
ImportError: /usr/local/lib/python3.10/dist-packages/flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: undefined symbol: _ZN3c104cuda9SetDeviceEi
"""

DS_TRACE_CACHE = """\
[2025-05-08 01:40:21,112] [WARNING] [parameter_offload.py:86:_apply_to_tensors_only] A module has unknown inputs or outputs type (<class 'transformers.cache_utils.DynamicCache'>) and the tensors embedded in it cannot be detected. The ZeRO-3 hooks designed to trigger before or after backward pass of the module relies on knowing the input and output tensors and therefore may not get triggered properly.
Invalidate trace cache @ step 55651: expected module 319, but got module 636
Invalidate trace cache @ step 55652: expected module 320, but got module 637
Invalidate trace cache @ step 55653: expected module 321, but got module 638
 45%|████▌     | 9/20 [00:01<00:02,  4.1it/s]
[2025-05-08 01:41:02,877] [WARNING] [stage3.py:2117:step] 4 pytorch allocator cache flushes since last step. this happens when there is high memory pressure and is detrimental to performance. if this is happening frequently consider adjusting settings to reduce memory consumption. If you are unable to make the cache flushes go away consider adding get_accelerator().empty_cache() calls in your training loop to ensure that all ranks flush their caches at the same time
"""

UVICORN_ASGI = """\
INFO:     10.0.0.44:51234 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error
ERROR:    Exception in ASGI application
Traceback (most recent call last):
  File "/usr/local/lib/python3.10/dist-packages/uvicorn/protocols/http/httptools_impl.py", line 401, in run_asgi
    result = await app(  # type: ignore[func-returns-value]
  File "/usr/local/lib/python3.10/dist-packages/starlette/routing.py", line 73, in app
    response = await f(request)
  File "/usr/local/lib/python3.10/dist-packages/vllm/entrypoints/openai/api_server.py", line 315, in create_chat_completion
    generator = await chat.create_chat_completion(request, raw_request)
  File "/usr/local/lib/python3.10/dist-packages/vllm/entrypoints/openai/serving_chat.py", line 148, in create_chat_completion
    raise ValueError(f"This model's maximum context length is {self.max_model_len} tokens.")
ValueError: This model's maximum context length is 4096 tokens. However, you requested 5120 tokens (1024 in the messages, 4096 in the completion). Please reduce the length of the messages or completion.
"""

TCPSTORE = """\
[W socket.cpp:663] [c10d] The client socket has failed to connect to [node-3.cluster.local]:29500 (errno: 110 - Connection timed out).
Traceback (most recent call last):
  File "/opt/conda/bin/torchrun", line 33, in <module>
    sys.exit(load_entry_point('torch==2.1.2', 'console_scripts', 'torchrun')())
  File "/opt/conda/lib/python3.10/site-packages/torch/distributed/elastic/rendezvous/static_tcp_rendezvous.py", line 54, in next_rendezvous
    self._store = TCPStore(  # type: ignore[call-arg]
torch.distributed.DistNetworkError: The client socket has timed out after 1800s while trying to connect to (10.0.0.12, 29500).
"""

NCCL_WARN = """\
node-17:31452:31452 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.17<0>
node-17:31452:31452 [0] NCCL INFO NET/Plugin : Plugin load (libnccl-net.so) returned 2 : libnccl-net.so: cannot open shared object file: No such file or directory
node-17:31452:31452 [0] NCCL INFO cudaDriverVersion 12020
NCCL version 2.18.1+cuda12.1
node-17:31452:31610 [0] misc/ibvwrap.cc:188 NCCL WARN Call to ibv_reg_mr failed with error Cannot allocate memory
node-17:31452:31610 [0] NCCL INFO transport/net_ib.cc:606 -> 2
node-17:31453:31611 [1] misc/ibvwrap.cc:188 NCCL WARN Call to ibv_reg_mr failed with error Cannot allocate memory
Traceback (most recent call last):
  File "/home/ops/bench/allreduce.py", line 31, in <module>
    dist.all_reduce(t)
  File "/opt/conda/lib/python3.10/site-packages/torch/distributed/distributed_c10d.py", line 2050, in all_reduce
    work = group.allreduce([tensor], opts)
torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1691, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.18.1
ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.
Last error:
Call to ibv_reg_mr failed with error Cannot allocate memory
"""

MP_SPAWN = """\
Traceback (most recent call last):
  File "/workspace/ddp_train.py", line 140, in <module>
    mp.spawn(train, args=(world_size,), nprocs=world_size, join=True)
  File "/opt/conda/lib/python3.10/site-packages/torch/multiprocessing/spawn.py", line 158, in join
    raise ProcessRaisedException(msg, error_index, failed_process.pid)
torch.multiprocessing.spawn.ProcessRaisedException: 

-- Process 2 terminated with the following error:
Traceback (most recent call last):
  File "/opt/conda/lib/python3.10/site-packages/torch/multiprocessing/spawn.py", line 69, in _wrap
    fn(i, *args)
  File "/workspace/ddp_train.py", line 61, in train
    model = DDP(model, device_ids=[rank])
  File "/opt/conda/lib/python3.10/site-packages/torch/nn/parallel/distributed.py", line 798, in __init__
    _verify_param_shape_across_processes(self.process_group, parameters)
RuntimeError: DDP expects same model across all ranks, but Rank 2 has 217 params, while rank 0 has inconsistent 219 params.
"""

KILLED = """\
Loading checkpoint shards:  33%|███▎      | 1/3 [00:41<01:22, 41.12s/it]
Loading checkpoint shards:  67%|██████▋   | 2/3 [01:25<00:42, 42.71s/it]
Killed
"""

BUS_ERROR = """\
Epoch 0:   3%|▎         | 41/1250 [00:12<06:02,  3.33it/s, loss=2.31]
ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).
Traceback (most recent call last):
  File "/usr/local/lib/python3.8/dist-packages/torch/utils/data/dataloader.py", line 1133, in _try_get_data
    data = self._data_queue.get(timeout=timeout)
  File "/usr/local/lib/python3.8/dist-packages/torch/utils/data/_utils/signal_handling.py", line 66, in handler
    _error_if_any_worker_fails()
RuntimeError: DataLoader worker (pid 31337) is killed by signal: Bus error. It is possible that dataloader's workers are out of shared memory. Please try to raise your shared memory limit.
"""

DS_CONFIG_MISMATCH = """\
[2024-06-02 12:00:01,002] [INFO] [comm.py:637:init_distributed] cdb=None
Traceback (most recent call last):
  File "/data/run_sft.py", line 301, in <module>
    trainer.train()
  File "/usr/local/lib/python3.10/dist-packages/transformers/integrations/deepspeed.py", line 279, in trainer_config_finalize
    raise ValueError(
ValueError: Please correct the following DeepSpeed config values that mismatch TrainingArguments values:
- ds train_micro_batch_size_per_gpu=4 vs hf per_device_train_batch_size=8
The easiest method is to set these DeepSpeed config values to 'auto'.
"""

ENV_DUMP = """\
Collecting environment information...
PyTorch version: 2.1.2+cu121
Is debug build: False
CUDA used to build PyTorch: 12.1
ROCM used to build PyTorch: N/A
OS: Ubuntu 22.04.3 LTS (x86_64)
GCC version: (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0
Python version: 3.10.13 (main, Sep 11 2023, 13:44:35) [GCC 11.2.0] (64-bit runtime)
Is CUDA available: True
CUDA runtime version: 12.1.105
Nvidia driver version: 535.104.05
Versions of relevant libraries:
[pip3] numpy==1.26.3
[pip3] torch==2.1.2
[pip3] triton==2.1.0
[conda] nvidia-cuda-runtime-cu12  12.1.105                 pypi_0    pypi
Package                  Version
------------------------ ----------
deepspeed                0.12.6
nvidia-nccl-cu12         2.18.1
torch                    2.1.2
--------------------------------------------------
DeepSpeed C++/CUDA extension op report
--------------------------------------------------
async_io ............... [NO] ....... [NO]
fused_adam ............. [NO] ....... [OKAY]
cpu_adam ............... [NO] ....... [OKAY]
torch install path ............... ['/opt/conda/lib/python3.10/site-packages/torch']
nvcc version ..................... 12.1
  per_device_train_batch_size=8,
  learning_rate=2e-05,
  log_level=passive,
  on_error=raise,
Traceback (most recent call last):
  File "/workspace/train.py", line 10, in <module>
    import deepspeed
  File "/opt/conda/lib/python3.10/site-packages/deepspeed/__init__.py", line 25, in <module>
    from . import ops
  File "/opt/conda/lib/python3.10/site-packages/deepspeed/ops/op_builder/builder.py", line 102, in assert_no_cuda_mismatch
    raise CUDAMismatchException(
deepspeed.ops.op_builder.builder.CUDAMismatchException: >- DeepSpeed Op Builder: Installed CUDA version 11.8 does not match the version torch was compiled with 12.1, unable to compile cuda/cpp extensions without a matching cuda version.
"""

RAY_VLLM = """\
(RayWorkerWrapper pid=12731, ip=10.0.0.21) INFO 11-22 10:20:01 selector.py:135] Using Flash Attention backend.
(RayWorkerWrapper pid=12731, ip=10.0.0.21) ERROR 11-22 10:20:33 worker_base.py:464] Error executing method initialize_cache. This might cause deadlock in distributed execution.
(RayWorkerWrapper pid=12731, ip=10.0.0.21) ERROR 11-22 10:20:33 worker_base.py:464] Traceback (most recent call last):
(RayWorkerWrapper pid=12731, ip=10.0.0.21) ERROR 11-22 10:20:33 worker_base.py:464]   File "/usr/local/lib/python3.10/dist-packages/vllm/worker/worker_base.py", line 456, in execute_method
(RayWorkerWrapper pid=12731, ip=10.0.0.21) ERROR 11-22 10:20:33 worker_base.py:464]     return executor(*args, **kwargs)
(RayWorkerWrapper pid=12731, ip=10.0.0.21) ERROR 11-22 10:20:33 worker_base.py:464]   File "/usr/local/lib/python3.10/dist-packages/vllm/worker/worker.py", line 493, in raise_if_cache_size_invalid
(RayWorkerWrapper pid=12731, ip=10.0.0.21) ERROR 11-22 10:20:33 worker_base.py:464]     raise ValueError("No available memory for the cache blocks. "
(RayWorkerWrapper pid=12731, ip=10.0.0.21) ERROR 11-22 10:20:33 worker_base.py:464] ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.
(RayWorkerWrapper pid=12802, ip=10.0.0.22) ERROR 11-22 10:20:33 worker_base.py:464] ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.
"""

ANSI_LOG = (
    "\x1b[32mINFO\x1b[0m 11-22 10:01:02 api_server.py:527] vLLM API server version 0.6.3\n"
    "\x1b[31mERROR\x1b[0m 11-22 10:01:09 engine.py:135] RuntimeError('CUDA error: an illegal memory access was encountered')\n"
)

ENGLISH_ONE_LINER = "How do I fix RuntimeError: CUDA error: an illegal memory access was encountered when serving with vllm?"

CHINESE_INLINE = "训练一直输出\"Invalidate trace cache @ step 1024: expected module 12, but got module 30\"的警告，loss 也不更新了，是什么原因？"


HANG = """\
[2024-01-10 08:12:40,118] [INFO] [real_accelerator.py:191:get_accelerator] Setting ds_accelerator to cuda (auto detect)
Using /root/.cache/torch_extensions/py39_cu117 as PyTorch extensions root...
Detected CUDA files, patching ldflags
Emitting ninja build file /root/.cache/torch_extensions/py39_cu117/fused_adam/build.ninja...
Building extension module fused_adam...
Allowing ninja to set a default number of workers... (overridable by setting the environment variable MAX_JOBS=N)
ninja: no work to do.
Loading extension module fused_adam...
Using /root/.cache/torch_extensions/py39_cu117 as PyTorch extensions root...
"""

PDSH_LAUNCHER = """\
worker-1: Traceback (most recent call last):
worker-1:   File "/home/u/train.py", line 10, in <module>
worker-0: [2024-03-01 10:00:01,000] [INFO] [engine.py:1001:step] step=10 loss=2.1
worker-1:     main()
worker-1:   File "/usr/local/lib/python3.10/dist-packages/deepspeed/runtime/engine.py", line 1234, in forward
worker-1:     loss = self.module(*inputs, **kwargs)
worker-1: RuntimeError: CUDA error: an illegal memory access was encountered
worker-0: [2024-03-01 10:00:05,000] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 12345
worker-0: [2024-03-01 10:00:05,100] [ERROR] [launch.py:321:sigkill_handler] ['/usr/bin/python', '-u', 'train.py', '--local_rank=0'] exits with return code = 1
"""

SRUN_LABELS = """\
0: Traceback (most recent call last):
1: Traceback (most recent call last):
0:   File "/opt/conda/lib/python3.10/site-packages/megatron/core/tensor_parallel/layers.py", line 600, in forward
1:   File "/opt/conda/lib/python3.10/site-packages/megatron/core/tensor_parallel/layers.py", line 600, in forward
0:     output = self._forward_impl(
1:     output = self._forward_impl(
0: RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasGemmEx( handle, opa, opb, m, n, k, &falpha, a, CUDA_R_16BF, lda, b, CUDA_R_16BF, ldb, &fbeta, c, CUDA_R_16BF, ldc, CUDA_R_32F, CUBLAS_GEMM_DEFAULT_TENSOR_OP)`
1: RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasGemmEx( handle, opa, opb, m, n, k, &falpha, a, CUDA_R_16BF, lda, b, CUDA_R_16BF, ldb, &fbeta, c, CUDA_R_16BF, ldc, CUDA_R_32F, CUBLAS_GEMM_DEFAULT_TENSOR_OP)`
srun: error: gpu-node-12: task 0: Exited with exit code 1
"""

ENGLISH_QUESTION = """\
Hi all, I'm fine-tuning Llama-3-8B with QLoRA on 2x A100 and training hangs forever after the first step, here is the log:
[2024-06-01 12:00:00,000] [INFO] [comm.py:637:init_distributed] cdb=None
  0%|          | 0/1000 [00:00<?, ?it/s]
[E ProcessGroupNCCL.cpp:475] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=12, OpType=BROADCAST, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800533 milliseconds before timing out.
Any idea what could cause this?"""


def sig(text: str) -> Signature:
    s = extract(text)
    assert isinstance(s, Signature)
    return s


# ---------------------------------------------------------------------------
# Real-shaped pastes
# ---------------------------------------------------------------------------


def test_oom_new_format() -> None:
    s = sig(OOM_NEW)
    assert s.exception == "torch.OutOfMemoryError"
    assert s.message is not None and s.message.startswith("CUDA out of memory. Tried to allocate 3.39 GiB.")
    assert s.lines[0].startswith("torch.OutOfMemoryError: CUDA out of memory.")
    t = s.templates[0]
    assert "Tried to allocate <SIZE>. GPU <N> has a total capacity of <SIZE> of which <SIZE> is free." in t
    assert "Process <PID> has <SIZE> memory in use" in t
    assert "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True" in t
    assert s.components[0] == "deepspeed.runtime.zero"
    assert s.components[:4] == (
        "deepspeed.runtime.zero",
        "deepspeed.runtime.engine",
        "accelerate.accelerator",
        "transformers.trainer",
    )
    # generic torch internals rank after the libraries that explain the failure
    assert s.components.index("torch.autograd") > s.components.index("transformers.trainer")
    # progress bars, metrics dicts and user frames are not signal
    assert not any("it/s" in line or "train.py" in line or "'loss'" in line for line in s.lines)
    assert s.prose == ""


def test_oom_same_template_with_other_numbers() -> None:
    a, b = sig(OOM_NEW), sig(OOM_OTHER_NUMBERS)
    assert a.templates[0] == b.templates[0]
    assert a.lines[0] != b.lines[0]


def test_oom_old_format() -> None:
    s = sig(OOM_OLD)
    assert s.exception == "torch.cuda.OutOfMemoryError"
    assert s.templates[0] == (
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate <SIZE> (GPU <N>; <SIZE> total capacity;"
        " <SIZE> already allocated; <SIZE> free; <SIZE> reserved in total by PyTorch) If reserved memory is >>"
        " allocated memory try setting max_split_size_mb to avoid fragmentation. See documentation for Memory"
        " Management and PYTORCH_CUDA_ALLOC_CONF"
    )
    assert s.components[0] == "transformers.models.llama"
    assert "torch.cuda" in s.components


def test_nccl_watchdog_timeout_multi_rank() -> None:
    s = sig(NCCL_WATCHDOG)
    assert s.exception == "c10::DistBackendError"
    assert s.message is not None and "Watchdog caught collective operation timeout" in s.message
    watchdog = [t for t in s.templates if t.startswith("[Rank <RANK>] Watchdog caught")]
    # rank 3 and rank 5 print the same line with other numbers: one template
    assert watchdog == [
        "[Rank <RANK>] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=<N>, OpType=ALLREDUCE,"
        " NumelIn=<N>, NumelOut=<N>, Timeout(ms)=<N>) ran for <DUR> before timing out."
    ]
    assert any("Some NCCL operations have failed or timed out" in line for line in s.lines)
    # prefixes are gone; C++ frames are not signal
    assert not any(line.startswith("[rank") or line.startswith("[E1122") for line in s.lines)
    assert not any(line.startswith("frame #") or "Exception raised from" in line for line in s.lines)
    assert s.components[0] == "torch.distributed"
    assert len(s.templates) == len(set(s.templates))


def test_torchrun_child_failed_sigkill() -> None:
    s = sig(TORCHRUN_SIGKILL)
    assert s.exception == "torch.distributed.elastic.multiprocessing.errors.ChildFailedError"
    assert s.lines[0] == "torch.distributed.elastic.multiprocessing.errors.ChildFailedError"
    assert "Signal 9 (SIGKILL) received by PID 140302" in s.lines
    assert "Signal 9 (SIGKILL) received by PID <PID>" in s.templates
    assert "exitcode: -9 (pid: 140302)" in s.lines
    # exit codes are kept: -9 (OOM killer) and 1 (Python error) are different problems
    assert "exitcode: -9 (pid: <PID>)" in s.templates
    assert "failed (exitcode: -9) local_rank: <RANK> (pid: <PID>) of binary: <PATH>" in s.templates
    # the OMP_NUM_THREADS banner, separators, host/time fields are noise
    assert not any("OMP_NUM_THREADS" in line or "****" in line for line in s.lines)
    assert not any("gpu-a100-03" in line or line.startswith("time") for line in s.lines)
    assert "torch.distributed.elastic" in s.components


def test_torchrun_root_cause_is_the_rank_error() -> None:
    s = sig(TORCHRUN_WITH_RANK_ERROR)
    # the wrapper only says "a child failed": the rank's own error is primary
    assert s.exception == "torch.distributed.DistBackendError"
    assert s.lines[0].startswith("torch.distributed.DistBackendError: NCCL error in:")
    assert s.templates[0] == (
        "torch.distributed.DistBackendError: NCCL error in: torch/csrc/distributed/c10d/NCCLUtils.hpp:<N>,"
        " unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version <VER>"
    )
    # "Last error:" is joined with the line that carries it
    assert (
        "Last error: socketStartConnect: Connect to 10.0.0.12<35711> failed : Software caused connection abort"
        in s.lines
    )
    assert any(line.startswith("ncclSystemError: System call") for line in s.lines)
    assert "torch.distributed.elastic.multiprocessing.errors.ChildFailedError" in s.lines
    assert "exitcode: 1 (pid: 4122)" in s.lines
    assert not any("To enable traceback see" in line for line in s.lines)
    assert s.components[0] == "torch.distributed.distributed_c10d"


def test_torchrun_error_file_traceback() -> None:
    s = sig(TORCHRUN_ERROR_FILE)
    assert s.exception == "OSError"
    assert s.message is not None and "does not appear to have a file named pytorch_model.bin" in s.message
    assert s.templates[0].startswith("OSError: <PATH> does not appear to have a file named pytorch_model.bin")
    assert "error_file: <PATH>" in s.templates
    assert "transformers.modeling_utils" in s.components


def test_deepspeed_cpu_adam_jit_build() -> None:
    s = sig(DS_CPU_ADAM_BUILD)
    # the __del__ AttributeError printed after "Exception ignored in" is not the cause
    assert s.exception == "RuntimeError"
    assert s.message == "Error building extension 'cpu_adam'"
    assert s.lines[0] == "RuntimeError: Error building extension 'cpu_adam'"
    assert s.lines[1] == "subprocess.CalledProcessError: Command '['ninja', '-v']' returned non-zero exit status 1."
    assert "fatal error: cublas_v2.h: No such file or directory" in s.lines
    assert "FAILED: cpu_adam.o" in s.lines
    assert "ninja: build stopped: subcommand failed." in s.lines
    assert "AttributeError: 'DeepSpeedCPUAdam' object has no attribute 'ds_opt_adam'" in s.lines
    assert s.lines.index("fatal error: cublas_v2.h: No such file or directory") < s.lines.index("FAILED: cpu_adam.o")
    # compile commands are not signal
    assert not any(line.startswith(("[1/3]", "c++ ")) for line in s.lines)
    assert set(s.components[:3]) == {"torch.utils.cpp_extension", "deepspeed.ops.adam", "deepspeed.ops.op_builder"}


def test_flash_attn_pip_build() -> None:
    s = sig(FLASH_ATTN_PIP)
    assert s.exception == "RuntimeError"
    assert s.message == "Error compiling objects for extension"
    assert "nvcc fatal : Unsupported gpu architecture 'compute_90'" in s.lines
    assert "nvcc fatal : Unsupported gpu architecture 'compute_90'" in s.templates  # compute_90 kept
    assert "ERROR: Failed building wheel for flash-attn" in s.lines
    assert "error: subprocess-exited-with-error" in s.lines
    assert "× python setup.py bdist_wheel did not run successfully." in s.lines
    i = s.lines.index
    assert i("nvcc fatal : Unsupported gpu architecture 'compute_90'") < i("ERROR: Failed building wheel for flash-attn")
    assert i("ERROR: Failed building wheel for flash-attn") < i("error: subprocess-exited-with-error")
    # pip chatter, git's "not a git repository" and box-drawing lines are noise
    assert not any("not a git repository" in line or "exit code: 1" in line for line in s.lines)
    assert not any(line.startswith(("Requirement already", "Collecting", "$ pip")) for line in s.lines)


def test_python_h_missing() -> None:
    s = sig(PYTHON_H)
    assert s.exception is None
    assert s.lines[0] == "fatal error: Python.h: No such file or directory"
    assert "error: command '/usr/bin/gcc' failed with exit code 1" in s.lines
    assert "error: command '<PATH>' failed with exit code 1" in s.templates
    assert "ERROR: Failed building wheel for deepspeed" in s.lines


def test_bitsandbytes_cuda_setup() -> None:
    s = sig(BNB_SETUP)
    assert s.exception == "RuntimeError"
    assert s.message == (
        "CUDA Setup failed despite GPU being available. Please run the following command to get more information:"
    )
    assert any(line.startswith("CUDA SETUP: Required library version not found: libbitsandbytes_cuda118.so") for line in s.lines)
    assert any("libcudart.so not found in any environmental path" in line for line in s.lines)
    assert any(line.startswith("UserWarning: /opt/conda did not contain") for line in s.lines)
    assert not any("ERROR====" in line or "BUG REPORT" in line for line in s.lines)
    assert s.components[0].startswith("bitsandbytes")


def test_vllm_kv_cache_value_error() -> None:
    s = sig(VLLM_KV_CACHE)
    assert s.exception == "ValueError"
    assert s.templates[0] == (
        "ValueError: The model's max seq len (<N>) is larger than the maximum number of tokens that can be stored"
        " in KV cache (<N>). Try increasing gpu_memory_utilization or decreasing max_model_len when"
        " initializing the engine."
    )
    assert s.components[:2] == ("vllm.worker.worker", "vllm.engine.llm_engine")
    # INFO lines and checkpoint-loading bars are not signal
    assert not any("Loading" in line or "Initializing" in line for line in s.lines)


def test_device_side_assert() -> None:
    s = sig(DEVICE_ASSERT)
    assert s.exception == "RuntimeError"
    assert s.message == "CUDA error: device-side assert triggered"
    asserts = [t for t in s.templates if "Assertion" in t]
    # four threads/blocks print the same assertion: one template survives
    assert asserts == [
        "aten/src/ATen/native/cuda/Indexing.cu:<N>: indexSelectLargeIndex: block: <SHAPE>, thread: <SHAPE>"
        " Assertion srcIndex < srcSelectDimSize failed."
    ]
    assert not any("asynchronously reported" in line or "CUDA_LAUNCH_BLOCKING" in line for line in s.lines)
    assert "transformers.models.bert" in s.components


def test_multi_rank_interleaved() -> None:
    s = sig(MULTI_RANK)
    assert s.exception == "RuntimeError"
    assert s.message is not None and s.message.startswith("Expected to mark a variable ready only once.")
    assert sum(line.startswith("RuntimeError: Expected to mark") for line in s.lines) == 1
    assert s.components[0] in ("torch.nn.parallel", "transformers.trainer")
    assert "torch.nn.parallel" in s.components
    assert "failed (exitcode: 1) local_rank: <RANK> (pid: <PID>) of binary: <PATH>" in s.templates


def test_chinese_question_around_traceback() -> None:
    s = sig(CHINESE_QUESTION)
    assert s.exception == "ImportError"
    assert s.message is not None and s.message.startswith("FlashAttention2 has been toggled on")
    assert s.prose.startswith("大佬们好，我用 LLaMA-Factory 做 Qwen2-7B 的 LoRA 微调")
    assert "谢谢！" in s.prose
    assert "Traceback" not in s.prose and "File" not in s.prose
    assert "transformers.modeling_utils" in s.components
    assert "llamafactory.launcher" in s.components  # source checkout, not site-packages
    text = s.text()
    assert text.startswith("大佬们好") and "ImportError: FlashAttention2" in text and len(text) <= 2000


def test_chained_exceptions() -> None:
    s = sig(CHAINED)
    assert s.exception == "OSError"
    assert s.message is not None and s.message.startswith("We couldn't connect to 'https://huggingface.co'")
    assert s.lines[0].startswith("OSError: We couldn't connect")
    # earlier exceptions of the chain follow, the direct cause first
    assert s.lines[1].startswith("urllib3.exceptions.ConnectTimeoutError:")
    assert s.lines[2] == "TimeoutError: [Errno 110] Connection timed out"
    assert "TimeoutError: [Errno <N>] Connection timed out" in s.templates
    assert s.templates[0].startswith("OSError: We couldn't connect to '<URL>' to load this file")
    assert s.components[0] == "transformers.utils.hub"


def test_user_warning() -> None:
    s = sig(USER_WARNING)
    assert s.exception == "UserWarning"
    assert s.message is not None and s.message.startswith("torch.utils.checkpoint: the use_reentrant parameter")
    assert len(s.lines) == 1  # repeated warning, deduped; "warnings.warn(" and the bar are noise
    assert s.lines[0].startswith("UserWarning: torch.utils.checkpoint:")
    assert s.components == ("torch.utils.checkpoint",)


def test_future_warning() -> None:
    s = sig(FUTURE_WARNING)
    assert s.exception == "FutureWarning"
    assert s.lines[0].startswith("FutureWarning: `clean_up_tokenization_spaces` was not set.")
    assert "transformers <VER>" in s.templates[0]
    assert s.components == ("transformers.tokenization_utils_base",)


def test_nvcc_fatal_unsupported_arch() -> None:
    s = sig(NVCC_ARCH)
    assert s.exception is None
    assert s.lines[0] == "nvcc fatal : Unsupported gpu architecture 'compute_90'"
    assert s.templates[0] == "nvcc fatal : Unsupported gpu architecture 'compute_90'"
    assert "error: command '<PATH>' failed with exit code 1" in s.templates
    assert not any(line.startswith("/usr/local/cuda") for line in s.lines)


def test_import_error_undefined_symbol() -> None:
    s = sig(UNDEFINED_SYMBOL)
    assert s.exception == "ImportError"
    assert s.templates[0] == (
        "ImportError: flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: undefined symbol: _ZN3c104cuda9SetDeviceEi"
    )
    assert s.components[0] == "flash_attn.flash_attn_interface"


def test_deepspeed_trace_cache_warnings() -> None:
    s = sig(DS_TRACE_CACHE)
    trace = [t for t in s.templates if t.startswith("Invalidate trace cache")]
    assert trace == ["Invalidate trace cache @ step <N>: expected module <N>, but got module <N>"]
    assert any(line.startswith("4 pytorch allocator cache flushes since last step") for line in s.lines)
    assert any(line.startswith("A module has unknown inputs or outputs type") for line in s.lines)
    # the error-ish line outranks DeepSpeed [WARNING] lines; no timestamps or [WARNING] prefixes remain
    assert s.lines[0].startswith("Invalidate trace cache")
    assert not any(line.startswith("[") for line in s.lines)
    assert "deepspeed.runtime.zero" in s.components


def test_uvicorn_asgi_exception() -> None:
    s = sig(UVICORN_ASGI)
    assert s.exception == "ValueError"
    assert s.templates[0] == (
        "ValueError: This model's maximum context length is <N> tokens. However, you requested <N> tokens"
        " (<N> in the messages, <N> in the completion). Please reduce the length of the messages or completion."
    )
    assert "Exception in ASGI application" in s.lines
    assert s.components[0] == "vllm.entrypoints.openai"
    assert "uvicorn.protocols.http" in s.components and s.components.index("uvicorn.protocols.http") > 0


def test_tcpstore_timeout() -> None:
    s = sig(TCPSTORE)
    assert s.exception == "torch.distributed.DistNetworkError"
    assert s.templates[0] == (
        "torch.distributed.DistNetworkError: The client socket has timed out after <DUR> while trying to connect"
        " to (<IP>, <N>)."
    )
    assert any(t.startswith("[c10d] The client socket has failed to connect to [<HOST>]:<N>") for t in s.templates)


def test_nccl_warn_and_last_error() -> None:
    s = sig(NCCL_WARN)
    assert s.exception == "torch.distributed.DistBackendError"
    assert "Last error: Call to ibv_reg_mr failed with error Cannot allocate memory" in s.lines
    assert "NCCL WARN Call to ibv_reg_mr failed with error Cannot allocate memory" in s.lines
    # NCCL INFO chatter (including the benign net plugin message) is noise
    assert not any("NCCL INFO" in line or "libnccl-net.so" in line for line in s.lines)
    assert s.components[0] == "torch.distributed.distributed_c10d"


def test_mp_spawn_process_raised() -> None:
    s = sig(MP_SPAWN)
    assert s.exception == "RuntimeError"
    assert s.templates[0] == (
        "RuntimeError: DDP expects same model across all ranks, but Rank <RANK> has <N> params, while rank <RANK>"
        " has inconsistent <N> params."
    )
    assert "torch.multiprocessing.spawn.ProcessRaisedException" in s.lines
    assert s.components[0] == "torch.nn.parallel"


def test_killed_after_progress_bars() -> None:
    s = sig(KILLED)
    assert s.exception is None
    assert s.lines == ("Killed",)


def test_dataloader_bus_error() -> None:
    s = sig(BUS_ERROR)
    assert s.exception == "RuntimeError"
    assert s.templates[0] == (
        "RuntimeError: DataLoader worker (pid <PID>) is killed by signal: Bus error. It is possible that"
        " dataloader's workers are out of shared memory. Please try to raise your shared memory limit."
    )
    assert "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm)." in s.lines
    assert s.components[0].startswith("torch.utils.data")


def test_multiline_message_details() -> None:
    s = sig(DS_CONFIG_MISMATCH)
    assert s.exception == "ValueError"
    assert s.message == "Please correct the following DeepSpeed config values that mismatch TrainingArguments values:"
    assert "transformers.integrations.deepspeed" in s.components
    assert not any("cdb=None" in line for line in s.lines)


def test_env_dump_is_noise() -> None:
    s = sig(ENV_DUMP)
    assert s.exception == "deepspeed.ops.op_builder.builder.CUDAMismatchException"
    assert len(s.lines) == 1
    assert s.templates[0] == (
        "deepspeed.ops.op_builder.builder.CUDAMismatchException: >- DeepSpeed Op Builder: Installed CUDA version <N>"
        " does not match the version torch was compiled with <N>, unable to compile cuda/cpp extensions without a"
        " matching cuda version."
    )
    assert s.components[0] == "deepspeed.ops.op_builder"


def test_ray_worker_prefixes() -> None:
    s = sig(RAY_VLLM)
    assert s.exception == "ValueError"
    assert s.lines[0] == (
        "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when"
        " initializing the engine."
    )
    assert sum(line.startswith("ValueError") for line in s.lines) == 1  # two workers, one line
    assert "Error executing method initialize_cache. This might cause deadlock in distributed execution." in s.lines
    assert not any("pid=" in line or "Flash Attention backend" in line for line in s.lines)
    assert s.components[0] == "vllm.worker.worker"


def test_ansi_codes_stripped() -> None:
    s = sig(ANSI_LOG)
    assert s.lines == ("RuntimeError('CUDA error: an illegal memory access was encountered')",)
    assert not any("\x1b" in line for line in s.lines + s.templates)


def test_english_one_liner_question() -> None:
    s = sig(ENGLISH_ONE_LINER)
    assert s.exception == "RuntimeError"
    assert s.message == "CUDA error: an illegal memory access was encountered when serving with vllm?"
    assert s.prose == "How do I fix"


def test_chinese_inline_quoted_error() -> None:
    s = sig(CHINESE_INLINE)
    assert s.lines == ("Invalidate trace cache @ step 1024: expected module 12, but got module 30",)
    assert s.templates == ("Invalidate trace cache @ step <N>: expected module <N>, but got module <N>",)
    assert "训练一直输出" in s.prose and "是什么原因" in s.prose
    assert "Invalidate" not in s.prose


def test_hang_without_error_keeps_last_log_lines() -> None:
    s = sig(HANG)
    assert s.exception is None
    assert s.lines == (
        "Using /root/.cache/torch_extensions/py39_cu117 as PyTorch extensions root...",
        "Loading extension module fused_adam...",
    )
    assert s.templates[0] == "Using <PATH> as PyTorch extensions root..."


def test_fix_blocks_are_not_signal() -> None:
    """Articles run extract() over their code blocks too; commands and config must not become error lines."""
    for block in (
        'pip install -U "deepspeed>=0.14.4"\nexport NCCL_P2P_DISABLE=1',
        "model.gradient_checkpointing_enable()\ntrainer.train()",
        '{\n  "zero_optimization": {"stage": 3, "offload_param": {"device": "cpu"}}\n}',
        "torchrun --nproc_per_node 8 train.py --deepspeed ds_z3.json",
    ):
        assert sig(block).lines == ()


def test_pdsh_host_prefixes() -> None:
    s = sig(PDSH_LAUNCHER)
    assert s.exception == "RuntimeError"
    assert s.lines[0] == "RuntimeError: CUDA error: an illegal memory access was encountered"
    assert "['<PATH>', '-u', 'train.py', '--local_rank=<RANK>'] exits with return code = <N>" in s.templates
    assert s.components[0] == "deepspeed.runtime.engine"
    assert not any(line.startswith("worker-") for line in s.lines)


def test_srun_labels() -> None:
    s = sig(SRUN_LABELS)
    assert s.exception == "RuntimeError"
    assert sum(line.startswith("RuntimeError") for line in s.lines) == 1
    assert s.message is not None and "CUBLAS_STATUS_EXECUTION_FAILED" in s.message
    assert "srun: error: <HOST>: task <N>: Exited with exit code 1" in s.templates
    assert s.components == ("megatron.core.tensor_parallel",)


def test_english_question_around_log() -> None:
    s = sig(ENGLISH_QUESTION)
    assert s.prose == (
        "Hi all, I'm fine-tuning Llama-3-8B with QLoRA on 2x A100 and training hangs forever after the first step,"
        " here is the log:\nAny idea what could cause this?"
    )
    assert s.lines[0].startswith("[Rank 1] Watchdog caught collective operation timeout")
    assert s.templates[0].endswith("Timeout(ms)=<N>) ran for <DUR> before timing out.")
    assert s.components == ("torch.distributed",)


def test_article_block_and_query_share_templates() -> None:
    """An article's clean error block and a user's prefixed multi-rank paste meet on the same template."""
    article = (
        "[rank0]:[E1122 10:41:57.482316713 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation"
        " timeout: WorkNCCL(SeqNum=5, OpType=_ALLGATHER_BASE, NumelIn=8, NumelOut=64, Timeout(ms)=600000) ran for"
        " 600081 milliseconds before timing out."
    )
    query = (
        "[rank6]:[E0301 01:02:03.000000001 ProcessGroupNCCL.cpp:616] [Rank 6] Watchdog caught collective operation"
        " timeout: WorkNCCL(SeqNum=98213, OpType=_ALLGATHER_BASE, NumelIn=1310720, NumelOut=10485760,"
        " Timeout(ms)=1800000) ran for 1800093 milliseconds before timing out."
    )
    assert sig(article).templates == sig(query).templates


def test_seed_page_like_article() -> None:
    """A scraped Chinese article quoting its error inline (as in shared/seeds)."""
    page = (
        "Huggingface Open-R1项目中的DeepSpeed Zero3训练缓存失效问题分析\n"
        "2025-05-08 01:40:21作者:吴年前Myrtle\n问题现象描述\n"
        "具体表现为训练停滞，控制台不断输出\"Invalidate trace cache @ step 55651: expected module 319, but got module 636\""
        "的警告信息，同时训练损失(loss)日志停止更新。\n登录后查看全文\n"
    )
    s = sig(page)
    assert "Invalidate trace cache @ step <N>: expected module <N>, but got module <N>" in s.templates
    assert "问题现象描述" in s.prose


def test_text_is_bounded_and_ordered() -> None:
    s = sig(CHINESE_QUESTION + FLASH_ATTN_PIP * 5)
    text = s.text()
    assert len(text) <= 2000
    assert text.startswith(s.prose[:20])
    assert s.components[0] in text


def test_empty_and_noise_only() -> None:
    assert sig("") == Signature(None, None, (), (), (), "")
    s = sig(" 45%|████▌     | 9/20 [00:01<00:02,  4.1it/s]\n\n\n")
    assert s.lines == () and s.exception is None


# ---------------------------------------------------------------------------
# mask()
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("Tried to allocate 3.39 GiB; 512 MiB; 20.00 MiB", "Tried to allocate <SIZE>; <SIZE>; <SIZE>"),
        ("at 0x7f3a9c0b1d20 in libc10.so", "at <HEX> in libc10.so"),
        (
            "File /usr/lib/python3/dist-packages/deepspeed/runtime/engine.py line 12",
            "File deepspeed/runtime/engine.py line <N>",
        ),
        ("open /home/alice/data/train.jsonl failed", "open <PATH> failed"),
        ("rank 3 and [rank3] and local_rank: 0", "rank <RANK> and [rank<RANK>] and local_rank: <RANK>"),
        ("host node-17.cluster.local and gpu-a100-03", "host <HOST> and <HOST>"),
        ("connect to 10.0.0.12:29500 failed", "connect to <IP>:<PORT> failed"),
        ("bind to [::1]:29500 and [fe80::1ff:fe23:4567:890a]", "bind to <IP>:<PORT> and <IP>"),
        ("job 123e4567-e89b-12d3-a456-426614174000", "job <UUID>"),
        ("got torch.Size([4, 512, 4096]) vs [4, 512, 4096] vs (32, 128)", "got <SHAPE> vs <SHAPE> vs <SHAPE>"),
        ("mat1 and mat2 shapes cannot be multiplied (4x4096 and 11008x4096)", "mat1 and mat2 shapes cannot be multiplied (<SHAPE> and <SHAPE>)"),
        ("2024-11-22 10:01:02,123 started; W1122 10:01:02.123456 x", "<TS> started; <TS> x"),
        ("ran for 600012 milliseconds; timed out after 1800s", "ran for <DUR>; timed out after <DUR>"),
        ("deepspeed 0.16.0 and torch==2.1.0+cu121", "deepspeed <VER> and torch==<VER>"),
        ("pid: 12345, PID 777, (pid=42)", "pid: <PID>, PID <PID>, (pid=<PID>)"),
        (
            "sm_90 cu117 py39_cu117 compute_90 ds_opt_adam NCCL_P2P_DISABLE CUDA_HOME torch.cuda.OutOfMemoryError",
            "sm_90 cu117 py39_cu117 compute_90 ds_opt_adam NCCL_P2P_DISABLE CUDA_HOME torch.cuda.OutOfMemoryError",
        ),
        ("exitcode: -9 exit status 1 Signal 9 (SIGKILL)", "exitcode: -9 exit status 1 Signal 9 (SIGKILL)"),
        ("see https://pytorch.org/docs/stable/notes/cuda.html#environment-variables.", "see <URL>."),
        ("\x1b[31mERROR\x1b[0m  x", "ERROR x"),
        ("C:\\Users\\me\\anaconda3\\Lib\\site-packages\\torch\\nn\\functional.py", "torch/nn/functional.py"),
        ("Qwen2-7B Llama-2-7b-hf x86_64 utf-8 fp16", "Qwen2-7B Llama-2-7b-hf x86_64 utf-8 fp16"),
    ],
)
def test_mask_examples(raw: str, expected: str) -> None:
    assert mask(raw) == expected
    assert mask(expected) == expected


def test_mask_trace_cache_example() -> None:
    a = mask("Invalidate trace cache @ step 55651: expected module 319, but got module 636")
    b = mask("Invalidate trace cache @ step 12: expected module 4, but got module 88")
    assert a == b == "Invalidate trace cache @ step <N>: expected module <N>, but got module <N>"


def test_mask_keeps_case() -> None:
    assert mask("CUDA Error: Out Of Memory") == "CUDA Error: Out Of Memory"


# ---------------------------------------------------------------------------
# is_error_line()
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "RuntimeError: CUDA error: device-side assert triggered",
        "[rank3]: torch.OutOfMemoryError: CUDA out of memory.",
        "nvcc fatal   : Unsupported gpu architecture 'compute_90'",
        "  ERROR: Failed building wheel for flash-attn",
        "terminate called after throwing an instance of 'c10::Error'",
        "node-1:1:1 [0] misc/socket.cc:484 NCCL WARN Net : Connect to 10.0.0.1<1234> failed : Connection refused",
        "/x/site-packages/torch/utils/checkpoint.py:464: UserWarning: use_reentrant parameter should be passed",
        "[2024-11-22 10:01:02,345] [WARNING] [stage3.py:2117:step] 4 pytorch allocator cache flushes since last step.",
        "ERROR 11-22 10:01:02 engine.py:123] Engine background task failed",
        "Invalidate trace cache @ step 55651: expected module 319, but got module 636",
        "Segmentation fault (core dumped)",
    ],
)
def test_is_error_line_true(line: str) -> None:
    assert is_error_line(line)


@pytest.mark.parametrize(
    "line",
    [
        '  File "/opt/conda/lib/python3.10/site-packages/torch/nn/modules/module.py", line 1501, in _call_impl',
        " 45%|████▌     | 9/20 [00:01<00:02,  4.1it/s]",
        "torch                    2.1.2",
        "on_error=raise,",
        "async_io ............... [NO] ....... [NO]",
        "INFO 11-22 10:01:02 llm_engine.py:237] Initializing an LLM engine (v0.6.3.post1) with config: x",
        "============================================================",
        "CUDA kernel errors might be asynchronously reported at some other API call.",
        "",
        "Loading checkpoint shards: 100%|██████████| 4/4 [00:09<00:00,  2.31s/it]",
    ],
)
def test_is_error_line_false(line: str) -> None:
    assert not is_error_line(line)


# ---------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------

_TOKENS = st.sampled_from(
    [
        "0", "9", "12", "3.39", "-9", "1e-5", "0x7f3a", "deadbeefcafe01", "GiB", " MiB", "s", "ms", " seconds",
        "/", "\\", ".", ":", "-", "_", "=", ",", " ", "  ", "[", "]", "(", ")", "<", ">", "@", "'", '"', "`",
        "rank", "Rank ", "pid", "process ", "exitcode: ", "exit status ", "Signal ", "host: ", "node-", "gpu-a100-",
        "site-packages/", "dist-packages/", "torch", "deepspeed/", ".py", ".so.", "http://", "https://a.b/c",
        "10.0.0.12", "::1", "[::1]", "fe80::", "c10::", "torch.Size([", "x", "v", "==", "2024-11-22", " 10:01:02",
        "W1122", "T", "Z", "sm_90", "cu117", "<N>", "<PATH>", "<SIZE>", "\x1b[31m", "\t", "\n", "\x00", "é", "中",
        "12345678-1234-1234-1234-123456789abc", ".local", "-packages", "~", "C:\\",
    ]
)
_STRUCTURED = st.lists(_TOKENS, max_size=40).map("".join)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.text(max_size=300), _STRUCTURED))
def test_mask_idempotent(s: str) -> None:
    m = mask(s)
    assert mask(m) == m


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=2000))
def test_extract_never_raises_text(s: str) -> None:
    sig_ = _extract(s)  # the guarded public extract() would hide internal errors
    assert isinstance(sig_, Signature)
    assert len(sig_.text()) <= 2000
    assert len(sig_.lines) == len(sig_.templates)
    for line, t in zip(sig_.lines, sig_.templates):
        assert mask(line) == t


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(_STRUCTURED, st.sampled_from(OOM_NEW.splitlines() + NCCL_WATCHDOG.splitlines())), max_size=30))
def test_extract_never_raises_structured(lines: list[str]) -> None:
    s = _extract("\n".join(lines))
    assert len(s.lines) == len(s.templates)
    assert all(mask(t) == t for t in s.templates)


# Lines that sit at the edges of a traceback run: frames at other indents, source and caret lines,
# blanks, tabs, other ranks' lines, "File" lines that are not frames, exceptions, chatter.
_TB_LINE_LIST = [
    "Traceback (most recent call last):",
    '  File "/opt/conda/lib/python3.10/site-packages/deepspeed/runtime/engine.py", line 1976, in backward',
    '  File "/opt/conda/lib/python3.10/site-packages/torch/_tensor.py", line 522, in backward',
    '  File "/home/u/train.py", line 3, in <module>',
    '  File "/home/u/train.py", line 3',
    '    File "/opt/conda/lib/python3.10/site-packages/vllm/engine/llm_engine.py", line 9, in step',
    'File "/opt/conda/lib/python3.10/site-packages/accelerate/accelerator.py", line 2126, in backward',
    '  File "/x.py", line 12 extra',
    '  File "/x.py"',
    "    self.optimizer.backward(loss)",
    "  raise ValueError(x)",
    "        ^^^^^^^^^^^^^^^^^^^^^^",
    "    ...",
    "  [Previous line repeated 2 more times]",
    "\t  x = 1",
    "   ",
    "",
    "RuntimeError: CUDA error: an illegal memory access was encountered",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.39 GiB.",
    "During handling of the above exception, another exception occurred:",
    "node-3:31452:31452 [1] NCCL WARN Call to ibv_reg_mr failed",
    "{'loss': 1.3125, 'grad_norm': 0.84765625}",
    " 12%|█▏        | 120/1000 [05:31<40:29,  2.76s/it]",
    "Any idea what causes this?",
]
_TB_LINES = st.sampled_from(_TB_LINE_LIST)
_FRAMES = st.sampled_from([line for line in _TB_LINE_LIST if "File" in line or line.startswith("    ")])
# A block is one stream's lines: a traceback head, then mostly frames and source lines, then anything.
_BLOCKS = st.tuples(
    st.sampled_from(["", "[rank0]: ", "[rank1]: ", "[rank1]:", "[default0]: ", "node-2: "]),
    st.lists(st.one_of(_FRAMES, _FRAMES, _TB_LINES), max_size=12),
).map(lambda b: [b[0] + "Traceback (most recent call last):"] + [b[0] + line for line in b[1]])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_BLOCKS, max_size=8))
def test_shortcuts_change_nothing(blocks: list[list[str]]) -> None:
    """Frame runs taken in one match, and chatter decided once per line shape, give what line-by-line parsing gives."""
    text = "\n".join(line for block in blocks for line in block)
    fast = _extract(text)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sig_mod._Extractor, "take_run", lambda self, text, start: [])
        mp.setattr(sig_mod, "_DIGITS_TO_0", bytes(range(256)))  # each line is its own shape
        slow = _extract(text)
    assert fast == slow


@settings(max_examples=10, deadline=None)
@given(st.text(min_size=1, max_size=3), st.integers(min_value=10_000, max_value=200_000))
def test_huge_lines_and_nul(chunk: str, n: int) -> None:
    text = (chunk * (n // len(chunk)))[:n]
    s = _extract(text + "\x00\nRuntimeError: boom\x00\n" + text)
    assert isinstance(s, Signature)
    m = mask(text)
    assert len(m) <= 2000 and mask(m) == m
    assert isinstance(is_error_line(text), bool)


def test_one_megabyte_line() -> None:
    s = _extract("a" * 1_000_000 + "\nValueError: x")
    assert s.exception == "ValueError"
    assert mask("9" * 1_000_000) == "<N>"


_ADVERSARIAL = [
    "a=" * 1000 + "a x",  # key=value run that once backtracked exponentially
    "=" * 2000 + "x",
    "http://" * 300,
    "1." * 1000,
    "1-" * 1000,
    "[1," * 600 + "x",
    "x:1: " * 400 + "UserWarning",
    "a." * 500 + "Error",
    'File "' + "a" * 1990 + '", line',
    "[rank1]:" * 250,
    "node-" + "a-" * 990 + "1x",
    "a." * 999 + "localx",
    "1:" * 1000,
    "\x1b[" + "1;" * 900 + "m",
    "How " + "a." * 900 + "xError: y",
    "中" * 1000 + "Error: " + "a" * 900,
]


@pytest.mark.parametrize("text", _ADVERSARIAL)
def test_adversarial_inputs_finish(text: str) -> None:
    """Pathological shapes for the regexes; a catastrophic backtrack would hang here."""
    s = _extract("\n".join([text] * 20))
    assert len(s.lines) == len(s.templates)
    m = mask(text)
    assert mask(m) == m
    assert isinstance(is_error_line(text), bool)


def test_a_bare_exception_line_is_the_error():
    sig = extract("loading shards: 100%|██████████| 4/4\nException: Expected all tensors to be on the same device")
    assert sig.exception == "Exception"
    assert sig.lines == ("Exception: Expected all tensors to be on the same device",)
    assert extract("Exceptional circumstances, really").lines == ()


# ---------------------------------------------------------------------------
# Traceback shapes of issue 15: frames behind any log prefix, a header glued to a progress
# bar, a paste cut off before its final exception line, wrapper and epilogue lines
# ---------------------------------------------------------------------------

VLLM_ENGINE_CORE = """\
(EngineCore_0 pid=6120) ERROR 08-27 19:02:47 [core.py:700] EngineCore failed to start.
(EngineCore_0 pid=6120) ERROR 08-27 19:02:47 [core.py:700] Traceback (most recent call last):
(EngineCore_0 pid=6120) ERROR 08-27 19:02:47 [core.py:700]   File "/venv/lib/python3.11/site-packages/vllm/v1/worker/gpu_model_runner.py", line 2708, in capture_model
(EngineCore_0 pid=6120) ERROR 08-27 19:02:47 [core.py:700]     self._capture_cudagraphs(
(EngineCore_0 pid=6120) ERROR 08-27 19:02:47 [core.py:700]   File "/venv/lib/python3.11/site-packages/torch/cuda/graphs.py", line 186, in __exit__
(EngineCore_0 pid=6120) ERROR 08-27 19:02:47 [core.py:700]     self.cuda_graph.capture_end()
(EngineCore_0 pid=6120) ERROR 08-27 19:02:47 [core.py:700] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 96.00 MiB.
(APIServer pid=6001) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}
"""


def test_wrapper_and_epilogue_lines_give_way_to_the_real_error() -> None:
    sig = focus(extract(VLLM_ENGINE_CORE))
    assert sig.exception == "torch.OutOfMemoryError"
    assert not any("See root cause above" in line or "EngineCore failed" in line for line in sig.lines)
    watchdog = focus(extract("\n".join([
        "[rank2]:[E311 14:12:24.117362301 ProcessGroupNCCL.cpp:607] [Rank 2] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=1, OpType=BROADCAST, NumelIn=86415592, NumelOut=86415592, Timeout(ms)=600000) "
        "ran for 600041 milliseconds before timing out.",
        "[rank2]:[E311 14:12:24.119851023 ProcessGroupNCCL.cpp:621] [Rank 2] Some NCCL operations have failed or "
        "timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on "
        "corrupted/incomplete data.",
        "terminate called after throwing an instance of 'c10::DistBackendError'",
        "lab-ws3:8857:8857 [0] NCCL INFO NET/Plugin : dlerror=libnccl-net.so: cannot open shared object file: No "
        "such file or directory No plugin found (libnccl-net.so), using internal implementation",
    ])))
    assert len(watchdog.lines) == 1 and "Watchdog caught collective operation timeout" in watchdog.lines[0]
    compiled = focus(extract("torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\n"
                             "AssertionError: libcuda.so cannot found!\n"))
    assert compiled.lines == ("AssertionError: libcuda.so cannot found!",)
    # A paste with nothing but the wrapper keeps it: then it is the signal.
    assert focus(extract("EngineCore failed to start.\n")).lines == ("EngineCore failed to start.",)


def test_a_traceback_header_glued_to_a_progress_bar_starts_the_traceback() -> None:
    text = "\n".join([
        "  0%|          | 0/1250 [00:00<?, ?it/s][rank2]: Traceback (most recent call last):",
        '[rank2]:   File "/home/lin/rlhf/ppo_trainer.py", line 144, in train',
        "[rank2]:     seq = self.actor.generate(prompts, **gen_kwargs)",
        '[rank2]:   File "/opt/conda/lib/python3.10/site-packages/deepspeed/runtime/zero/parameter_offload.py", '
        "line 505, in pre_sub_module_forward_function",
        "[rank2]:     param_coordinator.fetch_sub_module(sub_module, forward=True)",
        "[rank2]: RuntimeError: boom",
    ])
    sig = extract(text)
    assert sig.exception == "RuntimeError"
    assert sig.components[0] == "deepspeed.runtime.zero"


def test_a_paste_cut_off_inside_a_traceback_ranks_on_its_deepest_calls() -> None:
    """People copy the top half of a long log: no exception line, so the deepest frames are the signal,
    without their install paths (`/opt/venv/lib/python3.10/site-packages/`, words every traceback has)."""
    sig = extract("\n".join([
        "$ accelerate launch --config_file zero2.yaml custom_loop.py",
        "Traceback (most recent call last):",
        '  File "/home/xu/loop/custom_loop.py", line 71, in <module>',
        "    model, optimizer, train_iter = accelerator.prepare(model, optimizer, train_iter)",
        '  File "/opt/venv/lib/python3.10/site-packages/accelerate/accelerator.py", line 1339, in prepare',
        "    result = self._prepare_deepspeed(*args)",
        '  File "/opt/venv/lib/python3.10/site-packages/accelerate/accelerator.py", line 1686, in _prepare_deepspeed',
        "    raise ValueError(",
    ]))
    assert sig.exception is None
    assert sig.lines == (
        "accelerate/accelerator.py in _prepare_deepspeed: raise ValueError(",
        "accelerate/accelerator.py in prepare: result = self._prepare_deepspeed(*args)",
        "custom_loop.py in <module>: model, optimizer, train_iter = accelerator.prepare(model, optimizer, train_iter)",
    )
    assert sig.components[0] == "accelerate.accelerator"
    # A paste that ends in plain log lines (a hang) still reports its last lines.
    hang = extract("Traceback (most recent call last):\n  File \"/x/a.py\", line 3, in f\n    g()\n"
                   "ValueError: x\nLoading extension module cpu_adam...\nTime to load cpu_adam op: 2.4 seconds\n")
    assert hang.exception == "ValueError"


def test_a_shell_command_is_not_an_error_line() -> None:
    """`$ journalctl -k | grep -i oom` names an error word; it is what the user typed, not what failed."""
    sig = extract("\n".join([
        '$ journalctl -k --since "22:00" | grep -i oom',
        "Dec 03 22:00:10 hpc-gpu-112 kernel: Out of memory: Killed process 203310 (python) total-vm:498211360kB",
        "(train) mli@a100-box-3:~/work/rm$ dmesg | grep -i error",
    ]))
    assert len(sig.lines) == 1 and "Killed process" in sig.lines[0]
    assert not is_error_line("root@pod-llm-5b7d9:/app# python check_oom.py --fail-fast")
    assert is_error_line("RuntimeError: user@host:~$ is not a valid path")


def test_frames_a_logger_printed_are_the_deepest_calls() -> None:
    """vLLM's engine logs its traceback through a logger: every frame carries `(EngineCore_0 pid=…) ERROR … [core.py:…]`.
    Those frames tell a CUDA-graph capture OOM from every other OOM, so they must count as calls."""
    from kb.signature import frame_calls

    pfx = "(EngineCore_0 pid=6120) ERROR 08-27 19:02:47 [core.py:700] "
    calls = frame_calls("\n".join([
        pfx + "Traceback (most recent call last):",
        pfx + '  File "/venv/lib/python3.11/site-packages/vllm/v1/worker/gpu_model_runner.py", line 2708, in capture_model',
        pfx + "    self._capture_cudagraphs(",
        pfx + '  File "/venv/lib/python3.11/site-packages/torch/cuda/graphs.py", line 186, in __exit__',
        pfx + "    self.cuda_graph.capture_end()",
        pfx + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 96.00 MiB.",
    ]))
    assert "capture_model" in calls and "self.cuda_graph.capture_end()" in calls


def test_the_users_words_with_percent_and_tilde_are_prose_and_the_hostfile_notice_is_not_signal() -> None:
    """DeepSpeed says `Unable to find hostfile` on every single-node run: a hang's signal is the line it hung after.
    What the user wrote under the log ("0% util and ~600MB per GPU") is their account of it."""
    s = extract("\n".join([
        "[2024-06-02 19:44:05,226] [WARNING] [runner.py:202:fetch_hostfile] Unable to find hostfile, will proceed "
        "with training with local resources only.",
        "Using /home/mli/.cache/torch_extensions/py311_cu121 as PyTorch extensions root...",
        "Using /home/mli/.cache/torch_extensions/py311_cu121 as PyTorch extensions root...",
        "",
        "waited almost 1 hour, nvidia-smi shows 0% util and ~600MB per GPU, no nvcc in ps",
    ]))
    assert s.lines == ("Using /home/mli/.cache/torch_extensions/py311_cu121 as PyTorch extensions root...",)
    assert "0% util" in s.prose


def test_the_exit_warning_about_an_undestroyed_process_group_is_not_the_error() -> None:
    """PyTorch 2.4+ prints it at the exit of every process that never called destroy_process_group, after a crash
    too (realAJ-01): its words (`destroy`, `pending`, `program`) are not the failure's and must not weigh against it."""
    s = extract("\n".join([
        "RuntimeError: FlashAttention only supports Ampere GPUs or newer.",
        "[rank0]:[W1216 10:12:45.123456789 ProcessGroupNCCL.cpp:1250] Warning: WARNING: process group has NOT been "
        "destroyed before we destruct ProcessGroupNCCL. On normal program exit, the application should call "
        "destroy_process_group to ensure that any pending NCCL operations have finished in this process. In rare "
        "cases this process can exit before this point and block the progress of another member of the process "
        "group. This constraint has always been present,  but this warning has only been added since PyTorch 2.4 "
        "(function operator())",
    ]))
    assert s.lines == ("RuntimeError: FlashAttention only supports Ampere GPUs or newer.",)


def test_a_numbered_tag_and_an_unpadded_glog_date_are_prefixes() -> None:
    """Seen in a real LLaMA-Factory log: `[80746] [rank0]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607]`,
    a process number in brackets and a glog date without its leading zero: the line under them is the error."""
    s = extract("[80746] [rank0]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught "
                "collective operation timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, NumelIn=466119168, "
                "NumelOut=466119168, Timeout(ms)=600000) ran for 600060 milliseconds before timing out.")
    assert s.lines[0].startswith("[Rank 0] Watchdog caught collective operation timeout")
    assert s.templates[0].startswith("[Rank <RANK>] Watchdog caught")


def test_a_hang_after_a_relative_hidden_path_keeps_its_last_line_masked() -> None:
    """`Using  .cache/torch_extensions/... as PyTorch extensions root...` (two spaces, a path relative to the home
    directory), then nothing: the line it hung after is the signal, its path masked like an absolute one."""
    s = extract("Using  .cache/torch_extensions/py310_cu118 as PyTorch extensions root...\n"
                "Using  .cache/torch_extensions/py310_cu118 as PyTorch extensions root...\nand just choked")
    assert s.templates == ("Using <PATH> as PyTorch extensions root...",)
    assert mask("see e.g./x and foo.bar/baz") == "see e.g./x and foo.bar/baz"


def test_real_issue_pastes_keep_the_error_and_drop_what_wraps_it() -> None:
    """Shapes seen in real pastes from public issue threads (vLLM, flash-attn, TRL, Windows builds)."""
    # a worker's log prefix carries `rank=3` before its pid; the traceback's header was not pasted
    pfx = "(VllmWorker rank=3 pid=1090) ERROR 06-05 06:18:13 [multiproc_executor.py:470] "
    s = focus(extract(pfx + '  File "/usr/local/lib/python3.10/site-packages/torch/cuda/graphs.py", line 84, in capture_end\n'
                      + pfx + "    super().capture_end()\n" + pfx + "RuntimeError: CUDA error: out of memory"))
    assert s.exception == "RuntimeError" and s.lines[0] == "RuntimeError: CUDA error: out of memory"
    assert not any(line.startswith('File "') for line in s.lines)
    # the message and the traceback header on one logged line
    pfx = "(VllmWorkerProcess pid=302) ERROR 01-19 03:55:24 multiproc_worker_utils.py:233] "
    s = focus(extract(pfx + "Exception in worker VllmWorkerProcess while processing method init_device: Cannot re-initialize "
                      "CUDA in forked subprocess., Traceback (most recent call last):\n"
                      + pfx + '  File "/venv/lib/python3.11/site-packages/vllm/worker/worker.py", line 166, in init_device\n'
                      + pfx + "    torch.cuda.set_device(self.device)"))
    assert s.lines and "Cannot re-initialize CUDA in forked subprocess" in s.lines[0]
    # a wrapper that points at the stack trace above and quotes the error it wraps
    s = focus(extract("RuntimeError: Worker failed with error 'LoRA rank 32 is greater than max_lora_rank 16.', "
                      "please check the stack trace above for the root cause"))
    assert s.lines == ("LoRA rank 32 is greater than max_lora_rank 16.",)
    # an error quoted in Markdown backticks, under the user's "resulted in the following error:"
    s = focus(extract("resulted in the following error:\n\n`OSError: CUDA_HOME environment variable is not set.`\n**Error**"))
    assert s.exception == "OSError" and s.lines == ("OSError: CUDA_HOME environment variable is not set.",)
    # ... and one with inline code of its own inside the backticks (vLLM's advice names its options)
    s = focus(extract("**error:**\n`ValueError: The model's max seq len (32768) is larger than the maximum number of tokens "
                      "that can be stored in KV cache (24320). Try increasing `gpu_memory_utilization` or decreasing "
                      "`max_model_len` when initializing the engine.`"))
    assert s.exception == "ValueError" and s.lines[0].startswith("ValueError: The model's max seq len (32768)")
    # an issue title's tag is the user's label
    s = focus(extract("[Bug]: vllm.engine.async_llm_engine.AsyncEngineDeadError: Background loop has errored already."))
    assert s.exception == "vllm.engine.async_llm_engine.AsyncEngineDeadError"
    # an issue template's ticked checklist is the user's, not an error ("cannot get the expected help")
    s = focus(extract("- [x] 1. I have searched related issues but cannot get the expected help.\n"
                      "- [x] 5. Please use English, otherwise it will be closed.\n"
                      "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static."))
    assert s.lines == ("RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",)
    # an English error quoted after a colon in a Chinese sentence, with its own parentheses
    s = focus(extract('系统会抛出错误提示:"The model\'s max seq len (32768) is larger than the maximum number of tokens '
                      'that can be stored in KV cache (15248)"。'))
    assert s.lines == ("The model's max seq len (32768) is larger than the maximum number of tokens that can be stored "
                       "in KV cache (15248)",)
    assert focus(extract("报错(ValueError: bad value (x))了")).lines == ("ValueError: bad value (x)",)
    # ... and its own quotes: the key a KeyError names
    assert focus(extract("QWen1.5 推理报错：KeyError: 'qwen2'")).lines == ("KeyError: 'qwen2'",)
    assert focus(extract("**OSError: [WinError 1455] 页面文件太小，无法完成操作。**")).lines[0] == "OSError: [WinError 1455]"
    # two code spans in a sentence are not a quoted line
    assert extract("`pip install flash-attn` fails after `pip install torch`").exception is None
    # c10's C++ stack on Windows is not the error
    s = focus(extract("RuntimeError: FlashAttention only supports Ampere GPUs or newer.\n"
                      "00007FFF76662C2400007FFF76662B80 c10.dll!c10::Error::Error [<unknown file> @ <unknown line number>]"))
    assert s.lines == ("RuntimeError: FlashAttention only supports Ampere GPUs or newer.",)
    assert is_error_line("Bus error (core dumped)") and is_error_line("CUDA error: out of memory")


def test_more_real_issue_shapes() -> None:
    """From real pastes (transformers, ComfyUI, accelerate issues; a Chinese forum post)."""
    # a library's advice with no level and no error word is a warning line
    s = extract("A decoder-only architecture is being used, but right-padding was detected! For correct generation "
                "results, please set `padding_side='left'` when initializing the tokenizer.\n"
                "epoch: 0|step: 7|ppo_ep: 1|act_loss: -0.9267578125")
    assert s.lines and "right-padding was detected" in s.lines[0]
    # a Markdown heading and a numbered lead-in are the user's, not the error
    s = focus(extract("# ComfyUI Error Report\n4. Observe the error:\n"
                      "RuntimeError: Failed to find C compiler. Please specify via CC environment variable."))
    assert s.lines == ("RuntimeError: Failed to find C compiler. Please specify via CC environment variable.",)
    # the closing backtick of a quoted block
    s = extract("`Traceback (most recent call last):\n  File \"/x/store.py\", line 31, in get_all\n"
                "    data = store.get(key)\nRuntimeError: Socket Timeout`")
    assert s.lines == ("RuntimeError: Socket Timeout",)
    # curly quotes from a Chinese input method
    s = extract("会报错：AttributeError: ‘ChatGLMTokenizer‘ object has no attribute ‘sp_tokenizer\n请问如何解决")
    assert s.lines == ("AttributeError: 'ChatGLMTokenizer' object has no attribute 'sp_tokenizer",)


def test_docker_compose_and_logger_stream_columns_are_prefixes() -> None:
    """`qanything-container-local  | 2024-02-20 21:46:23 | ERROR | stderr |   File …`: compose's service column,
    then a timestamp, a level and a stream column; the traceback under them parses as one."""
    pfx = "qanything-container-local  | 2024-02-20 21:46:23 | ERROR | stderr | "
    s = extract(pfx + "Traceback (most recent call last):\n"
                + pfx + '  File "/usr/local/lib/python3.10/dist-packages/vllm/worker/worker.py", line 71, in init_model\n'
                + pfx + "    _check_if_gpu_supports_dtype(self.model_config.dtype)\n"
                + pfx + "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0.")
    assert s.exception == "ValueError"
    assert s.lines[0].startswith("ValueError: Bfloat16 is only supported")
    assert focus(extract("I followed the repo.\nand this error - \nRuntimeError: boom")).lines == ("RuntimeError: boom",)


def test_shapes_from_batch_h_real_pastes() -> None:
    """From real pastes (vLLM, stable-diffusion-webui, Xinference, MACE, Bert-VITS2 issues)."""
    # a terminal's colour codes copied as the letters `ESC`
    s = extract("ESC[1;36m(VllmWorkerProcess pid=62)ESC[0;0m ERROR 12-26 16:20:28 multiproc_worker_utils.py:236]     "
                "raise RuntimeError(\nESC[1;36m(VllmWorkerProcess pid=62)ESC[0;0m ERROR 12-26 16:20:28 "
                "multiproc_worker_utils.py:236] RuntimeError: Found Tesla P100-PCIE-16GB which is too old")
    assert s.lines == ("RuntimeError: Found Tesla P100-PCIE-16GB which is too old",)
    # a systemd journal prefix on every line
    s = extract("Oct 04 15:02:41 llm sd-webui-forge-start[394]: RuntimeError: CUDA error: no kernel image is available "
                "for execution on the device\nOct 04 15:02:41 llm sd-webui-forge-start[394]: For debugging consider "
                "passing CUDA_LAUNCH_BLOCKING=1.")
    assert s.exception == "RuntimeError"
    assert s.lines[0] == "RuntimeError: CUDA error: no kernel image is available for execution on the device"
    # requirement messages with no error word
    assert extract("NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch "
                   "installation.").lines
    assert extract("在计算回答会报FlashAttention only supports Ampere GPUs or newer. 错误").lines == (
        "FlashAttention only supports Ampere GPUs or newer",)
    # an exception quoted mid-sentence, after code in backticks
    s = extract("all subprocesses except for the one with `local_rank==0` fail due to a "
                "`RuntimeError: CUDA error: invalid device ordinal` error.")
    assert s.lines == ("RuntimeError: CUDA error: invalid device ordinal",)
    assert "fail due to a error." in s.prose
    # a forum post's error in Markdown bold
    assert extract("**RuntimeError: CUDA error: out of memory**").lines == ("RuntimeError: CUDA error: out of memory",)


def test_shapes_from_batch_i_real_pastes() -> None:
    """From real pastes (DeepSpeed-Chat, accelerate, apex issues)."""
    # the user's lead-in and the error on one line
    s = extract("Hi, I'm having this issue: Watchdog caught collective operation timeout: WorkNCCL(SeqNum=80078...) "
                "ran for 600026 milliseconds before timing out")
    assert s.lines == ("Watchdog caught collective operation timeout: WorkNCCL(SeqNum=80078...) ran for 600026 "
                       "milliseconds before timing out",)
    assert s.prose == "Hi, I'm having this issue"
    assert extract("I tried setting it again: it failed again and again").lines == ()
    # the user's sentence right under the error, citing a link, is theirs, not the error's
    s = extract("ModuleNotFoundError: No module named 'amp_C'\nI saw this error occurs in other scenarios "
                "(https://github.com/NVIDIA/apex/issues/865), but not at the same place")
    assert s.lines == ("ModuleNotFoundError: No module named 'amp_C'",)
    assert "other scenarios" in s.prose
    # a rank-prefixed log indented as a Markdown code block
    s = extract("    [rank7]:[E816 01:45:40.183009389 ProcessGroupNCCL.cpp:607] [Rank 7] Watchdog caught collective "
                "operation timeout: WorkNCCL(SeqNum=80078, OpType=BROADCAST, NumelIn=5056, NumelOut=5056, "
                "Timeout(ms)=600000) ran for 600026 milliseconds before timing out.")
    assert s.lines[0].startswith("[Rank 7] Watchdog caught")


def test_a_log_line_with_the_users_question_after_it_on_the_same_line() -> None:
    """From batch J: a tool's message, then the question in Chinese on the same line."""
    s = extract("### Solutions\n\nSetting `pad_token_id` to `eos_token_id`:2 for open-end generation.   如何修改参数？")
    assert s.lines == ("Setting `pad_token_id` to `eos_token_id`:2 for open-end generation.",)
    # the user's own English words before the Chinese are not a log line
    assert extract("We use deepspeed zero3 to train 训练卡住了").lines == ()
    # nor is their sentence citing a Markdown link
    s = extract("However, when I ran [NCCL_tests](https://github.com/NVIDIA/nccl-tests), I got an error:\n"
                "RuntimeError: NCCL Error 2: unhandled system error")
    assert s.lines == ("RuntimeError: NCCL Error 2: unhandled system error",)


def test_the_tokenizers_fork_warning_not_its_advice() -> None:
    """From batch K: huggingface/tokenizers' warning is the signal; 'To disable this warning, you can either:'
    under it is advice every such warning prints."""
    s = extract("huggingface/tokenizers: The current process just got forked, after parallelism has already been "
                "used. Disabling parallelism to avoid deadlocks...\nTo disable this warning, you can either:\n"
                "\t- Avoid using `tokenizers` before the fork if possible\n"
                "\t- Explicitly set the environment variable TOKENIZERS_PARALLELISM=(true | false)\n 报错信息如上.")
    assert s.lines == ("huggingface/tokenizers: The current process just got forked, after parallelism has already "
                       "been used. Disabling parallelism to avoid deadlocks...",)


def test_an_exception_quoted_in_a_sentence_that_greets_a_maintainer() -> None:
    s = extract('Dear @FabianIsensee and folks: I ran into this (or at least a related) issue with "RuntimeError: '
                'Failed to find C compiler. Please specify via CC environment variable." (including the whole error '
                "log below just for reference). To clarify, I'm running the training code on an instance on Vast.ai:")
    assert s.lines == ("RuntimeError: Failed to find C compiler. Please specify via CC environment variable.",)
    assert "Dear @FabianIsensee" in s.prose
    # a numbered point of the user's, with a value in brackets, is their sentence, not an error line
    s = extract('1) After removing "--use_compile" and updating "precision" to "16-mixed", I got a [nan.0] value at '
                'each step during training.')
    assert s.lines == () and "[nan.0]" in s.prose


def test_a_py_spy_dump_gives_the_calls_of_a_hang() -> None:
    """`py-spy dump` of a hung DeepSpeed job: the innermost calls say it waits on a JIT build's lock file."""
    from kb.signature import frame_calls
    calls = frame_calls('Thread 46930 (idle): "MainThread"\n'
                        "    wait (torch/utils/file_baton.py:42)\n"
                        "    _jit_compile (torch/utils/cpp_extension.py:1522)\n"
                        "    load (torch/utils/cpp_extension.py:1284)\n"
                        "    jit_load (deepspeed/ops/op_builder/builder.py:480)\n"
                        "    __init__ (deepspeed/runtime/engine.py:377)\n"
                        "    <module> (main.py:328)\n")
    assert calls[:4] == ("wait", "_jit_compile", "load", "jit_load")
    assert "__init__" not in calls and "<module>" not in calls


_NOTEBOOK_CUT = "\n".join([
    "```",
    "---------------------------------------------------------------------------",
    "CastError                                 Traceback (most recent call last)",
    "File ~/miniconda3/lib/python3.13/site-packages/datasets/builder.py:1871, in ArrowBasedBuilder._prepare_split_single"
    "(self, gen_kwargs, fpath, file_format, max_shard_size, job_id)",
    "   1870 try:",
    "-> 1871     writer.write_table(table)",
    "   1872 except CastError as cast_error:",
    "",
    "File ~/miniconda3/lib/python3.13/site-packages/datasets/table.py:2293, in table_cast(table, schema)",
    "   2292 if table.schema != schema:",
    "-> 2293     return cast_table_to_schema(table, schema)",
])


def test_a_notebook_traceback_cut_before_its_last_line_names_its_type_and_calls() -> None:
    """Jupyter prints the type on the header line and frames without quotes (`File ~/…/table.py:2293, in
    table_cast(…)`). Cut before the final line, the paste still says a `CastError` was raised in
    `datasets.table` calling `cast_table_to_schema`."""
    from kb.signature import frame_calls
    s = focus(extract(_NOTEBOOK_CUT))
    assert s.exception == "CastError" and s.lines == ("CastError",)
    assert "datasets.table" in s.components
    assert frame_calls(_NOTEBOOK_CUT)[:2] == ("table_cast", "return cast_table_to_schema(table, schema)")


def test_an_old_notebook_traceback_reads_like_pythons() -> None:
    """Colab's IPython 7: `<ipython-input-…> in <cell line: 7>()` and `/usr/…/trainer.py in predict(self, …)`
    frames, `---> 13` arrows; with its final line it reads as the same traceback in Python's format does."""
    from kb.signature import frame_calls
    paste = "\n".join([
        "---------------------------------------------------------------------------",
        "ValueError                                Traceback (most recent call last)",
        "<ipython-input-3-61384812488d> in <cell line: 7>()",
        "      5 import time",
        "----> 7 model = AutoModelForCausalLM.from_pretrained(name)",
        "",
        "/usr/local/lib/python3.10/dist-packages/transformers/modeling_utils.py in from_pretrained(cls, name,",
        "     11         config = cls.config_class.from_pretrained(name)",
        "---> 13         raise ValueError(msg)",
        "",
        "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0.",
    ])
    s = focus(extract(paste))
    assert s.lines == ("ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0.",)
    assert "transformers.modeling_utils" in s.components
    assert frame_calls(paste)[:2] == ("from_pretrained", "raise ValueError(msg)")
    # The error line quoted above a cut stack trace stays the error line: the header's bare type adds nothing.
    quoted = "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0.\n\n" + paste.rsplit("\n", 2)[0]
    assert focus(extract(quoted)).lines == ("ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0.",)


def test_a_rich_traceback_box_reads_like_pythons() -> None:
    """Training CLIs print tracebacks with rich: frames in a box (`│ /path/zero_to_fp32.py:498 in get_fp32_… │`),
    the failing call after `❱`. Its frames give the calls, with or without the box's top border pasted."""
    from kb.signature import frame_calls
    box = "\n".join([
        "│ /data/llm/zero_to_fp32.py:498 in get_fp32_state_dict_from_zero_checkpoint                       │",
        "│                                                                                                  │",
        "│   495 │   │   │   with open(latest_path, 'r') as fd:                                             │",
        "│ ❱ 498 │   │   raise ValueError(f\"Unable to find 'latest' file at {latest_path}\")                │",
        "╰──────────────────────────────────────────────────────────────────────────────────────────────────╯",
        "ValueError: Unable to find 'latest' file at /data/ckpt/latest",
    ])
    for paste in (box, "╭──────── Traceback (most recent call last) ────────╮\n" + box):
        s = focus(extract(paste))
        assert s.lines == ("ValueError: Unable to find 'latest' file at /data/ckpt/latest",)
        assert frame_calls(paste)[:2] == ("get_fp32_state_dict_from_zero_checkpoint",
                                          "raise ValueError(f\"Unable to find 'latest' file at {latest_path}\")")
    # a box whose bottom border was not pasted does not swallow the log lines after it
    cut = "╭──── Traceback (most recent call last) ────╮\n│ /x/train.py:74 in <module> │\n│ ❱ 74 trainer.fit() │\n\n" \
          "2 ranks failed with CUDA error: an illegal memory access was encountered"
    assert focus(extract(cut)).lines == ("2 ranks failed with CUDA error: an illegal memory access was encountered",)


def test_comfyui_names_the_exception_above_its_traceback() -> None:
    """ComfyUI prints `!!! Exception during processing !!! <message>` before the traceback: cut before the
    traceback's last line, that message is the paste's error."""
    s = focus(extract("\n".join([
        "!!! Exception during processing !!! data did not match any variant of untagged enum PyPreTokenizerTypeWrapper"
        " at line 951 column 3",
        "Traceback (most recent call last):",
        '  File "G:\\\\ComfyUI\\\\execution.py", line 289, in execute',
        "    obj = class_def()",
    ])))
    assert s.lines == ("Exception: data did not match any variant of untagged enum PyPreTokenizerTypeWrapper at line 951 "
                       "column 3",)
    # a message that reads as an error line on its own stays as it is
    s = focus(extract("!!! Exception during processing !!! CUDA error: no kernel image is available for execution on the device"))
    assert s.lines == ("CUDA error: no kernel image is available for execution on the device",)


def test_a_paste_cut_in_a_generic_library_frame_has_no_error_line() -> None:
    """Cut right after `torch/nn/modules/module.py in _call_impl`: a frame every traceback passes through says
    nothing, and neither is it a hang's last log line. No line is the signal, so the search reads the whole paste
    (whose words quote the error: "`'weight' must be 2-D`, more traceback below")."""
    sig = extract("\n".join([
        "My Llama trains ok, but the `generate` callback ruins this with error: `'weight' must be 2-D`, more traceback below:",
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3/dist-packages/torch/nn/modules/module.py", line 1501, in _call_impl',
        "    return forward_call(*args, **kwargs)",
    ]))
    assert sig.lines == ()
    assert sig.components == ("torch.nn.modules",)


def test_a_failed_import_warning_gives_the_error_it_quotes() -> None:
    """vLLM logs `Failed to import from vllm._C with ImportError("…GLIBC_2.32' not found …")` as a WARNING and goes
    on: the quoted error is the paste's error (the system's glibc), and its type is the exception."""
    s = focus(extract("WARNING 07-17 20:03:10 _custom_ops.py:14] Failed to import from vllm._C with ImportError("
                      "\"/lib64/libc.so.6: version `GLIBC_2.32' not found (required by /home/u/vllm/_C.abi3.so)\")"))
    assert s.exception == "ImportError"
    assert s.lines == ("ImportError: /lib64/libc.so.6: version `GLIBC_2.32' not found (required by /home/u/vllm/_C.abi3.so)",)
    s = focus(extract("Failed to import from vllm._C with ModuleNotFoundError(\"No module named 'vllm._C'\")"))
    assert s.exception == "ModuleNotFoundError" and s.lines == ("ModuleNotFoundError: No module named 'vllm._C'",)


def test_a_bare_type_named_in_a_chinese_sentence_does_not_replace_the_quoted_error() -> None:
    """The error line first, then `…虽然程序上进行了判断，但是会出现RuntimeError`: the sentence names the type the paste
    already gave with its message, and that message stays the paste's error line."""
    s = focus(extract("RuntimeError: CUDA error: CUBLAS_STATUS_NOT_SUPPORTED when calling `cublasGemmStridedBatchedEx("
                      "handle, opa, opb)`\n\n因为我使用的显卡是M40，比较久，不支持bf16功能，虽然程序上进行了判断，但是会出现RuntimeError"))
    assert s.lines[0].startswith("RuntimeError: CUDA error: CUBLAS_STATUS_NOT_SUPPORTED")


def test_the_users_sentence_announcing_the_error_is_not_an_error_line() -> None:
    """"The error message is as follows:" over a traceback cut before its last line, and "…, the following error
    occurred:" over the error: the user's words, not the paste's. Were they taken as the error line, the paste
    would be matched on them (and `matched_error` would show them)."""
    cut = extract("The error message is as follows:\n\n[2025-03-29 18:18:34 TP0] Scheduler hit an exception: "
                  "Traceback (most recent call last):\n"
                  '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 249, in __init__\n'
                  "    self.tp_worker = TpWorkerClass(")
    assert not any("as follows" in line for line in cut.lines)
    s = focus(extract("However, during server startup, the following error occurred:\n"
                      "RuntimeError: Capture cuda graph failed: NCCL error"))
    assert s.lines == ("RuntimeError: Capture cuda graph failed: NCCL error",)
    assert extract("Error information:").lines == ()
    s = focus(extract("In the training script I tried to specify the port in rdzv_endpoint, but the port seems to be set "
                      "randomly. Sometimes it reports an error:\n[E socket.cpp:472] [c10d] The server socket has failed "
                      "to listen on any local network address."))
    assert s.lines == ("[c10d] The server socket has failed to listen on any local network address.",)
    # a tool's own header stays: torch.multiprocessing's, and an error that quotes another
    assert is_error_line("-- Process 2 terminated with the following error:")
    assert extract("RuntimeError: Failed to import transformers.models.qwen2.modeling_qwen2 because of the following "
                   "error (look up to see its traceback):").exception == "RuntimeError"


def test_an_environment_report_is_not_the_error() -> None:
    """`python -m torch.utils.collect_env` prints `Clang version: Could not collect`: an issue template asks for
    that report, so many pastes carry it above the real error, which must stay the first line."""
    s = focus(extract("$ python -m torch.utils.collect_env\n"
                      "/venv/lib/python3.10/site-packages/torch/cuda/__init__.py:129: UserWarning: CUDA initialization: "
                      "The NVIDIA driver on your system is too old (found version 11020).\n"
                      "Collecting environment information...\nPyTorch version: 2.2.1+cu121\n"
                      "Clang version: Could not collect\ncuDNN version: Could not collect\n[conda] Could not collect"))
    assert s.lines[0].startswith("UserWarning: CUDA initialization: The NVIDIA driver on your system is too old")
    assert not any("Could not collect" in line for line in s.lines)


def test_a_transformers_env_report_field_that_is_not_found_is_not_the_error() -> None:
    """`transformers env` prints `- Accelerate config:    not found` in the issue template's System Info; with the
    real problem told in words below it, that field was taken as the error line."""
    s = focus(extract("Training hangs on 2 GPUs with deepspeed\n\n### System Info\n\n"
                      "- `transformers` version: 4.31.0\n- Platform: Linux-5.15.0-x86_64-with-glibc2.31\n"
                      "- Accelerate version: 0.21.0\n- Accelerate config:    not found\n"
                      "- Tensorflow version (GPU?): not installed (NA)\n\n"
                      "The run gets stuck at the first step with both GPUs at 100% utilization."))
    assert not any("not found" in line for line in s.lines)
    # an error that says what was not found is still one
    assert extract("/bin/sh: 1: nvcc: not found").lines
    assert extract("- Error: checkpoint not found").lines


def test_an_exception_two_ranks_printed_at_once_is_read_once() -> None:
    """Two processes writing the same traceback to one terminal interleave it: `KeyErrorKeyError: : 'input_ids_j'`.
    The exception is the one either would have printed, so it can match an article's line."""
    s = focus(extract("Traceback (most recent call last):\n"
                      '  File "/work/train_rm.py", line 88, in collate\n'
                      '    "input_ids": feature["input_ids_j"],    "input_ids": feature["input_ids_j"],\n\n'
                      "KeyErrorKeyError: : 'input_ids_j'"))
    assert s.exception == "KeyError" and s.lines[0] == "KeyError: 'input_ids_j'"
    r = focus(extract("RuntimeErrorRuntimeError: CUDA error: invalid device ordinal"))
    assert r.exception == "RuntimeError" and r.lines[0] == "RuntimeError: CUDA error: invalid device ordinal"


def test_nccl_falling_back_from_infiniband_is_not_the_error() -> None:
    """NCCL 2.7 and older print `NCCL WARN Failed to open libibverbs.so[.1]` at every start on a host without
    InfiniBand, then use sockets: the error is the connect failure after it."""
    s = focus(extract("host1:90736:90736 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]\n"
                      "host1:90736:90736 [0] NCCL INFO NET/Socket : Using [0]eno1:172.16.20.105<0>\n"
                      "host1:90736:91655 [0] include/socket.h:403 NCCL WARN Connect to fe80::c4eb:49ff:fe04:e32d%6<57335> "
                      "failed : Network is unreachable"))
    assert s.lines[0].endswith("failed : Network is unreachable")
    assert not any("libibverbs" in line for line in s.lines)


def test_a_warning_names_the_error_type_only_when_it_is_the_error() -> None:
    """A Slurm log whose error is the OOM kill, with a UserWarning printed earlier: the paste has no error type.
    Reporting `UserWarning` would have the reason and the exception check read a warning as the error."""
    s = focus(extract("/venv/lib/python3.8/site-packages/mmcv/__init__.py:20: UserWarning: On January 1, 2023, MMCV "
                      "will release v2.0.0.\nslurmstepd: error: Detected 1 oom-kill event(s) in StepId=9411285.0. Some "
                      "of your processes may have been killed by the cgroup out-of-memory handler.\n"
                      "srun: error: gpu20-15: task 0: Out Of Memory"))
    assert "oom-kill" in s.lines[0] and s.exception is None
    only = focus(extract("/venv/torch/utils/checkpoint.py:61: UserWarning: None of the inputs have requires_grad=True. "
                         "Gradients will be None"))
    assert only.exception == "UserWarning"


def test_a_command_quoted_in_a_chinese_sentence_is_what_was_tried_not_the_error() -> None:
    """`中间尝试过将`cp libbitsandbytes_cuda121.so libbitsandbytes_cpu.so`但是不行` quotes what the user tried;
    an English error quoted the same way is the paste's error, even when it starts like a command."""
    tried = extract("中间尝试过 将`cp libbitsandbytes_cuda121.so libbitsandbytes_cpu.so`但是不行")
    assert tried.lines == () and "libbitsandbytes_cpu.so" in tried.prose
    assert extract("执行`CUDA_VISIBLE_DEVICES=0 python train.py --bf16`后卡住").lines == ()
    assert extract("报错`python setup.py egg_info did not run successfully`怎么办").lines == (
        "python setup.py egg_info did not run successfully",)


def test_a_first_person_sentence_under_the_error_is_the_users_whatever_code_it_names() -> None:
    """'I am using accelerate==0.33.0 and deepspeed==0.15.0 but got error below' or 'when I run train.py , I got en
    error. Is my memory too little？': the user's words (versions, a file, a full-width question mark), not a
    second error line to match articles on."""
    s = focus(extract("AttributeError: 'Accelerator' object has no attribute 'deepspeed_engine_wrapped'\n"
                      "I am using accelerate==0.33.0 and deepspeed==0.15.0 but got error below, could you share your version?"))
    assert s.lines == ("AttributeError: 'Accelerator' object has no attribute 'deepspeed_engine_wrapped'",)
    s = focus(extract("RuntimeError: DataLoader worker (pid 19597) is killed by signal: Killed.\n"
                      "when I run train.py , I got en error. Is my memory too little？My memory is 16G and Gpu memory is 8G"))
    assert s.lines == ("RuntimeError: DataLoader worker (pid 19597) is killed by signal: Killed.",)
    # glog's info lines open with `I` and digits, not a word
    assert extract("I0412 12:00:01.123456 1234 server.cc:42] NCCL error: unhandled system error").lines


def test_an_option_line_of_a_long_command_is_not_an_error() -> None:
    """A launch command continued over lines ends with `--verbosity error` or `--check_dataset_strategy warning \\`:
    options the user typed, not a failure; torch.multiprocessing's `-- Process 2 terminated …` header stays."""
    s = focus(extract("gcloud container node-pools create test \\\n  --num-nodes 1 \\\n  --verbosity error\n"
                      "Warning  FailedScheduling  21s  default-scheduler  0/2 nodes are available: 1 Insufficient nvidia.com/gpu."))
    assert not any(line.startswith("--") for line in s.lines) and s.lines
    assert is_error_line("-- Process 2 terminated with the following error:")


TB_LINES = ("Traceback (most recent call last):", '  File "/app/train.py", line 12, in <module>', "    main()",
            "RuntimeError: CUDA error: device-side assert triggered")


def test_an_exception_retyped_in_a_post_reads_as_python_prints_it() -> None:
    """A full-width colon from a Chinese input method, a space before the colon, a paste lowercased whole:
    the exception type is still the type, and the line still the error line."""
    s = sig("训练时报错 RuntimeError：CUDA out of memory. Tried to allocate 20.00 MiB")
    assert s.exception == "RuntimeError"
    assert s.lines == ("RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB",)
    assert sig("ValueError : Attempting to unscale FP16 gradients.").exception == "ValueError"
    s = sig('LoRA disabled and fp16 AMP will trigger a "[ValueError : Attemting to unscale fp16 Gradients]" error.')
    assert s.lines == ("ValueError: Attemting to unscale fp16 Gradients",)  # in brackets inside quotes
    s = sig("valueerror: bfloat16 is only supported on gpus with compute capability of at least 8.0")
    assert s.exception == "ValueError"
    assert s.lines[0].startswith("ValueError: bfloat16 is only supported")
    assert sig("frobnicateerror: the widget broke down again").exception is None  # no made-up type
    lowered = sig("\n".join(TB_LINES).lower())
    assert (lowered.exception, lowered.lines) == ("RuntimeError", (TB_LINES[-1].lower().replace("runtimeerror", "RuntimeError"),))
    quoted = sig("the script tries to use 8 workers and I'm getting:\n`runtimeerror: cuda error: invalid device ordinal`")
    assert quoted.exception == "RuntimeError"  # in Markdown backticks too
    dotted = sig("torch.cuda.outofmemoryerror: cuda out of memory. tried to allocate 20.00 mib")
    assert dotted.exception == "torch.cuda.OutOfMemoryError"  # a module path is lowercase as Python prints it


def test_an_exception_written_as_its_repr_in_a_sentence_is_the_error() -> None:
    s = sig("When the model started to train, I got a ValueError(Attempting to unscale FP16 gradients). "
            "It's obvious that FP16 gradients can't be scaled.")
    assert s.exception == "ValueError"
    assert s.lines == ("ValueError: Attempting to unscale FP16 gradients",)
    assert "When the model started to train" in s.prose and "It's obvious" in s.prose
    s = sig('I am unable to convert the fp16 model into fp32, I get the error\n` ValueError(f"unknown zero stage {zero_stage}") `')
    assert s.lines == ("ValueError: unknown zero stage {zero_stage}",)  # the call that raised it
    assert sig('raise ValueError("Attempting to unscale FP16 gradients")').exception is None  # source code
    assert sig("ray.exceptions.RayTaskError(ValueError) in the worker").exception is None  # no message


def test_a_message_under_a_header_that_announces_it_is_the_error_line() -> None:
    """`… with exception:` and the message on the next line, with no error word in it: that line is the error,
    not the header. The same under the user's own "I got the following error:", across a code fence."""
    msg = "Asking to pad but the tokenizer does not have a padding token. Please select a token to use as `pad_token`"
    s = sig(f"Failed test at stage construct_inputs with exception:\n{msg}\nTraceback (most recent call last):\n"
            '  File "run.py", line 231, in run_tests\n    inputs = inst.construct_inputs()\n')
    assert s.lines[0] == msg
    assert sig(f"I got the following error:\n\n```\n{msg}\n```").lines == (msg,)
    assert sig(f"报错如下：\n{msg}").lines == (msg,)
    assert sig("I got the following error:\nI think it is a bug in the tokenizer code").lines == ()


def test_a_paste_copied_from_a_web_page_reads_as_the_error_it_shows() -> None:
    """HTML entities from a page's source, zero-width characters inside words, full-width colons between English
    words: the same template as the error printed in a terminal."""
    plain = sig("ModuleNotFoundError: No module named 'flash_attn'")
    assert sig("ModuleNotFoundError: No module named &#39;flash_attn&#39;").templates == plain.templates
    assert sig("Runtime\u200bError: CUDA out of memory.").exception == "RuntimeError"
    assert sig("RuntimeError： CUDA error：out of memory").lines == ("RuntimeError: CUDA error: out of memory",)
    assert sig("报错：CUDA error：out of memory").prose == "报错："  # after Chinese the colon stays


def test_a_traceback_inside_a_json_log_field_is_read_as_a_traceback() -> None:
    """Structured logs (Kubernetes, Ray) and a Python string's repr carry a traceback as one line of `\\n` escapes."""
    line = ('{"level": "error", "msg": "Traceback (most recent call last):\\n  File \\"/app/train.py\\", line 12, in '
            '<module>\\n    main()\\n  File \\"/usr/lib/python3.10/site-packages/torch/cuda/__init__.py\\", line 293, in '
            '_lazy_init\\n    torch._C._cuda_init()\\nRuntimeError: Found no NVIDIA driver on your system.\\n"}')
    s = sig(line)
    assert s.exception == "RuntimeError"
    assert s.lines[0] == "RuntimeError: Found no NVIDIA driver on your system."
    assert s.components == ("torch.cuda",)
    windows = sig('File "C:\\new\\train.py", line 3, in <module>')  # a path's `\n` is no newline
    assert windows.lines == () or "C:\\new\\train.py" in windows.lines[0]


def test_an_escaped_traceback_ends_where_its_string_closes() -> None:
    """A traceback in one value of a JSON body or a repr'd log record: its closing quote and brace are the record's,
    not the end of the error message a user would search for."""
    escaped = ('Traceback (most recent call last):\\n  File \\"/app/infer.py\\", line 12, in <module>\\n    '
               'tok = AutoTokenizer.from_pretrained(\\"m\\")\\nValueError: Tokenizer class LLaMATokenizer does not exist.')
    message = "ValueError: Tokenizer class LLaMATokenizer does not exist."
    body = 'requests.exceptions.HTTPError: 500 Server Error\nResponse body: {"error": "' + escaped + '", "code": 500}'
    assert sig(body).lines[0] == message
    record = "level='error' exception='" + escaped.replace('\\"', '"') + "'"
    assert sig(record).lines[0] == message


def test_a_traceback_copied_with_its_viewers_line_numbers_is_still_a_traceback() -> None:
    for gutter in ("{n}  ", "{n} | ", "  {n}: ", "{n}"):  # the last: GitHub Actions' log page, glued
        s = sig("\n".join(gutter.format(n=n) + line for n, line in enumerate(TB_LINES, start=40)))
        assert (s.exception, s.lines) == ("RuntimeError", (TB_LINES[-1],)), gutter
    ranks = sig("\n".join(f"{r}: {line}" for r, line in zip((0, 1, 0, 1), TB_LINES)))  # srun's rank, not a gutter
    assert ranks.lines == (TB_LINES[-1],)


def test_grep_n_context_lines_are_a_gutter() -> None:
    """`grep -n -B5 RuntimeError train.log`: `120-` before a context line, `125:` before a match, `--` between
    groups; the frames under the numbers are read, so the paste keeps its components."""
    frames = ("Traceback (most recent call last):", '  File "/app/train.py", line 12, in <module>', "    main()",
              '  File "/opt/conda/lib/python3.11/site-packages/torch/cuda/__init__.py", line 478, in set_device',
              "    torch._C._cuda_setDevice(device)", "RuntimeError: CUDA error: invalid device ordinal")
    groups = ["\n".join(f"{start + n}{':' if n == len(frames) - 1 else '-'}{line}" for n, line in enumerate(frames))
              for start in (120, 300, 510, 777, 901)]
    s = sig("\n--\n".join(groups))
    assert (s.exception, s.lines) == ("RuntimeError", (frames[-1],))
    assert s.components == ("torch.cuda",)


def test_a_viewer_copy_whose_last_line_has_no_number_still_loses_its_gutter() -> None:
    """GitHub Actions' log page numbers every line of the step's output, then shows its own `Error: Process completed
    with exit code 1.` unnumbered under it; a user's line typed under a copy is the same. A numbered list over a
    traceback is no gutter: the traceback is most of the paste, and unnumbered."""
    body = "\n".join(f"{n}{line}" for n, line in enumerate(TB_LINES, start=40))
    s = sig(body + "\nError: Process completed with exit code 1.")
    assert (s.exception, s.lines[0]) == ("RuntimeError", TB_LINES[-1])
    listed = sig("1 I ran the training script\n2 then it crashed\n3 here is the log:\n" + "\n".join(TB_LINES))
    assert (listed.exception, listed.lines) == ("RuntimeError", (TB_LINES[-1],))


def test_a_kubectl_log_with_pod_prefixes_is_read_per_pod() -> None:
    s = sig("\n".join(f"[pod/train-{pod}/trainer] {line}" for line in TB_LINES for pod in (0, 1)))  # interleaved
    assert s.exception == "RuntimeError"
    assert s.lines[0] == TB_LINES[-1]


def test_mpirun_tagged_output_is_read_per_rank() -> None:
    """`mpirun --tag-output` (Horovod, DeepSpeed's MPI launcher) puts `[job,rank]<stderr>:` before every line."""
    s = sig("\n".join(f"[1,{rank}]<stderr>:{line}" for line in TB_LINES for rank in (0, 1)))  # interleaved
    assert (s.exception, s.lines) == ("RuntimeError", (TB_LINES[-1],))


def test_a_container_runtime_log_file_reads_as_its_messages() -> None:
    """/var/log/containers/*.log, as Loki or Fluentd ship it: stamp, stream, full/partial flag, then the line."""
    s = sig("\n".join(f"2026-11-27T05:00:0{i}.123456789Z stderr F {line}" for i, line in enumerate(TB_LINES)))
    assert (s.exception, s.lines) == ("RuntimeError", (TB_LINES[-1],))
    assert "stderr" not in s.text()


def test_a_slash_dated_stamp_and_a_bare_level_are_prefixes() -> None:
    """Go's log package and `%(asctime)s %(levelname)-8s` formats: `2026/11/27 05:00:01 ERROR   …` on every line."""
    s = sig("\n".join(f"2026/11/27 05:00:0{i} ERROR    {line}" for i, line in enumerate(TB_LINES)))
    assert (s.exception, s.lines) == ("RuntimeError", (TB_LINES[-1],))
    assert s.components == sig("\n".join(TB_LINES)).components


def test_a_message_continued_on_lines_that_carry_the_level_stays_one_message() -> None:
    """When every line of a log carries its level (Go's log, glog's `E1127 …]`), the lines that continue an
    exception's message carry it too: they are not new records, so the exception stays first and whole."""
    tb = ['Traceback (most recent call last):', '  File "/workspace/train.py", line 88, in <module>',
          '    dist.all_reduce(t)',
          'torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, '
          'unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.19.3',
          'ncclUnhandledCudaError: Call to CUDA function failed.', 'Last error:', "Cuda failure 'out of memory'"]
    bare = sig("\n".join(tb))
    for prefix in ("2026/11/27 05:00:01 ERROR ", "E1127 05:00:01.123456  4242 train.cc:88] "):
        s = sig("\n".join(prefix + line for line in tb))
        assert (s.exception, s.lines) == (bare.exception, bare.lines) == ("torch.distributed.DistBackendError", s.lines)
        assert s.lines[-1] == "Last error: Cuda failure 'out of memory'"
    # A level on the next line that the traceback's header did not carry still starts a new record.
    s = sig("\n".join(tb[:4] + ["2026/11/27 05:00:02 ERROR Job 7 failed, retrying"]))
    assert s.lines[0] == tb[3]


def test_windows_powershells_wrapper_of_the_first_stderr_line_is_taken_off() -> None:
    """Windows PowerShell (ISE, or `2>&1`) prints a program's first stderr line behind `python : ` and follows it
    with where the command ran and an ErrorRecord: the traceback under it is still a traceback."""
    paste = ("python : Traceback (most recent call last):\nAt line:1 char:1\n+ python train.py\n+ ~~~~~~~~~~~~~~~\n"
             "    + CategoryInfo          : NotSpecified: (Traceback (most recent call last)::String) [], RemoteException\n"
             "    + FullyQualifiedErrorId : NativeCommandError\n \n"
             '  File "C:\\Users\\me\\proj\\train.py", line 12, in <module>\n    import deepspeed\n'
             '  File "C:\\Users\\me\\envs\\llm\\lib\\site-packages\\deepspeed\\module_inject\\replace_module.py", line 17, '
             "in <module>\n    from torch._six import inf\nModuleNotFoundError: No module named 'torch._six'")
    s = sig(paste)
    assert s.lines == ("ModuleNotFoundError: No module named 'torch._six'",)
    assert s.components[0].startswith("deepspeed.module_inject")


def test_an_exception_groups_sub_exception_is_the_error() -> None:
    """Python 3.11's exception groups (anyio and starlette under an ASGI server) draw the real error behind `|`
    guides under the group's own `ExceptionGroup: unhandled errors in a TaskGroup`."""
    paste = ("ERROR:    Exception in ASGI application\n"
             "  + Exception Group Traceback (most recent call last):\n"
             '  |   File "/usr/lib/python3.11/site-packages/anyio/_backends/_asyncio.py", line 680, in __aexit__\n'
             "  |     raise BaseExceptionGroup(\n"
             "  | ExceptionGroup: unhandled errors in a TaskGroup (1 sub-exception)\n"
             "  +-+---------------- 1 ----------------\n"
             "    | Traceback (most recent call last):\n"
             '    |   File "/usr/lib/python3.11/site-packages/torch/cuda/__init__.py", line 293, in _lazy_init\n'
             "    |     torch._C._cuda_init()\n"
             "    | RuntimeError: CUDA error: device-side assert triggered\n"
             "    +------------------------------------")
    s = sig(paste)
    assert (s.exception, s.lines[0]) == ("RuntimeError", "RuntimeError: CUDA error: device-side assert triggered")
    assert "torch.cuda" in s.components


def test_a_failed_pytest_test_reads_as_a_traceback() -> None:
    """CI logs report a failure the pytest way: `path.py:456: in func` frames, the error behind `E   `, and summary
    bars (`=== 1 failed, 3 passed in 12.31s ===`) that are no error line."""
    paste = ("=================================== FAILURES ===================================\n"
             "_____________________________ test_train_one_step ______________________________\n\n"
             "    def test_train_one_step():\n>       out = model(x.cuda())\n\ntests/test_train.py:14: \n"
             "_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _\n"
             "/opt/conda/lib/python3.10/site-packages/torch/nn/modules/conv.py:456: in _conv_forward\n"
             "    return F.conv2d(input, weight, bias, self.stride,\n"
             "E   RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED\n\n"
             "/opt/conda/lib/python3.10/site-packages/torch/nn/modules/conv.py:456: RuntimeError\n"
             "=========================== short test summary info ============================\n"
             "FAILED tests/test_train.py::test_train_one_step - RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED\n"
             "========================= 1 failed, 3 passed in 12.31s =========================")
    s = sig(paste)
    assert s.lines == ("RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED",)
    assert s.components == ("torch.nn.modules",)


def test_a_structured_log_reads_as_its_messages() -> None:
    """One JSON record per line, as structured loggers write: the messages are the paste, not the keys."""
    records = [{"ts": "2026-11-27T05:00:00Z", "level": "INFO", "msg": "Loading checkpoint shards from /models"},
               {"ts": "2026-11-27T05:00:09Z", "level": "ERROR", "msg": "\n".join(TB_LINES)}]
    s = sig("\n".join(json.dumps(r) for r in records))
    assert (s.exception, s.lines) == ("RuntimeError", (TB_LINES[-1],))
    config = '{"zero_optimization": {"stage": 3}, "comment": "my config for the big run"}'
    assert sig(config).lines == ()  # JSON without an error in it is read as it is


def test_brackets_nested_past_the_json_parser_are_read_as_they_are() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    assert as_printed(deep) == deep
    assert sig(deep + "\nRuntimeError: CUDA error: out of memory").exception == "RuntimeError"


def test_an_error_quoted_twice_in_a_mail_or_forum_reply_is_the_error() -> None:
    for quote in ("> ", ">> ", "> > "):
        s = sig(f"{quote}RuntimeError: CUDA error: an illegal memory access was encountered")
        assert s.lines == ("RuntimeError: CUDA error: an illegal memory access was encountered",), quote


def test_a_timestamped_traceback_keeps_its_frames_in_either_order() -> None:
    """`docker logs -t` and `kubectl logs --timestamps` stamp every line, frames included; a log viewer (Kibana,
    Loki) shows the newest line first. The frames still name the library, the exception is still the error."""
    lines = TB_LINES[:3] + ('  File "/usr/lib/python3.10/site-packages/torch/cuda/__init__.py", line 293, in _lazy_init',
                            "    torch._C._cuda_init()", TB_LINES[-1])
    for stamp in ("2026-11-27T05:00:0{}.123456789Z ", "2026-11-27 05:00:0{},123 ", "[2026-11-27 05:00:0{}] "):
        stamped = [stamp.format(i) + line for i, line in enumerate(lines)]
        for order in (stamped, stamped[::-1]):
            s = sig("\n".join(order))
            assert (s.exception, s.lines, s.components) == ("RuntimeError", (TB_LINES[-1],), ("torch.cuda",)), stamp
    aligned = sig("2026-11-27 05:00:00,123   INFO   loading shards\n2026-11-27 05:00:01,456   ERROR  boom: disk full")
    assert len(aligned.lines) == 1 and aligned.lines[0].endswith("boom: disk full")  # columns are no indentation


def test_an_embedded_screenshot_is_taken_out_but_an_img_token_in_code_stays() -> None:
    """A Markdown or HTML image is the tracker's, not the terminal's; `'<img>'` as a special token is the user's code."""
    assert as_printed('报错如下 ![image](https://x.example/a.png) 怎么办\n<img width="9" alt="s" src="https://x.example/b.png">') \
        == "报错如下  怎么办\n"
    code = "tok.add_special_tokens({'additional_special_tokens': ['<img>', '</img>']})"
    assert as_printed(code) == code


@pytest.mark.parametrize("prefix", [
    " 3: ",  # `srun --label` in a job of 10 to 99 tasks pads the task number
    "wandb: ERROR ",  # Weights & Biases relaying a run's stderr
    "#12 0.415 ",  # Docker BuildKit's plain progress
    "[2024-05-01T10:00:00.123Z] ",  # Jenkins' timestamper
    "2024-05-01T10:00:00+0000 gpu-node-12 python[12345]: ",  # journalctl -o short-iso
    "May 01 10:00:00.123456 gpu-node-12 python[12345]: ",  # journalctl -o short-precise
    "[1,mpirank:1,algo-2]<stderr>:",  # SageMaker's MPI runs
    "(task, pid=12345) ",  # SkyPilot
    "(worker1, rank=1, pid=2345, ip=10.0.0.2) ",  # SkyPilot, several nodes
    ">",  # a mail client's quote with no blank after it
    "1714557600123\t2024-05-01T10:00:00.123Z\t",  # CloudWatch's export
    "0|infer    | ",  # PM2
    "2024-05-01T10:00:00.123456+00:00 app[worker.1]: ",  # Heroku
    "2024-05-01T10:00:00Z app[148e1234abcd56] iad [info]",  # Fly.io
    "10:00:01  ",  # Jenkins' timestamper, time of day only
    "ERROR 2024-05-01T10:00:00.123456Z [resource.labels.taskName: workerpool0-0] ",  # Google Cloud's Logs Explorer
])
def test_a_log_prefix_on_every_line_is_taken_off(prefix) -> None:
    """Wrappers found by pasting one traceback into each log shape people copy from: with them taken off, the
    paste reads as the bare traceback."""
    s = sig("\n".join(prefix + line for line in TB_LINES))
    assert (s.exception, s.lines) == ("RuntimeError", (TB_LINES[-1],))
    from kb.signature import frame_calls
    assert frame_calls("\n".join(prefix + line for line in TB_LINES)) == frame_calls("\n".join(TB_LINES)) == ("main()",)


def test_a_github_actions_annotation_and_a_ray_repeat_count_are_not_part_of_the_error() -> None:
    stamp = "2024-05-01T10:00:01.1234567Z "
    s = sig("\n".join(stamp + line for line in TB_LINES[:-1]) + f"\n{stamp}##[error]{TB_LINES[-1]}")
    assert (s.exception, s.lines) == ("RuntimeError", (TB_LINES[-1],))
    s = sig("(RayTrainWorker pid=1234, ip=10.0.0.1) " + TB_LINES[-1] + " [repeated 7x across cluster]")
    assert s.lines == (TB_LINES[-1],)


def test_transformers_import_wrapper_gives_way_to_the_error_it_wraps() -> None:
    """`RuntimeError: Failed to import transformers.models.llama.modeling_llama because of the following error (look
    up to see its traceback)` only points at the chained error above it: that one is the paste's error."""
    s = sig("Traceback (most recent call last):\n  File \"/app/run.py\", line 5, in <module>\n    import flash_attn\n"
            "ModuleNotFoundError: No module named 'flash_attn'\n\n"
            "The above exception was the direct cause of the following exception:\n\n"
            "Traceback (most recent call last):\n  File \"/x/transformers/utils/import_utils.py\", line 1537, in _get_module\n"
            "    raise RuntimeError(\nRuntimeError: Failed to import transformers.models.llama.modeling_llama because of "
            "the following error (look up to see its traceback):\nNo module named 'flash_attn'")
    assert s.exception == "ModuleNotFoundError" and s.lines[0] == "ModuleNotFoundError: No module named 'flash_attn'"


def test_a_traceback_from_a_pages_html_a_notebook_file_or_vs_code_reads_as_python_prints_it() -> None:
    """`<pre><code>` around it or `<br>` between its lines (a page's source), a saved notebook's error output (JSON
    with its colour codes as escapes), VS Code's `Exception has occurred: T` with the message on the next line, the
    list `traceback.format_exception()` returns, printed."""
    bare = sig("\n".join(TB_LINES))
    assert sig("<pre><code>" + "\n".join(TB_LINES) + "</code></pre>").lines == bare.lines
    assert sig("<p>" + "<br>".join(TB_LINES) + "</p>").lines == bare.lines
    notebook = ('{"output_type": "error", "ename": "RuntimeError", "evalue": "CUDA error: device-side assert triggered", '
                '"traceback": ["\\u001b[0;31mRuntimeError\\u001b[0m      Traceback (most recent call last)", '
                '"Cell \\u001b[0;32mIn[3], line 3\\u001b[0m\\n----> 3 main()\\n", '
                '"\\u001b[0;31mRuntimeError\\u001b[0m: CUDA error: device-side assert triggered"]}')
    assert sig(notebook).lines[0] == TB_LINES[-1]
    s = sig("Exception has occurred: RuntimeError\nCUDA error: device-side assert triggered\n"
            '  File "/app/train.py", line 12, in <module>\n    main()')
    assert (s.exception, s.lines[0]) == ("RuntimeError", TB_LINES[-1])
    assert as_printed("<code object f at 0x7f>") == "<code object f at 0x7f>"  # a repr, not a tag: kept
    listed = "[" + ", ".join(repr(line + "\n") for line in TB_LINES) + "]"  # traceback.format_exception() printed
    assert sig(listed).lines == bare.lines


def test_a_traceback_header_behind_two_prefixes_stays_in_its_stream() -> None:
    """DeepSpeed's pdsh launcher puts the host before the rank (`worker-3: [rank1]: Traceback …`): the header is not
    text glued before a traceback, so it stays on its line, in that stream, and the frames under it are read."""
    frames = ['  File "/usr/local/lib/python3.10/dist-packages/torch/nn/parallel/distributed.py", line 825, in __init__',
              "    _verify_param_shape_across_processes(self.process_group, parameters)"]
    lines = [TB_LINES[0], *frames, TB_LINES[-1]]
    s = sig("\n".join("worker-3: [rank1]: " + line for line in lines))
    assert s.lines == (TB_LINES[-1],) and s.components == sig("\n".join(lines)).components == ("torch.nn.parallel",)


def test_a_message_that_opens_with_a_newline_is_read_from_the_next_line() -> None:
    """`raise AssertionError(\"\"\"\\nFound no NVIDIA driver …\"\"\")` prints the type, a colon and nothing else: the
    message is on the lines below. A bare `AssertionError` (no colon) has none, and the next line is not one."""
    frames = ('Traceback (most recent call last):\n'
              '  File "/usr/lib/python3.8/site-packages/torch/cuda/__init__.py", line 65, in _check_driver\n'
              '    raise AssertionError("""\n')
    below = sig(frames + "AssertionError:\nFound no NVIDIA driver on your system. Please check that you\n"
                "have an NVIDIA GPU and installed a driver from\n")
    assert below.lines[0] == "AssertionError: Found no NVIDIA driver on your system. Please check that you"
    headless = sig("worker_1  | AssertionError:\nworker_1  | Found no NVIDIA driver on your system.\n")  # a cut paste
    assert headless.lines[0] == "AssertionError: Found no NVIDIA driver on your system."
    bare = sig(frames.replace('("""', "") + "AssertionError\nEpoch 3 finished, saving the checkpoint\n")
    assert bare.lines == ("AssertionError",)


def test_a_comment_in_a_pasted_script_is_not_taken_for_an_issue_forms_heading() -> None:
    """An issue form's `### System Info` says nothing; a script's `# …` comment can quote what the user saw."""
    assert sig("### 当前行为 | Current Behavior\n- [X] I have searched the existing issues\n").prose == ""
    assert sig('sudo lspci -vvv | grep -i acsctl\n# 出现 "ACSCtl: SrcValid+ ReqRedir+ CmpltRedir+" 表示 ACS 重定向开启\n').lines


def test_a_blogs_paragraph_that_says_error_is_prose_not_an_error_line() -> None:
    """A write-up pasted whole: its paragraphs say `error` in the writer's words. No tool prints a message of three
    sentences and thirty words without a number in it."""
    paragraph = ("Customizing large language models with the Transformers library requires careful management of "
                 "special tokens. A common configuration error during fine-tuning is the conflation of the padding "
                 "token and the end of sequence token. When these are unified, the model fails to stop generating.")
    s = sig("Fixing infinite generation after fine-tuning\n\n" + paragraph)
    assert s.lines == () and "configuration error" in s.prose
    oom = "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB."
    assert sig(oom).lines == (oom,)


def test_an_out_of_memory_message_without_its_exception_type_is_an_error_line() -> None:
    """Copied from the middle of a line, the OOM message has no `torch.OutOfMemoryError:` before it, and its
    `non-PyTorch memory` must not send it the way of lines whose only error word is a negation."""
    oom = ("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.41 "
           "GiB is free. Including non-PyTorch memory, this process has 77.72 GiB memory in use.")
    assert sig(oom).lines == (oom,)


def test_a_log_exported_as_csv_reads_as_its_message_column() -> None:
    """CloudWatch's `timestamp,message` export, newest row first, a message's quotes doubled; Datadog's
    `Date,Host,Service,Message` with a whole traceback in one quoted field."""
    rows = [f'17146458720{n:02d},"{line.replace(chr(34), chr(34) * 2)}"' for n, line in enumerate(TB_LINES)]
    s = sig("timestamp,message\n" + "\n".join(reversed(rows)))
    assert (s.exception, s.lines) == ("RuntimeError", (TB_LINES[-1],))
    field = "\n".join(TB_LINES).replace('"', '""')
    s = sig(f'Date,Host,Service,Message\n2024-05-02T10:11:12Z,gpu-1,trainer,"{field}"\n'
            '2024-05-02T10:11:11Z,gpu-1,trainer,"step 10 loss 2.1"\n2024-05-02T10:11:10Z,gpu-1,trainer,"step 9 loss 2.2"')
    assert (s.exception, s.lines) == ("RuntimeError", (TB_LINES[-1],))
    prose = "time, message and place of the failure:\n" + "\n".join(TB_LINES)  # no table: left as it is
    assert as_printed(prose) == prose


def test_a_sagemaker_failure_reason_is_read_as_the_scripts_error() -> None:
    """The SageMaker SDK's `UnexpectedStatusException … AlgorithmError: ExecuteUserScriptError:` wraps whatever the
    training script raised; the script's error is the one in `ErrorMessage "…"`."""
    s = focus(sig("UnexpectedStatusException: Error for Training job hf-training-2024-05-02-10-11-12-345: Failed. Reason: "
            "AlgorithmError: ExecuteUserScriptError:\nExitCode 1\nErrorMessage \"torch.cuda.OutOfMemoryError: CUDA "
            "out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 22.19 GiB of which 1.02 GiB is "
            "free.\n\"\nCommand \"/opt/conda/bin/python3.10 train.py --epochs 3\", exit code: 1"))
    assert s.exception == "torch.cuda.OutOfMemoryError"
    assert [line[:44] for line in s.lines] == ["torch.cuda.OutOfMemoryError: CUDA out of mem"]


def test_aws_logs_text_output_reads_as_its_messages() -> None:
    """`aws logs get-log-events --output text` and `filter-log-events` (an event id and the stream first)."""
    got = sig("\n".join(f"EVENTS\t17146458720{n:02d}\t{line}\t17146458721{n:02d}" for n, line in enumerate(TB_LINES)))
    assert (got.exception, got.lines) == ("RuntimeError", (TB_LINES[-1],))
    got = sig("\n".join(f"EVENTS\t3722{n}9088\t17146458720{n:02d}\ttrain/algo-1\t{line}\t17146458721{n:02d}"
                        for n, line in enumerate(TB_LINES)))
    assert (got.exception, got.lines) == ("RuntimeError", (TB_LINES[-1],))
