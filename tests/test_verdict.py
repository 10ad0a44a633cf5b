"""Trust: one verdict from the core, honest on errors the knowledge base does not cover.

These run on the bundled corpus with the fast `hash` encoder: the verdict reads no dense
similarity, so what they assert holds for the shipped model too.
"""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from kb import evaluate
from kb.config import Settings
from kb.service import KnowledgeBase
from kb.verdict import _DOUBTS, Context

from conftest import REPO

FRAGMENTATION_OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
    "79.15 GiB of which 1.12 GiB is free. Including non-PyTorch memory, this process has 78.02 GiB memory in use. "
    "Of the allocated memory {alloc} GiB is allocated by PyTorch, and {unalloc} GiB is reserved by PyTorch but "
    "unallocated. If reserved but unallocated memory is large try setting "
    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation."
)


@pytest.fixture(scope="module")
def bundled(tmp_path_factory, tokenizer) -> KnowledgeBase:
    base = KnowledgeBase(Settings(data_dir=tmp_path_factory.mktemp("bundled"), embed_model="hash"), tokenizer=tokenizer)
    report = base.ingest([REPO / "corpus"])
    assert not report.failed, report.failed
    return base


def test_an_error_type_no_article_mentions_gets_none_and_says_so(bundled):
    resp = bundled.search("jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying "
                          "to allocate 1234567168 bytes.")
    assert resp.verdict == "none" and not resp.confident
    assert "`XlaRuntimeError` does not appear in any article" in resp.reason
    assert resp.results  # the closest articles are still shown, as related


def test_an_error_on_another_platform_is_not_answered_with_the_cuda_article(bundled):
    resp = bundled.search("torch.OutOfMemoryError: XPU out of memory. Tried to allocate 4.00 GiB. GPU 0 has a total "
                          "capacity of 15.56 GiB of which 9.20 GiB is free.")
    assert not resp.confident
    assert "xpu" in resp.reason
    # Apple's MPS has an article of its own: the paste goes to it, not to a CUDA out-of-memory article
    mps = bundled.search("RuntimeError: MPS backend out of memory (MPS allocated: 17.63 GB, other allocations: "
                         "1.20 GB, max allowed: 18.13 GB). Tried to allocate 256.00 MB on private pool.")
    assert mps.results[0].article_id == "mps-backend-out-of-memory-watermark"
    # another framework is set against PyTorch, not against CUDA
    tf = bundled.search("tensorflow keras model.fit CUDA out of memory when allocating tensor on GPU:0")
    assert not tf.confident
    assert tf.reason == "the paste is about `tensorflow`; the closest article is about `pytorch`", tf.reason


def test_a_domestic_accelerators_copy_of_a_cuda_error_is_not_answered_with_the_cuda_article(bundled):
    """Moore Threads' torch_musa and MetaX's MACA print CUDA's messages with their own name in them (realAG-13:
    a port 'already in use' that no process held, on MetaX): the CUDA article's cause is not theirs."""
    musa = bundled.search("RuntimeError: MUSA out of memory. Tried to allocate 2.00 GiB (GPU 0; 47.98 GiB total "
                          "capacity; 44.10 GiB already allocated; 1.20 GiB free; 45.00 GiB reserved in total by PyTorch)")
    assert not musa.confident
    assert musa.reason == "the paste is about `musa`; the closest article is about `cuda`", musa.reason
    socket = ("RuntimeError: The server socket has failed to listen on any local network address. port: 29500, "
              "useIpv6: 0, code: -98, name: EADDRINUSE, message: address already in use")
    assert bundled.search(socket).confident
    metax = bundled.search(socket + "\n硬件: 8x MetaX MXC500 GPU, MACA 3.2.1")
    assert not metax.confident and "`maca`" in metax.reason


