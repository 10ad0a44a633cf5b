"""Numbers as evidence: typed facts from a paste, conditions from an article."""

from __future__ import annotations

import pytest

from kb.errors import ArticleError, KbError
from kb.facts import check, extract_facts, parse_condition
from kb.ingest import parse_document

NEW_OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.28 GiB. GPU 0 has a total capacity of "
           "79.15 GiB of which 3.12 GiB is free. Of the allocated memory 63.40 GiB is allocated by PyTorch, and "
           "11.97 GiB is reserved by PyTorch but unallocated.")
OLD_OOM = ("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.95 GiB (GPU 0; 23.65 GiB total "
           "capacity; 15.10 GiB already allocated; 1.02 GiB free; 21.84 GiB reserved in total by PyTorch)")


def test_memory_facts_from_both_pytorch_formats_mean_the_same():
    new, old = extract_facts(NEW_OOM), extract_facts(OLD_OOM)
    assert new["allocated_gib"] == 63.40 and new["reserved_gib"] == pytest.approx(75.37)
    assert old["allocated_gib"] == 15.10 and old["unallocated_reserved_gib"] == pytest.approx(6.74)
    assert extract_facts("Tried to allocate 512.00 MiB")["requested_gib"] == 0.5
    assert extract_facts("Of the allocated memory 0 bytes is allocated by PyTorch")["allocated_gib"] == 0.0


def test_collective_and_hardware_facts():
    f = extract_facts("[Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=48211, "
                      "OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600046 milliseconds")
    assert f == {"nccl_seq": 48211.0, "nccl_timeout_s": 600.0}
    assert extract_facts("no kernel image for sm_86")["compute_capability"] == 8.6
    assert extract_facts("your device is of CUDA capability 6.0")["compute_capability"] == 6.0
    # the device's own capability, three digits, not the first of the builds' list after it
    assert extract_facts("NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current "
                         "PyTorch installation.\nThe current PyTorch install supports CUDA capabilities sm_50 sm_60 "
                         "sm_90.")["compute_capability"] == 12.0


def test_load_size_mismatch_facts():
    line = ("size mismatch for model.embed_tokens.weight: copying a param with shape torch.Size([0]) from checkpoint, "
            "the shape in current model is torch.Size([32000, 4096]).")
    model = 32000.0 * 4096
    assert extract_facts(line) == {"checkpoint_numel": 0.0, "model_numel": model, "embedding_mismatch": 0.0}
    resized = line.replace("[0]", "[32003, 4096]").replace("model.embed_tokens", "base_model.model.lm_head")
    assert extract_facts(resized) == {"checkpoint_numel": 32003.0 * 4096, "model_numel": model,
                                      "embedding_mismatch": 1.0}
    assert extract_facts(line.replace("embed_tokens", "layers.0.q_proj.lora_A").replace("[0]", "[8, 5120]")) == {
        "checkpoint_numel": 40960.0, "model_numel": model, "embedding_mismatch": 0.0}
    # loading into a ZeRO-3-partitioned model: the model's side is the empty one
    assert extract_facts(line.replace("[0]", "[4096, 1024]").replace("[32000, 4096]", "[0]"))["model_numel"] == 0


def test_the_signal_a_worker_died_of():
    assert extract_facts("[launch.py:321:sigkill_handler] ['python', 'train.py'] exits with return code = -9") == {
        "exit_signal": 9.0}
    assert extract_facts("[Error][launch.py:324:sigkill_handler]exits with return -7")["exit_signal"] == 7.0
    assert extract_facts("traceback : Signal 6 (SIGABRT) received by PID 881230")["exit_signal"] == 6.0
    assert extract_facts("exitcode  : 1 (pid: 3)") == {}  # a Python exception, not a signal
    # torchrun lists the other ranks' failures first; the first observed failure decides
    summary = ("Failures:\n[1]:\n  exitcode  : -6 (pid: 12)\n-----\nRoot Cause (first observed failure):\n[0]:\n"
               "  exitcode  : -9 (pid: 11)\n  traceback : Signal 9 (SIGKILL) received by PID 11")
    assert extract_facts(summary)["exit_signal"] == 9.0
    # PyTorch's DataLoader names the signal: a segfault is neither the OOM killer (9) nor a full /dev/shm (7)
    assert extract_facts("DataLoader worker (pid 3121) is killed by signal: Bus error.")["exit_signal"] == 7.0
    assert extract_facts("DataLoader worker (pid 25902) is killed by signal: Segmentation fault")["exit_signal"] == 11.0
    assert extract_facts("RuntimeError: DataLoader worker (pid(s) 2977051) exited unexpectedly") == {}
    # SIGTERM is sent by someone else (a launcher stopping the other ranks): it says nothing about the cause
    assert extract_facts("DataLoader worker (pid 4125) is killed by signal: Terminated.") == {}
    assert extract_facts("exits with return code = -15\n… exits with return code = -9")["exit_signal"] == 9.0


def test_a_condition_is_supported_contradicted_or_silent():
    frag = parse_condition("unallocated_reserved_gib >= 0.08 * total_gib")
    assert check(frag, extract_facts(NEW_OOM)) == 1
    assert check(frag, extract_facts(NEW_OOM.replace("11.97 GiB is reserved", "0.50 GiB is reserved"))) == -1
    assert check(frag, extract_facts("CUDA out of memory")) == 0  # the paste gives no numbers
    either = parse_condition("nccl_seq <= 10 or compute_capability < 8.0")
    assert check(either, {"nccl_seq": 3.0}) == 1  # one known side decides `or`
    assert check(either, {"nccl_seq": 300.0}) == 0  # the other side is unknown