def test_an_article_about_another_accelerator_does_not_answer_a_cuda_paste(bundled):
    """ROCm's `HIP error: invalid device function` has an article; the same words from CUDA are another matter."""
    hip = bundled.search("RuntimeError: HIP error: invalid device function\nHIP kernel errors might be asynchronously "
                         "reported at some other API call")
    assert hip.results[0].article_id == "rocm-hip-invalid-device-function-gfx-arch"
    assert hip.results[0].evidence.platform_conflict == 0
    cuda = bundled.search("RuntimeError: CUDA error: invalid device function\nCUDA kernel errors might be "
                          "asynchronously reported at some other API call")
    rocm = [r for r in cuda.results if r.article_id == "rocm-hip-invalid-device-function-gfx-arch"]
    assert rocm and rocm[0].evidence.platform_conflict == 1
    if cuda.results[0].article_id == rocm[0].article_id:
        assert not cuda.confident
        assert cuda.reason == "the paste is about `cuda`; the closest article is about `rocm`", cuda.reason


def test_an_environment_report_of_what_is_not_installed_names_no_platform(bundled):
    """transformers' issue template lists `Tensorflow version (GPU?): not installed (NA)` and `Jax version: not
    installed` under System Info. A paste told in words is searched as a whole, and those fields made it read as
    one about TensorFlow and JAX."""
    resp = bundled.search("Training with deepspeed makes no progress on two GPUs, one GPU is fine\n\n### System Info\n"
                          "- `transformers` version: 4.31.0\n"
                          "- PyTorch version (GPU?): 2.0.1+cu117 (True)\n"
                          "- Tensorflow version (GPU?): not installed (NA)\n"
                          "- Flax version (CPU?/GPU?/TPU?): not installed (NA)\n- Jax version: not installed\n"
                          "- JaxLib version: not installed\n\nGPU utilization sits at 100% and nothing happens.")
    assert "tensorflow" not in resp.reason and "xla" not in resp.reason, resp.reason
    assert resp.results[0].evidence.platform_conflict == 0


def test_a_paste_lowercased_whole_quotes_the_same_error_line(bundled):
    """Forums and editors lowercase pastes: `runtimeerror: cuda error: invalid device ordinal` is the article's
    line all the same. A short line has too few words to count as a full match by its words alone."""
    for query in ("RuntimeError: CUDA error: invalid device ordinal", "runtimeerror: cuda error: invalid device ordinal"):
        top = bundled.search(query).results[0]
        assert top.article_id == "cuda-invalid-device-ordinal-visible-devices" and top.evidence.template == 1.0, query


def test_the_same_failure_of_another_package_is_not_answered_with_that_packages_article(bundled):
    own = bundled.search("ERROR: Failed building wheel for flash-attn\nerror: subprocess-exited-with-error")
    assert own.results[0].article_id == "build-flash-attn-subprocess-exited-with-error"
    other = bundled.search("ERROR: Could not build wheels for tokenizers, which is required to install "
                           "pyproject.toml-based projects\nerror: can't find Rust compiler")
    assert other.verdict != "answer"
    assert "`tokenizers`" in other.reason and "`flash-attn`" in other.reason
    # the article's matched line names no package (pip's epilogue): the one package its error lines name counts
    epilogue = bundled.search("× Building wheel for llama-cpp-python (pyproject.toml) did not run successfully.\n"
                              "│ exit code: 1\n× python setup.py bdist_wheel did not run successfully.")
    assert epilogue.verdict != "answer"
    assert "`llama-cpp-python`" in epilogue.reason and "`flash-attn`" in epilogue.reason


def test_error_subjects_are_read_off_the_line():
    from kb.trust import subject

    assert subject("ERROR: Could not build wheels for flash_attn, which is required") == "flash-attn"
    assert subject("ModuleNotFoundError: No module named 'apex.amp'") == "apex"
    assert subject("ImportError: cannot import name 'x' from 'transformers.utils' (/a)") == "transformers"
    assert subject("RuntimeError: Error building extension 'fused_adam'") == "fused-adam"
    assert subject("RuntimeError: CUDA error: out of memory") is None
    assert subject("TypeError: A.__init__() got an unexpected keyword argument 'eval_strategy'") == "eval_strategy"
    assert subject("AttributeError: 'Parameter' object has no attribute 'ds_status'") == "ds_status"


def test_an_unexpected_argument_another_article_does_not_name_is_not_its_answer(bundled):
    """`got an unexpected keyword argument 'x'` is fixed wording around one name: an article about another
    renamed argument matches it nearly word for word, and it is still not the answer."""
    own = bundled.search("TypeError: SFTTrainer.__init__() got an unexpected keyword argument 'tokenizer'")
    assert own.results[0].article_id == "trl-sft-max-length-renamed" and own.verdict == "answer"
    other = bundled.search("TypeError: TrainingArguments.__init__() got an unexpected keyword argument "
                           "'evaluation_strategy'")
    assert other.verdict != "answer"
    assert "`evaluation_strategy`" in other.reason


def test_numbers_that_contradict_an_article_keep_it_from_answering(bundled):
    frag = bundled.search(FRAGMENTATION_OOM.format(alloc="61.40", unalloc="15.97"))
    assert frag.results[0].article_id == "oom-fragmentation-expandable-segments"
    assert frag.results[0].evidence.facts == 1.0
    # allocated ~ reserved: not fragmentation, whatever the template says
    tight = bundled.search(FRAGMENTATION_OOM.format(alloc="76.40", unalloc="0.97"))
    by_id = {r.article_id: r for r in tight.results}
    if "oom-fragmentation-expandable-segments" in by_id:
        assert by_id["oom-fragmentation-expandable-segments"].evidence.facts == -1.0
    assert not (tight.results[0].article_id == "oom-fragmentation-expandable-segments" and tight.confident)


LOAD_MISMATCH = ("RuntimeError: Error(s) in loading state_dict for PeftModelForCausalLM:\n"
                 "\tsize mismatch for base_model.model.{name}: copying a param with shape torch.Size([{saved}]) "
                 "from checkpoint, the shape in current model is torch.Size([{now}]).")


@pytest.mark.parametrize("name, saved, now, cause", [
    ("model.layers.3.mlp.gate_proj.lora_B.default.weight", "0", "14336, 8", "ds-zero3-saved-weights-empty"),
    ("model.embed_tokens.modules_to_save.default.weight", "128264, 4096", "128256, 4096",
     "peft-resized-embeddings-modules-to-save"),
    ("model.layers.0.self_attn.q_proj.lora_A.weight", "8, 5120", "8, 4096", "peft-adapter-load-size-mismatch"),
])
def test_which_parameter_and_shape_mismatch_decides_the_cause(bundled, name, saved, now, cause):
    """Every load-time size mismatch shares one template; the shapes say which of three causes it is."""
    top = bundled.search(LOAD_MISMATCH.format(name=name, saved=saved, now=now)).results[0]
    assert top.article_id == cause and top.evidence.facts == 1.0


def test_the_signal_a_worker_died_of_decides_between_host_memory_and_a_bus_error(bundled):
    """A DeepSpeed launcher's line is one template whatever the code: -9 is the OOM killer (the host-RAM
    articles), -7 a bus error, which those articles' own condition rules out."""
    line = "[ERROR] [launch.py:321:sigkill_handler] ['/usr/bin/python', '-u', 'train.py', '--deepspeed'] exits with return code = {}"
    killed = bundled.search(line.format("-9")).results[0]
    assert killed.article_id == "ds-offload-host-ram-sigkill" and killed.evidence.facts == 1.0
    bus = bundled.search(line.format("-7"), top_k=20)
    assert all(r.evidence.facts >= 0 for r in bus.results[:3]) and bus.verdict == "none"
    assert "ds-offload-host-ram-sigkill" not in [r.article_id for r in bus.results[:3]]