@pytest.mark.parametrize("bad", ["__import__('os')", "foo > 1", "total_gib >", "total_gib > 'x'", "open"])
def test_only_comparisons_of_known_values_are_accepted(bad):
    with pytest.raises(KbError):
        parse_condition(bad)


def test_a_bad_condition_names_the_file_and_line():
    raw = b'---\nid: x\ntitle: X\napplies_when: "reserverd_gib > 2"\n---\n\nbody\n'
    with pytest.raises(ArticleError, match=r"a\.md: line 4: .*unknown value 'reserverd_gib'"):
        parse_document(raw, "a.md")


def test_a_gpu_named_by_model_gives_its_compute_capability():
    """`RTX 5090 support - … FlashAttention only supports Ampere GPUs or newer` is not the pre-Ampere case the
    article explains: the card's model says so when the paste states no capability."""
    assert extract_facts("RTX 5090 support - built from scratch but still getting")["compute_capability"] == 12.0
    assert extract_facts("Kaggle 的 T4 上微调 Qwen 报错")["compute_capability"] == 7.5
    assert extract_facts("4张A800 sft 训练")["compute_capability"] == 8.0
    assert extract_facts("GPU: NVIDIA Tesla V100S-PCIE-32GB")["compute_capability"] == 7.0
    assert extract_facts("因为我使用的显卡是M40，比较久")["compute_capability"] == 5.2
    # a stated capability wins; two different cards, or a short name that is not a card, say nothing
    assert extract_facts("Your Tesla T4 GPU has compute capability 7.5 (RTX 3090 at home)")["compute_capability"] == 7.5
    assert "compute_capability" not in extract_facts("works on the A100 box, fails on the V100 one")
    assert "compute_capability" not in extract_facts("step T4 done; paper size A40")


def test_an_oom_says_whether_another_process_holds_the_gpu():
    """The zombie-process article applies when other processes hold the memory. A message cut short after
    `this process has 15.24 GiB memory in use` (no reserved figure) still says this process holds it all."""
    zombie = parse_condition("others_gib > 0.4 * (total_gib - free_gib)")
    cut = ("CUDA out of memory. Tried to allocate 490.00 MiB. GPU 0 has a total capacity of 15.56 GiB of which "
           "322.62 MiB is free. Including non-PyTorch memory, this process has 15.24 GiB memory in use. Of the allo")
    assert check(zombie, extract_facts(cut)) == -1
    others = cut.replace("this process has 15.24 GiB", "this process has 0 bytes")
    assert check(zombie, extract_facts(others)) == 1
    assert check(zombie, extract_facts(OLD_OOM)) == -1  # reserved stands in for this process when it is all there is


def test_a_same_device_error_says_whether_both_devices_are_gpus():
    """Two GPUs (`cuda:1 and cuda:0`) is a model split across cards; the CPU among them is a tensor left behind."""
    split = ("RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:1 and "
             "cuda:0! (when checking argument for argument index in method wrapper_CUDA__index_select)")
    assert extract_facts(split) == {"devices_all_gpu": 1.0}
    assert extract_facts(split.replace("cuda:1 and cuda:0", "cuda:0 and cpu")) == {"devices_all_gpu": 0.0}
    newer = ("RuntimeError: Expected all tensors to be on the same device, but got index is on cuda:0, different from "
             "other tensors on cuda:3 (when checking argument in method wrapper_CUDA_gather)")
    assert extract_facts(newer) == {"devices_all_gpu": 1.0}
    assert extract_facts(newer.replace("cuda:3", "cpu")) == {"devices_all_gpu": 0.0}
    assert check(parse_condition("devices_all_gpu == 1"), extract_facts("Expected all tensors on one device")) == 0


def test_an_amd_gpu_says_whether_rocm_wheels_have_kernels_for_it():
    """`HIP error: invalid device function` is a missing gfx target on an RX 6600 or a 780M, not on an MI250X or an
    RX 7900 XTX, whose targets every ROCm wheel carries: there the same line has another cause."""
    cases = {
        "RuntimeError: HIP error: invalid device function (RX 6600, ROCm 6.1)": 0.0,
        "rocBLAS error: Cannot read TensileLibrary.dat for GPU arch : gfx1031\n TensileLibrary_lazy_gfx1030.dat": 0.0,
        "Strix Halo gfx1151, torch nightly rocm7.0": 0.0,
        "hipErrorNoBinaryForGpu: Unable to find code object for all current devices! on MI250X": 1.0,
        "RuntimeError: HIP error: invalid device function\nROCm 6.1, RX 7900 XTX": 1.0,
    }
    condition = parse_condition("rocm_gfx_in_wheels == 0")
    for paste, value in cases.items():
        assert extract_facts(paste) == {"rocm_gfx_in_wheels": value}, paste
        assert check(condition, extract_facts(paste)) == (1 if value == 0 else -1), paste
    assert "rocm_gfx_in_wheels" not in extract_facts("RX 7800 XT, ROCm 6.2")  # its support changed: no say