def test_a_gpu_named_by_model_rules_out_the_pre_ampere_article_and_the_reason_says_so(bundled):
    """FlashAttention's `only supports Ampere GPUs or newer` on an RTX 5090 (compute capability 12.0) is a wrong
    build, not the old card the article that quotes the line is about: that article is ruled out, and the
    reason says which condition the paste contradicts rather than that no article quotes the line."""
    line = "RuntimeError: FlashAttention only supports Ampere GPUs or newer."
    assert bundled.search("Tesla T4: " + line).results[0].article_id == "fa-ampere-only-turing-v100"
    resp = bundled.search("RTX 5090 support - built from scratch but still getting - " + line)
    assert resp.verdict != "answer" and resp.results[0].article_id != "fa-ampere-only-turing-v100"
    assert "`fa-ampere-only-turing-v100`, applies when `compute_capability < 8.0`" in resp.reason, resp.reason


def test_a_wrapper_that_points_at_the_real_error_is_never_an_answer(bundled):
    """vLLM's `Engine core initialization failed. See root cause above.` alone: the cause is in lines the user did
    not paste, so an article quoting the wrapper is a guess, and the reason says what to paste."""
    resp = bundled.search("RuntimeError: Engine core initialization failed. See root cause above. "
                          "Failed core proc(s): {'EngineCore_0': 1}")
    assert resp.verdict != "answer" and "paste the lines above it" in resp.reason
    with_cause = bundled.search("ValueError: No available memory for the cache blocks. Try increasing "
                                "`gpu_memory_utilization` when initializing the engine.\nRuntimeError: Engine core "
                                "initialization failed. See root cause above. Failed core proc(s): {'EngineCore_0': 1}")
    assert "lines above it" not in with_cause.reason


def test_leaving_the_right_article_out_turns_a_confident_answer_into_no_answer(bundled):
    paste = ("ValueError: Must flatten tensors with uniform dtype but got torch.bfloat16 and torch.float32")
    covered = bundled.search(paste)
    assert covered.results[0].article_id == "fsdp-uniform-dtype-bf16-fp32"
    assert covered.verdict == "answer", covered.reason
    missing = bundled.search(paste, exclude=frozenset({"fsdp-uniform-dtype-bf16-fp32"}))
    assert all(r.article_id != "fsdp-uniform-dtype-bf16-fp32" for r in missing.results)
    assert missing.verdict != "answer" and missing.reason


def test_an_article_that_quotes_the_error_line_is_never_no_article():
    """Low confidence with the paste's own error line in the article: `maybe` (check its cause),
    not "the knowledge base has no article for this error"; unless evidence rules the article out."""
    from kb.verdict import QUOTED_LINE, Evidence, verdict_kind

    quoted = Evidence(lexical=0.8, expansion=0.1, dense=None, template=QUOTED_LINE, template_share=1.0,
                      component=0.0, coverage=0.3, unknown=0.1)
    assert verdict_kind(0.1, answer_at=0.7, maybe_at=0.45, top=quoted) == "maybe"
    assert verdict_kind(0.9, answer_at=0.7, maybe_at=0.45, top=quoted) == "answer"
    assert verdict_kind(0.1, 0.7, 0.45, replace(quoted, template=0.6)) == "none"
    assert verdict_kind(0.1, 0.7, 0.45, replace(quoted, facts=-1.0)) == "none"  # its numbers contradict it
    assert verdict_kind(0.9, 0.7, 0.45, replace(quoted, facts=-1.0)) == "maybe"


def test_confidence_never_rises_down_the_ranking_and_matches_the_verdict(bundled):
    for q in ["CUDA out of memory", "NCCL timeout during all_reduce", "显存不足 怎么办", "deepspeed zero3 save checkpoint"]:
        resp = bundled.search(q, top_k=8)
        conf = [r.confidence for r in resp.results]
        assert conf == sorted(conf, reverse=True), q
        assert resp.confident == (resp.verdict == "answer") and resp.reason


def test_a_generic_error_shape_or_a_shared_line_is_never_more_convincing(bundled):
    """Masking most of the matched line's words away, or eight articles quoting the same line, never raises
    confidence (the fit keeps those signs). Neither lowers it on its own any more: once the model knows how
    much of the article's title the paste holds (title_recall, below), the fit gives both no weight."""
    ev = bundled.search("Invalidate trace cache @ step 12: expected module 4, but got module 88").results[0].evidence
    model = bundled.searcher().model
    generic = replace(ev, template_words=ev.template_words / 3)  # most words masked away
    shared = replace(ev, template_share=math.log(8))  # the same line quoted by eight articles
    assert model.probability(generic) <= model.probability(ev)
    assert model.probability(shared) <= model.probability(ev)


def test_a_paste_that_holds_the_articles_subject_is_more_convincing_than_a_look_alike(bundled):
    """An article's title states its error and cause. The paste of that error holds most of it; a look-alike
    (the same message shape, another cause) holds a part, and the reason says what the paste lacks."""
    paste = "ValueError: Must flatten tensors with uniform requires_grad when use_orig_params=False"
    right = bundled.search(paste).results[0]
    assert right.article_id == "fsdp-uniform-requires-grad"
    look_alike = bundled.search(paste, exclude=frozenset({"fsdp-uniform-requires-grad"}))
    other = look_alike.results[0]
    assert other.evidence.title_recall < right.evidence.title_recall / 2
    model = bundled.searcher().model
    ev = right.evidence
    assert model.probability(replace(ev, title_recall=other.evidence.title_recall)) < model.probability(ev)
    assert right.confidence > other.confidence


def test_a_reason_can_name_what_the_closest_article_is_about_that_the_paste_is_not(bundled):
    question = "Inference server crashes with out of memory right after loading, what should I lower?"
    searcher = bundled.searcher()
    c = searcher.gather(question)
    top = searcher.rank(c, searcher.weights)[0][1]
    missing = searcher.context(c, top, None).title_missing
    assert missing and all(len(w) > 1 and w not in question.lower() for w in missing)
    assert _DOUBTS["title_recall"](None, Context(title_missing=missing)).startswith("the closest article is about")



def test_a_reason_never_says_the_paste_lacks_a_word_it_holds(bundled):
    """The title's words are looked for in the lines the signature kept; the user's code around the error may
    hold them. A reason claiming the paste does not mention `max_seq_length` when the paste sets it is false.
    Nor does it list a Chinese title's words for an English paste: that tells the user nothing."""
    paste = ("TypeError: SFTTrainer.__init__() got an unexpected keyword argument 'dataset_text_field'\n\n"
             "trainer = SFTTrainer(\n    model=model,\n    train_dataset=dataset,\n"
             "    dataset_text_field='text',\n    max_seq_length=max_seq_length,\n    packing=False,\n)\n")
    searcher = bundled.searcher()
    c = searcher.gather(paste)
    for _, ai in searcher.rank(c, searcher.weights)[:5]:
        missing = searcher.context(c, ai, None).title_missing
        assert not [w for w in missing if w in paste.lower() or any("\u4e00" <= ch <= "\u9fff" for ch in w)], missing


# Floors for the bundled corpus and dev eval with the hash encoder; confidence figures out of fold.
# Raise them when the system gets better; a change that falls below one is a regression.
R_AT_1_FLOOR = {"cross": 0.93, "short_en": 0.98, "traceback": 0.92, "zh": 0.96}
TRUST_FLOOR = {"none_not_confident": 0.98, "lao_not_confident": 0.80, "precision_confident": 0.97,
               "right_top1_confident": 0.90}
"""The trust issue's goals. The hash encoder meets them all since the answer cut keeps the goal's share of right
answers confident (kb/calibrate.py, RIGHT_CONFIDENT_GOAL; 2026-11-28): right-confident 0.905 (deals 0.898-0.910),
leave-article-out 0.863, precision 0.987; R@1 cross 0.964, short_en 1.000, traceback 0.942, zh 0.974. Before, by
cost alone, right-confident was under the goal (0.826 in the end) and this floor stood just under it."""


def test_eval_floors_per_kind(bundled):
    queries = evaluate.load_queries(REPO / "corpus/eval/queries.jsonl")
    report = evaluate.run(queries, lambda q, k, exclude=frozenset(): bundled.search(q, top_k=k, exclude=exclude))
    got = {k.kind: k.recall_at_1 for k in report.per_kind if k.recall_at_1 is not None}
    for kind, floor in R_AT_1_FLOOR.items():
        assert got[kind] >= floor, (kind, got[kind])
    for name, floor in TRUST_FLOOR.items():
        assert report.confidence[name] >= floor, (name, report.confidence[name])


def test_a_question_about_something_else_entirely_is_never_an_answer(kb):
    """The fixture corpus is five articles: the only 'evidence' for a cake recipe is a faint embedding similarity."""
    for q in ["how do I bake a chocolate cake for my grandmother", "我家的猫不吃饭怎么办",
              "panic: runtime error: index out of range [3] with length 3\n\ngoroutine 1 [running]:\nmain.main()"]:
        resp = kb.search(q)
        assert resp.verdict != "answer", (q, resp.reason)
        assert resp.reason


NOISY_TAIL = """[rank1]: Traceback (most recent call last):
[rank1]:   File "/home/ana/train_fsdp.py", line 88, in <module>
[rank1]:     model = accelerator.prepare(model)
[rank1]:   File "/opt/conda/lib/python3.11/site-packages/torch/distributed/fsdp/_flat_param.py", line 757, in _validate_tensors_to_flatten
[rank1]:     raise ValueError(
[rank1]: ValueError: Must flatten tensors with uniform dtype but got torch.bfloat16 and torch.float32
W1118 15:20:09.114000 3012 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 3045 closing signal SIGTERM
W1118 15:20:09.115000 3012 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 3046 closing signal SIGTERM
E1118 15:20:10.310000 3012 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: 1) local_rank: 1 (pid: 3044) of binary: /home/ana/.venv/bin/python
Traceback (most recent call last):
  File "/home/ana/.venv/bin/accelerate", line 8, in <module>
    sys.exit(main())
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train_fsdp.py FAILED
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2025-11-18_15:20:09
  host      : gpu-node-2
  rank      : 1 (local_rank: 1)
  exitcode  : 1 (pid: 3044)
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
"""


def test_the_real_error_wins_over_a_long_tail_of_launcher_noise_and_is_the_matched_line(bundled):
    top = bundled.search(NOISY_TAIL).results[0]
    assert top.article_id == "fsdp-uniform-dtype-bf16-fp32"
    assert top.matched_error and "Must flatten tensors with uniform dtype" in top.matched_error


def test_slurm_reports_around_the_error_are_noise_not_the_signature(bundled):
    """`srun` and `slurmstepd` print that tasks exited or were cancelled after any failure of a job: with the
    real error in the paste they are neither its lines nor what a result's matched line may show."""
    paste = ("srun: job 551902 queued and waiting for resources\n"
             "srun: job 551902 has been allocated resources\n"
             "[rank9]: RuntimeError: CUDA error: invalid device ordinal\n"
             "srun: error: r2n7: tasks 8-15: Exited with exit code 1\n"
             "srun: Terminating StepId=551902.0\n"
             "slurmstepd: error: *** STEP 551902.0 ON r2n6 CANCELLED AT 2024-10-30T12:01:44 ***\n"
             "srun: error: r2n6: tasks 0-7: Terminated\n")
    resp = bundled.search(paste)
    assert resp.signature["lines"] == ["RuntimeError: CUDA error: invalid device ordinal"]
    top = resp.results[0]
    assert top.article_id == "cuda-invalid-device-ordinal-visible-devices"
    assert "srun" not in (top.matched_error or "") and "slurmstepd" not in (top.matched_error or "")
    # a paste that holds nothing but Slurm's report keeps it: then it is all there is to search
    assert bundled.search("srun: error: gpu20-15: task 0: Terminated").signature["lines"]


def test_a_docker_build_failure_is_read_as_the_error_inside_the_failed_step(bundled):
    """BuildKit closes a failed `RUN` with `ERROR: failed to solve: process "/bin/sh -c …" did not complete
    successfully` (and opens it with `=> ERROR [5/8] RUN …`): they say which step failed, not why."""
    paste = ("""=> ERROR [5/8] RUN pip install flash-attn --no-build-isolation                48.3s\n"""
             "------\n > [5/8] RUN pip install flash-attn --no-build-isolation:\n"
             "#9 7.110       RuntimeError: flash_attn was requested, but nvcc was not found.  Are you sure your "
             "environment has nvcc available?\n"
             "#9 7.112 error: metadata-generation-failed\n------\n"
             """ERROR: failed to solve: process "/bin/sh -c pip install flash-attn --no-build-isolation" did not """
             "complete successfully: exit code: 1\n")
    resp = bundled.search(paste)
    assert not [line for line in resp.signature["lines"] if "failed to solve" in line or "=> ERROR" in line]
    assert resp.results[0].article_id == "fa-build-cuda-home-nvcc-missing"


def test_real_pastes_from_public_issues(bundled):
    """859 pastes copied from public issue threads, forums and blogs (corpus/eval/real_pastes.jsonl, sources
    inside), labelled by reading the articles; 328 have no article. The shipped verdicts, as a user gets them:
    the right article first, confident answers right, and an uncovered paste hardly ever answered."""
    queries = evaluate.load_queries(REPO / "corpus/eval/real_pastes.jsonl")
    covered = [q for q in queries if q.relevant]
    uncovered = [q for q in queries if not q.relevant]
    top1 = confident_right = 0
    confident_wrong = []
    for q in covered:
        resp = bundled.search(q.query)
        right = resp.results[0].article_id in q.relevant
        top1 += right
        confident_right += resp.confident and right
        if resp.confident and not right:
            confident_wrong.append(q.qid)
    assert top1 / len(covered) >= 0.80, top1
    assert len(confident_wrong) / (confident_right + len(confident_wrong)) <= 0.05, confident_wrong
    answered = [q.qid for q in uncovered if bundled.search(q.query).confident]
    assert len(answered) <= len(uncovered) // 10, answered


def test_questions_in_words_that_no_article_answers_are_hardly_ever_answered(bundled):
    """60 questions no article answers (corpus/eval/none_questions.jsonl: learning rates, ZeRO-2 against ZeRO-3,
    vLLM sampling, export to ONNX): the dev set's uncovered queries are mostly pastes, so a question that only
    shares the corpus's words is the blind spot to guard."""
    queries = evaluate.load_queries(REPO / "corpus/eval/none_questions.jsonl")
    answered = [q.qid for q in queries if bundled.search(q.query).confident]
    assert len(answered) <= len(queries) // 10, answered


def test_an_error_the_signature_cannot_read_is_still_searched(bundled):
    """A blog's Chinese prose over a transformers notice with no error word, its list wrapped over lines: no
    line reads as an error, so the whole paste is the query, not only the user's words."""
    resp = bundled.search(
        "结果跑起来,控制台哗啦啦打出一堆信息,里面夹着这么一段,看着挺吓人:\n\n"
        "Some weights of the model checkpoint at D:\\Transformers\\bert-base-uncased_L-12_H-768_A-12 were not used "
        "when initializing BertModel:    \n['cls.predictions.transform.dense.bias', 'cls.predictions.decoder.weight',  \n"
        " 'cls.predictions.bias']  \n    - This IS expected if you are initializing BertModel from the checkpoint of a "
        "model trained on another task or with another architecture.")
    assert resp.results[0].article_id == "hf-weights-not-initialized"


def test_a_reason_names_the_errors_missing_words_not_the_users_pleasantries(bundled):
    """Technical articles rarely say `thanks` or `appreciate`, so those are among a paste's rarest words; a reason
    that the article "lacks the paste's distinctive words `thanks`" would tell the user nothing."""
    searcher = bundled.searcher()
    c = searcher.gather("Hello, thanks a lot, I really appreciate any pointers, kindly advise\n"
                        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
                        "capacity of 23.65 GiB of which 1.03 GiB is free.")
    top = searcher.rank(c, searcher.weights)[0][1]
    missing = searcher.context(c, top, None).rare_missing
    assert not {"thanks", "appreciate", "kindly", "pointers", "hello"} & set(missing), missing
    # with no error line at all, only the paste's identifiers may be named
    c = searcher.gather("However, after removing --use_compile and updating precision to 16-mixed in train_t5.py, "
                        "the loss is weird")
    missing = searcher.context(c, searcher.rank(c, searcher.weights)[0][1], None).rare_missing
    assert not {"however", "removing", "updating", "weird"} & set(missing), missing


def test_a_reason_names_the_error_lines_unknown_words_not_a_link(bundled):
    """A pip typo pasted under the notebook's link: the word no article knows is the typo in the error line, not
    the link or the user's `am` before it."""
    searcher = bundled.searcher()
    c = searcher.gather(
        "I am trying to run the colab notebook - https://colab.research.google.com/drive/1qOjXfQIAULfKvZqwCen8-MoWKGdSatZ4\n"
        "but getting following error\n\n```\nLooking in indexes: https://pypi.org/simple\n"
        "ERROR: Could not find a version that satisfies the requirement bitsandbyte (from versions: none)\n"
        "ERROR: No matching distribution found for bitsandbyte\n```")
    unknown = searcher.context(c, searcher.rank(c, searcher.weights)[0][1], None).unknown_words
    assert "bitsandbyte" in unknown and not any("colab" in w or "pypi" in w for w in unknown), unknown
    # a question in words with no error line: its own unknown words, still never its link
    c = searcher.gather("I am trying the notebook at https://colab.research.google.com/drive/1qOjXf and it hangs")
    unknown = searcher.context(c, searcher.rank(c, searcher.weights)[0][1], None).unknown_words
    assert not any("colab" in w for w in unknown), unknown


def test_an_import_error_of_another_name_from_another_package_is_not_the_articles_line(bundled):
    """`ImportError: cannot import name 'X' from 'Y'` lines share five words whatever X and Y are; the two names
    are what tell them apart. Counted as words, jinja2's import error matched the AutoAWQ article's
    `PytorchGELUTanh` line at 0.62; weighted by IDF, it does not match it at all, while the article's own line
    still does."""
    paste = "ImportError: cannot import name 'escape' from 'jinja2' (/srv/app/.venv/lib/python3.10/site-packages/jinja2/__init__.py)"
    resp = bundled.search(paste, top_k=10)
    awq = next(r for r in resp.results if r.article_id == "quant-autoawq-version")
    assert awq.evidence.template == 0.0
    assert resp.verdict != "answer"
    own = bundled.search("ImportError: cannot import name 'PytorchGELUTanh' from 'transformers.activations'").results[0]
    assert own.article_id == "quant-autoawq-version" and own.evidence.template >= 0.8


def test_the_dense_model_reads_the_error_line_after_a_long_story(bundled):
    """The dense model reads a short window of the query. A long story before the error (the environment, what
    the user tried) must not push out of it the one line that names the failure."""
    story = ("之前在4张A100-40G上部署Qwen-72B-Chat一直是成功的，最近重装了环境，各种库都下载的最新版。"
             "不用推理引擎、直接用四张卡推理是成功的，换成引擎部署就不行了。重启机器、换驱动、重新下载权重都没有用。"
             "Our admin says nothing else runs on these cards. Another node with the same image fails the same way, "
             "and the same config worked last month, before we rebuilt the container image with newer libraries. ") * 2
    error = "ValueError: No available memory for the cache blocks."
    searcher = bundled.searcher()
    read: list[str] = []
    encode = searcher.encoder.encode
    searcher.encoder.encode = lambda texts, **kw: read.extend(texts) or encode(texts, **kw)
    try:
        searcher.gather(story + "\n" + error, always_dense=True)
    finally:
        del searcher.encoder.encode
    assert read and error in read[0] and story[:40] in read[0]
